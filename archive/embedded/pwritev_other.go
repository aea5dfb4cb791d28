//go:build !linux

package embedded

import "os"

// writeVec writes bufs to f at off, in order, one WriteAt per buffer.
func writeVec(f *os.File, bufs [][]byte, off int64) error {
	for _, b := range bufs {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}

// reserve does nothing outside Linux: writes allocate as they go.
func reserve(*os.File, int64, int64) {}
