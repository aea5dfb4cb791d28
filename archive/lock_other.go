//go:build !unix

package archive

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir creates dir/LOCK; without flock(2) it does not exclude a second
// Open.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return f, nil
}
