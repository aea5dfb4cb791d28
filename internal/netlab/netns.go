package netlab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// run runs a command (ip, tc, iptables-restore, mount) in the machine's
// own network namespace, with stdin, and returns its error with its output.
func run(stdin string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// nsRun runs a command inside namespace ns (ip netns exec).
func nsRun(ns, stdin string, name string, args ...string) error {
	return run(stdin, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// inNS runs f on an OS thread that has joined namespace ns, so that
// sockets f creates and /proc/sys/net files it opens belong to ns. The
// thread goes back to its own namespace afterwards; if it cannot, it stays
// locked and ends with the goroutine, so no other goroutine runs in ns.
func inNS(ns string, f func() error) error {
	target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", ns, err)
	}
	defer unix.Close(target)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open own namespace: %w", err)
			return // the thread ends locked
		}
		defer unix.Close(self)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("join namespace %s: %w", ns, err)
			return
		}
		ferr := f()
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// dialIn dials addr over TCP from inside namespace ns. Only the socket's
// creation needs the namespace; the connect runs on the poller as usual.
func dialIn(ctx context.Context, ns, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNS(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// writeSysctl sets a /proc/sys/net value inside namespace ns, key
// written with slashes (net/ipv4/ip_forward).
func writeSysctl(ns, key, value string) error {
	return inNS(ns, func() error {
		return os.WriteFile("/proc/sys/"+key, []byte(value), 0)
	})
}
