//go:build !unix

// Package dirlock keeps a directory for one process at a time.
package dirlock

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrLocked is returned when another holder has the directory.
var ErrLocked = errors.New("directory in use")

// Lock creates dir/LOCK; without flock(2) it does not exclude a second
// holder.
func Lock(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
}
