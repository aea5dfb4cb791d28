//go:build unix

// Package dirlock keeps a directory for one process at a time.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned when another holder has the directory.
var ErrLocked = errors.New("directory in use")

// Lock takes an exclusive flock(2) on dir/LOCK, creating the file, so that
// a second Lock of the same directory, in this process or another, fails
// with ErrLocked. Closing the returned file releases the lock; the kernel
// releases it when the process dies.
func Lock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}
