//go:build unix

package stopsignal

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestContextTakesEarlySignal: a SIGTERM that comes before Context is
// called ends the context Context returns, and does not end the process.
func TestContextTakesEarlySignal(t *testing.T) {
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the signal is caught before Context
	ctx, stop := Context()
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end after SIGTERM")
	}
}

// TestContextStop: stop ends the context, with no signal.
func TestContextStop(t *testing.T) {
	ctx, stop := Context()
	if ctx.Err() != nil {
		t.Fatalf("context ended before any signal: %v", ctx.Err())
	}
	stop()
	<-ctx.Done()
}

// childEnv names the variable that makes the test binary, run again by
// TestRelease, act as the child process of that test.
const childEnv = "STOPSIGNAL_TEST_CHILD"

// TestRelease: in a process that caught SIGTERM and then calls Release,
// the signal takes its default action (the process dies of it); with no
// signal caught, Release lets the process go on.
func TestRelease(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(50 * time.Millisecond)
		Release()
		time.Sleep(5 * time.Second)
		os.Exit(3)
	case "none":
		Release()
		os.Exit(4)
	}
	for _, tc := range []struct {
		mode string
		want func(*os.ProcessState) bool
		what string
	}{
		{"signal", func(st *os.ProcessState) bool {
			ws, ok := st.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
		}, "killed by SIGTERM"},
		{"none", func(st *os.ProcessState) bool { return st.Exited() && st.ExitCode() == 4 }, "exit code 4"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRelease$")
		cmd.Env = append(os.Environ(), childEnv+"="+tc.mode)
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if !tc.want(cmd.ProcessState) {
			t.Errorf("%s: child ended with %v, want %s", tc.mode, cmd.ProcessState, tc.what)
		}
	}
}
