package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenIn listens on addr inside host h's namespace and echoes a
// greeting, then copies everything it reads to io.Discard.
func listenIn(t *testing.T, h *Host, addr string) net.Listener {
	t.Helper()
	ln := h.Listen(addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("hi\n"))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln
}

// connectTime dials from a to addr and reads the greeting: one round trip
// for the handshake and one for the greeting's ACK path, so about 2 x RTT
// less the greeting's send.
func connectTime(a *Host, addr string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	c, err := a.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	took := time.Since(start)
	c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil {
		return 0, err
	}
	return took, nil
}

func TestLabLinks(t *testing.T) {
	l := New(t, Config{Name: "links"})
	a, b := l.AddHost("a"), l.AddHost("b")
	lan := l.Segment()
	c, d := lan.AddHost("c"), lan.AddHost("d")
	if !strings.HasPrefix(a.IP.String(), "10.77.1.") || !strings.HasPrefix(c.IP.String(), "10.77.3.") || c.seg != d.seg {
		t.Fatalf("addresses: a %s c %s d %s", a.IP, c.IP, d.IP)
	}
	lnB := listenIn(t, b, b.IP.String()+":7000")
	lnD := listenIn(t, d, d.IP.String()+":7000")

	// No delay: a connect takes well under a millisecond or two.
	rtt, err := connectTime(a, lnB.Addr().String(), 2*time.Second)
	if err != nil || rtt > 50*time.Millisecond {
		t.Fatalf("perfect link a-b: connect %v, %v", rtt, err)
	}
	// 60 ms each way: the handshake's SYN and SYN-ACK take 120 ms.
	l.SetLink(a, b, LinkSpec{Delay: 60 * time.Millisecond})
	rtt, err = connectTime(a, lnB.Addr().String(), 2*time.Second)
	if err != nil || rtt < 115*time.Millisecond || rtt > 200*time.Millisecond {
		t.Fatalf("60 ms link a-b: connect %v, %v (want about 120 ms)", rtt, err)
	}
	if st := l.HopStats(); st.Delayed < 2 || st.Forwarded < st.Delayed {
		t.Errorf("hop stats %+v: want the handshake's packets delayed and forwarded", st)
	}
	// The LAN is not routed: c-d has no delay even with a default delay set.
	rtt, err = connectTime(c, lnD.Addr().String(), 2*time.Second)
	if err != nil || rtt > 50*time.Millisecond {
		t.Fatalf("LAN c-d: connect %v, %v", rtt, err)
	}

	// Loss 1: nothing arrives; the dial times out.
	l.SetLink(c, d, LinkSpec{Loss: 1})
	if _, err := connectTime(c, lnD.Addr().String(), 500*time.Millisecond); err == nil {
		t.Fatal("link c-d with loss 1 carried a connection")
	}
	l.SetLink(c, d, LinkSpec{})
	if _, err := connectTime(c, lnD.Addr().String(), 2*time.Second); err != nil {
		t.Fatalf("link c-d after loss 0: %v", err)
	}

	// Partition {a, c} | {b, d}: a reaches c, not b.
	lnC := listenIn(t, c, c.IP.String()+":7000")
	l.Partition([]*Host{a, c}, []*Host{b, d})
	if _, err := connectTime(a, lnB.Addr().String(), 500*time.Millisecond); err == nil {
		t.Fatal("a reached b across the partition")
	}
	if _, err := connectTime(a, lnC.Addr().String(), 2*time.Second); err != nil {
		t.Fatalf("a to c within its side: %v", err)
	}
	l.Heal()
	if _, err := connectTime(a, lnB.Addr().String(), 2*time.Second); err != nil {
		t.Fatalf("a to b after heal: %v", err)
	}

	// No address outside the lab is routed from a host.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := a.DialContext(ctx, "tcp", "192.0.2.1:80"); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("dial outside the lab: %v, want network unreachable", err)
	}
}

func TestLabRate(t *testing.T) {
	l := New(t, Config{Name: "rate"})
	lan := l.Segment()
	a, b := lan.AddHost("a"), lan.AddHost("b")
	ln := listenIn(t, b, b.IP.String()+":7000")
	l.SetRate(a, 8_000_000) // 1 MB/s
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := a.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 2 << 20
	start := time.Now()
	if _, err := conn.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, conn) // the greeting, then EOF once b has read everything
	took := time.Since(start)
	// 2 MiB at 1 MB/s: about 2.1 s (the socket buffers hide a little).
	if took < 1500*time.Millisecond || took > 4*time.Second {
		t.Errorf("2 MiB over 8 Mbit/s took %v, want about 2.1 s", took)
	}
	l.SetRate(a, 0)
}

