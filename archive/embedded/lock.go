package embedded

import (
	"errors"
	"fmt"
	"os"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/dirlock"
)

// lockDir keeps dir for this archive: a second Open of the same directory,
// in this process or another, fails with archive.ErrLocked.
func lockDir(dir string) (*os.File, error) {
	f, err := dirlock.Lock(dir)
	if errors.Is(err, dirlock.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", archive.ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return f, nil
}
