package embedded

import (
	"os"

	"golang.org/x/sys/unix"
)

// maxIovecs is how many buffers one pwritev call takes (IOV_MAX on Linux).
const maxIovecs = 1024

// writeVec writes bufs to f at off with pwritev(2), in order and without
// copying them, retrying short writes.
func writeVec(f *os.File, bufs [][]byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(bufs) > 0 {
		chunk := bufs
		if len(chunk) > maxIovecs {
			chunk = chunk[:maxIovecs]
		}
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			for {
				n, werr = unix.Pwritev(int(fd), chunk, off)
				if werr != unix.EINTR {
					return true
				}
			}
		}); err != nil {
			return err
		}
		if werr != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: unix.EIO}
		}
		off += int64(n)
		// Drop what was written, keeping the caller's slice intact.
		for n > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
				continue
			}
			rest := append([][]byte{bufs[0][n:]}, bufs[1:]...)
			bufs, n = rest, 0
		}
	}
	return nil
}

// reserve asks the file system for the blocks of f from off to end
// (fallocate(2) with FALLOC_FL_KEEP_SIZE: the file's size, and so what
// recovery and retention see, does not change). A write into reserved
// blocks skips the delayed allocation of each page it touches, which was
// about a fifth of the writer's CPU for a segment write. It is a hint: a
// file system without fallocate, or too little free space, leaves the
// writes to allocate as they go.
func reserve(f *os.File, off, end int64) {
	if end <= off {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, end-off) == unix.EINTR {
		}
	})
}
