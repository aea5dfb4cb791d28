//go:build unix

package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// testE2EStopAtOnce: a SIGTERM that comes in the first milliseconds of the
// Go runtime (the moment it catches signals at all, read from
// /proc/<pid>/status, plus 10, 20 or 40 ms: while the packages'
// initialisers run, before main) is a clean stop with exit code 0, as one
// later is, and leaves an archive that opens, if it made one.
func testE2EStopAtOnce(t *testing.T, bin string) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no /proc to tell when the process catches signals: %v", err)
		}
		t.Skipf("no /proc to tell when the process catches signals: %v", err)
	}
	for _, d := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		dir := t.TempDir()
		p := startProc(t, fmt.Sprintf("stopped %v after start", d), bin, "--listen-address=127.0.0.1", "--tcp-port=0",
			"--store=true", "--data-dir="+dir)
		waitCatching(t, p, syscall.SIGTERM)
		time.Sleep(d)
		took := p.stop(t)
		if p.out.count("stopped") != 1 {
			t.Fatalf("%s: stdout does not say stopped:\n%s", p.name, p.out)
		}
		if _, err := os.Stat(filepath.Join(dir, "archive")); err == nil {
			a, err := embedded.Open(filepath.Join(dir, "archive"), archive.Config{Logger: slog.New(slog.DiscardHandler)}, embedded.Options{})
			if err != nil {
				t.Fatalf("%s: the archive after the stop: %v", p.name, err)
			}
			a.Close()
		}
		stage := "after start"
		switch {
		case p.out.count("stopped before start") == 1:
			stage = "before the node was built"
		case p.out.count("stopping during start-up") == 1:
			stage = "during start-up"
		}
		t.Logf("%s: exit 0 %v after SIGTERM, stopped %s", p.name, took.Round(time.Millisecond), stage)
	}
}

// waitCatching waits until p's process catches sig (SigCgt in
// /proc/<pid>/status): the Go runtime catches every signal from its first
// steps, before any package initialiser runs.
func waitCatching(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil || p.exited() {
			t.Fatalf("%s: %v (exited: %v)", p.name, err, p.exited())
		}
		for _, line := range strings.Split(string(b), "\n") {
			if hex, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				if mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64); err == nil && mask&(1<<(sig-1)) != 0 {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not catch %v after 10 s", p.name, sig)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
