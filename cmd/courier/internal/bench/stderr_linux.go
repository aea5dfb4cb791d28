package bench

import (
	"os"

	"golang.org/x/sys/unix"
)

// withoutStderr runs f with the process's standard error (file
// descriptor 2) pointed at /dev/null, and puts it back after. It is for
// runtime/pprof's start, where the runtime writes a note straight to
// descriptor 2 when a CPU profile rate set before it stays ("cannot set
// cpu profile rate until previous profile has finished"): the budget sets
// its rate that way on purpose. Nothing else of the bench writes to
// standard error while f runs. If the descriptor cannot be moved, f runs
// with standard error as it is.
func withoutStderr(f func() error) error {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return f()
	}
	defer null.Close()
	saved, err := unix.Dup(2)
	if err != nil {
		return f()
	}
	defer unix.Close(saved)
	if err := unix.Dup3(int(null.Fd()), 2, 0); err != nil {
		return f()
	}
	defer unix.Dup3(saved, 2, 0)
	return f()
}
