package netlab

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// MaxForwardConns bounds the connections one Forward carries at once; a
// further client waits in the listen backlog until one ends.
const MaxForwardConns = 64

// forwardDialTimeout bounds the test process's dial of a Forward's target.
const forwardDialTimeout = 5 * time.Second

// Listen listens on TCP address addr (host:port; port 0 picks one) inside
// h's namespace, so that a process on h reaches it at that address, on
// h's loopback (127.0.0.1) or its lab address. The listener is the test
// process's; it is closed when the test ends. It fails the test on error.
func (h *Host) Listen(addr string) net.Listener {
	l := h.lab
	l.tb.Helper()
	var ln net.Listener
	if err := inNS(h.NS, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		l.tb.Fatalf("netlab: listen on %s in %s: %v", addr, h.Name, err)
	}
	l.tb.Cleanup(func() { ln.Close() })
	return ln
}

// Forward serves addr, a TCP address inside h's namespace (127.0.0.1:port
// for the host's own loopback, as a node's flags would name a service),
// and joins each connection to a new connection the test process dials to
// target, a loopback address (host:port) of the test process's own
// namespace: a server the test runs, such as a chain's JSON-RPC endpoint.
// A process on h then reaches the test's server without any address
// outside the lab: h keeps no route out, and only the test process dials
// target. A target that is not a loopback address fails the test, as
// does a listen error. It returns the address served.
//
// Bytes are copied as they come, each direction half-closed when its
// sender is done; a connection whose target cannot be dialled within 5 s
// is closed. At most MaxForwardConns connections are carried at once.
// The listener and every connection are closed when the test ends.
func (h *Host) Forward(addr, target string) string {
	l := h.lab
	l.tb.Helper()
	if err := forwardTarget(target); err != nil {
		l.tb.Fatalf("netlab: %v", err)
	}
	f := &forwarder{ln: h.Listen(addr), target: target, conns: map[net.Conn]bool{}, slots: make(chan struct{}, MaxForwardConns)}
	f.wg.Add(1)
	go f.serve()
	l.tb.Cleanup(f.close)
	return f.ln.Addr().String()
}

// forwardTarget checks a Forward's target: an IP loopback host:port.
func forwardTarget(target string) error {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("forward to %q: not a loopback IP:port; a lab forwards only to the test process's own servers", target)
	}
	return nil
}

// forwarder is one Forward: its listener and the connections it carries.
type forwarder struct {
	ln     net.Listener
	target string
	slots  chan struct{} // one per connection carried
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]bool // both ends of every connection carried
	closed bool
}

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		f.slots <- struct{}{}
		c, err := f.ln.Accept()
		if err != nil {
			<-f.slots
			return // closed
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { <-f.slots }()
			f.carry(c)
		}()
	}
}

// carry joins client c to a new connection to the target until both
// directions are done.
func (f *forwarder) carry(c net.Conn) {
	if !f.track(c) {
		c.Close()
		return
	}
	defer f.untrack(c)
	u, err := net.DialTimeout("tcp", f.target, forwardDialTimeout)
	if err != nil {
		return
	}
	if !f.track(u) {
		u.Close()
		return
	}
	defer f.untrack(u)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(u, c) }()
	go func() { defer wg.Done(); pipe(c, u) }()
	wg.Wait()
}

// pipe copies from src to dst, then passes src's end on: a half-close of
// dst's sending side when src ended cleanly, a close of dst otherwise
// (which ends the other direction too).
func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok && err == nil {
		tc.CloseWrite()
		return
	}
	dst.Close()
}

// track records c as carried; false once the forwarder is closed.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = true
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

// close closes the listener and every connection and waits for the
// goroutines.
func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