func TestLabProcessAndDisk(t *testing.T) {
	l := New(t, Config{Name: "proc"})
	h := l.AddHost("a")
	p := h.Start("sleeper", "sleep", nil, "60")
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if f := strings.Fields(string(st)); len(f) < 3 || f[2] != "T" {
		t.Errorf("paused process state %q, want T", st)
	}
	p.Resume()
	if err := p.Kill9(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil || p.Exited() {
		t.Fatalf("restart: %v", err)
	}
	ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p.Pid()))
	own, _ := os.Readlink("/proc/self/ns/net")
	if ns == own || ns == "" {
		t.Errorf("process namespace %q, the test's %q", ns, own)
	}

	d := l.Disk("a", 4<<20)
	if _, err := d.Fill(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "x"), make([]byte, 64<<10), 0o644); err == nil {
		t.Error("write to a full disk succeeded")
	}
	if err := d.Free(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "x"), make([]byte, 64<<10), 0o644); err != nil {
		t.Errorf("write after Free: %v", err)
	}
	if err := d.ReadOnly(true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "y"), []byte("y"), 0o644); err == nil {
		t.Error("write to a read-only disk succeeded")
	}
	if err := d.ReadOnly(false); err != nil {
		t.Fatal(err)
	}
}

// TestSweep: a namespace and a disk named for a process that no longer
// runs are removed; one of a live process is kept.
func TestSweep(t *testing.T) {
	Require(t)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	stale := fmt.Sprintf("%s%d-old-a", Prefix, dead)
	liveNS := fmt.Sprintf("%s%d-live-a", Prefix, os.Getppid())
	for _, ns := range []string{stale, liveNS} {
		if err := run("", "ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { run("", "ip", "netns", "del", liveNS); run("", "ip", "netns", "del", stale) })
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-old-disk-", Prefix, dead))
	if err != nil {
		t.Fatal(err)
	}
	if err := run("", "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir); err != nil {
		t.Fatal(err)
	}
	n, err := sweep()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale namespace %s kept (%v)", stale, err)
	}
	if _, err := os.Stat("/run/netns/" + liveNS); err != nil {
		t.Errorf("live namespace %s removed: %v", liveNS, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale disk %s kept (%v)", dir, err)
	}
	if n < 2 {
		t.Errorf("sweep removed %d, want at least 2", n)
	}
}

// TestForward: a process on a host reaches a server of the test process
// on the host's own loopback through Forward, in both directions with
// half-closes, while the host still has no route out; a target that is
// not a loopback address is refused.
func TestForward(t *testing.T) {
	l := New(t, Config{Name: "fwd"})
	a := l.AddHost("a")
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close
				fmt.Fprintf(c, "got %d bytes: %s", len(b), b)
			}()
		}
	}()
	addr := a.Forward("127.0.0.1:8540", srv.Addr().String())
	if addr != "127.0.0.1:8540" {
		t.Fatalf("Forward served %s", addr)
	}
	for i := range 3 { // one connection after another
		// A process on a: curl would be the natural client, but a dial
		// from a's namespace is the same socket.
		c, err := a.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "hello %d", i)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if want := fmt.Sprintf("got 7 bytes: hello %d", i); err != nil || string(b) != want {
			t.Fatalf("through the forward: %q, %v; want %q", b, err, want)
		}
	}
	// The test's server is not reachable from a at its own address: a's
	// loopback is a's, and a has no route out of the lab.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := a.DialContext(ctx, "tcp", srv.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("a reached %s without the forward", srv.Addr())
	}

	// Only loopback targets.
	for target, ok := range map[string]bool{"127.0.0.1:8545": true, "[::1]:80": true, "10.77.1.2:80": false,
		"192.0.2.1:80": false, "localhost:80": false, "127.0.0.1": false} {
		if err := forwardTarget(target); (err == nil) != ok {
			t.Errorf("forwardTarget(%q) = %v", target, err)
		}
	}
}
