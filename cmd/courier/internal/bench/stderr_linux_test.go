package bench

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProfilerStartWritesNoStderr: starting the budget's profile at its
// own rate leaves nothing on standard error (the runtime's note that the
// rate stayed is kept out), and standard error works again after.
func TestProfilerStartWritesNoStderr(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved, err := unix.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(int(f.Fd()), 2, 0); err != nil {
		t.Fatal(err)
	}
	var p cpuProfiler
	startErr := p.start()
	if startErr == nil {
		_, startErr = p.stop("test")
	}
	os.Stderr.WriteString("after\n")
	if err := unix.Dup3(saved, 2, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(saved)
	if startErr != nil {
		t.Fatal(startErr)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "after\n" {
		t.Fatalf("standard error during the profile's start and after: %q, want %q", got, "after\n")
	}
}
