//go:build linux

package libnet

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const emfileChildEnv = "LIBNET_TEST_EMFILE_CHILD"

// An accept that fails with "too many open files" is reported and retried:
// once descriptors are free again the waiting connection is accepted and
// served. The test lowers RLIMIT_NOFILE, so it runs in a child process.
func TestAcceptSurvivesTooManyOpenFiles(t *testing.T) {
	if os.Getenv(emfileChildEnv) == "1" {
		acceptUnderEMFILE(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard only
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAcceptSurvivesTooManyOpenFiles$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), emfileChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAcceptSurvivesTooManyOpenFiles") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func acceptUnderEMFILE(t *testing.T) {
	errs := make(chan error, 64)
	got := make(chan string, 2)
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw,
		Handler: func(h *Header, p []byte, _ Respond) { got <- h.Route + ":" + string(p) },
		OnError: func(err error) {
			select {
			case errs <- err:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = uint64(len(fds) + 16)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)

	// Use up every descriptor, then free one for the client's socket: the
	// kernel completes the handshake, and the listener's accept has no
	// descriptor left for it.
	var fill []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		fill = append(fill, f)
	}
	if len(fill) == 0 {
		t.Fatal("no descriptor to free")
	}
	fill[len(fill)-1].Close()
	fill = fill[:len(fill)-1]
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var ae *AcceptError
	for ae == nil {
		if err := recv(t, errs); errors.As(err, &ae) && !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("accept error %v, want EMFILE", err)
		}
	}
	for _, f := range fill {
		f.Close()
	}
	if _, err := c.Write(outer(container(2, 24, rawHdr(1, 0, 2), 2, []byte("hi"), 0, nil))); err != nil {
		t.Fatal(err)
	}
	if s := recv(t, got); s != ":hi" {
		t.Fatalf("handler got %q", s)
	}
	if n := b.Stats().AcceptErrors; n == 0 {
		t.Fatal("accept errors not counted")
	}
}
