package libnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds; the 30 s bound only keeps a broken
// build from hanging and is not a timing assertion.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv returns the next value from ch; the 30 s bound only keeps a broken
// build from hanging and is not a timing assertion.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("nothing received within 30 s")
	}
	var zero T
	return zero
}

// dialRaw opens a plain TCP connection to addr and writes b on it.
func dialRaw(t testing.TB, addr string, b []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if len(b) > 0 {
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// expectClosed reads c to its end and fails unless the endpoint closed it.
func expectClosed(t testing.TB, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard only
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("connection not closed by the endpoint: %v", err)
	}
}

func TestInboundIdle(t *testing.T) {
	for _, tc := range []struct{ idle, want time.Duration }{
		{-1, 0}, {0, 0}, {time.Minute, 2 * time.Minute}, {math.MaxInt64 / 2, math.MaxInt64 - 1},
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := inboundIdle(tc.idle); got != tc.want {
			t.Fatalf("inboundIdle(%d) = %d, want %d", tc.idle, got, tc.want)
		}
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// stallFrame announces a frame of 2 MiB and sends its first byte only.
func stallFrame() []byte { return append(binary.BigEndian.AppendUint32(nil, 2<<20), 0x01) }

func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// A peer that announces a 2 MiB frame and stalls after its first byte costs
// its connection's small buffer and 128 KiB of read buffers, not the
// announced length.
func TestStalledFrameReservesLittle(t *testing.T) {
	const n = 8
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before := heapAlloc()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dialRaw(t, b.Addr(), stallFrame())
	}
	perConn := int64(smallBuf + 2*readStep) // small buffer, buffered reader and one frame step
	waitFor(t, "stalled frames to be read", func() bool {
		s := b.Stats()
		return s.InboundConns == n && s.ReadBuffers == n*perConn
	})
	grown := heapAlloc() - before
	if limit := int64(n) * (smallBuf + 4*readStep); grown > limit { // 2 MiB each before the fix
		t.Fatalf("heap grew %d bytes for %d stalled frames, want at most %d", grown, n, limit)
	}
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "stalled connections to end", func() bool {
		s := b.Stats()
		return s.InboundConns == 0 && s.ReadBuffers == 0
	})
	if d := b.Stats().Drops[DropBadFrame]; d != n { // each frame was cut short
		t.Fatalf("truncated frames counted %d, want %d", d, n)
	}
}

// Stalled frames are closed after FrameTimeout and counted; the listener
// keeps serving a normal peer.
func TestFrameTimeoutClosesStalledPeers(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, FrameTimeout: 20 * time.Millisecond,
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stalls := [][]byte{
		stallFrame(), stallFrame(), stallFrame(),
		{0, 0}, // half an outer length
		append(outer(container(2, 24, rawHdr(1, 0, 0), 0, nil, 0, nil)), stallFrame()...), // a whole frame, then a stall
	}
	conns := make([]net.Conn, len(stalls))
	for i, s := range stalls {
		conns[i] = dialRaw(t, b.Addr(), s)
	}
	waitFor(t, "stalled frames to time out", func() bool {
		s := b.Stats()
		return s.Drops[DropFrameTimeout] == uint64(len(stalls)) && s.InboundConns == 0
	})
	for _, c := range conns {
		expectClosed(t, c)
	}
	s := b.Stats()
	if s.ReadBuffers != 0 || s.Drops[DropBadFrame] != 0 || s.IdleClosed != 0 {
		t.Fatalf("after timeouts: read buffers %d, bad frames %d, idle closed %d", s.ReadBuffers, s.Drops[DropBadFrame], s.IdleClosed)
	}
	mu.Lock()
	for _, err := range errs {
		var fe *FrameError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFrameTimeout) {
			t.Errorf("OnError got %v, want a *FrameError wrapping ErrFrameTimeout", err)
		}
	}
	mu.Unlock()

	// The listener still serves a normal peer.
	a, err := New(Config{Lane: LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b.Handle("echo", func(_ *Header, p []byte, respond Respond) { _ = respond(p) }, RouteOptions{})
	r, err := a.Ask(context.Background(), b.Addr(), Msg{Route: "echo", Payload: []byte("still here")})
	if err != nil || string(r.Payload) != "still here" {
		t.Fatalf("ask after timeouts: %q, %v", r.Payload, err)
	}
}

// An accepted connection on which no frame begins is closed after twice
// IdleTimeout and counted.
func TestIdleInboundClosed(t *testing.T) {
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, IdleTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conns := []net.Conn{dialRaw(t, b.Addr(), nil), dialRaw(t, b.Addr(), nil), dialRaw(t, b.Addr(), nil)}
	waitFor(t, "idle connections to close", func() bool {
		s := b.Stats()
		return s.IdleClosed == uint64(len(conns)) && s.InboundConns == 0
	})
	for _, c := range conns {
		expectClosed(t, c)
	}
	if s := b.Stats(); s.Drops != [dropReasons]uint64{} || s.ReadBuffers != 0 {
		t.Fatalf("idle closes counted as drops %v, read buffers %d", s.Drops, s.ReadBuffers)
	}
}

// Connections accepted beyond MaxInboundConns are closed at accept and
// counted; a freed slot serves a new peer.
func TestMaxInboundConns(t *testing.T) {
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, MaxInboundConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first := dialRaw(t, b.Addr(), nil)
	dialRaw(t, b.Addr(), nil)
	waitFor(t, "two inbound connections", func() bool { return b.Stats().InboundConns == 2 })
	over := dialRaw(t, b.Addr(), nil)
	expectClosed(t, over)
	waitFor(t, "the refused connection to be counted", func() bool { return b.Stats().RefusedConns == 1 })
	if s := b.Stats(); s.InboundConns != 2 {
		t.Fatalf("inbound %d after a refusal, want 2", s.InboundConns)
	}
	first.Close()
	waitFor(t, "a slot to free", func() bool { return b.Stats().InboundConns == 1 })
	got := make(chan string, 1)
	b.Handle("r", func(_ *Header, p []byte, _ Respond) { got <- string(p) }, RouteOptions{})
	a, err := New(Config{Lane: LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "r", Payload: []byte("in")}); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, got); p != "in" {
		t.Fatalf("handler got %q", p)
	}
	if s := b.Stats(); s.RefusedConns != 1 || s.InboundConns != 2 {
		t.Fatalf("refused %d inbound %d, want 1 and 2", s.RefusedConns, s.InboundConns)
	}
	if _, err := New(Config{MaxInboundConns: -1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("negative MaxInboundConns: %v", err)
	}
}

// Frames around the small buffer, read step and pool class sizes arrive
// whole, and the receiver holds only its connection's small buffer once the
// connection is quiet.
func TestLargeFramesRoundTrip(t *testing.T) {
	const limit = 3 << 20
	a, b := newPair(t, Config{Lane: LaneRaw, PayloadLimit: limit}, Config{PayloadLimit: limit})
	got := make(chan []byte, 1)
	b.Handle("big", func(_ *Header, p []byte, _ Respond) { got <- bytes.Clone(p) }, RouteOptions{})
	overhead := 4 + 18 + 24 + len("node-a") + len("big") - 4 // outer length excluded
	for _, size := range []int{0, 1, smallBuf - overhead - 4, smallBuf - overhead - 3, readStep - overhead, readStep - overhead + 1, 100_000,
		1<<17 - overhead, 1<<17 - overhead + 1, keepBuf - overhead, keepBuf - overhead + 1, limit} {
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(i*7 + size)
		}
		if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "big", Payload: p}); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if q := recv(t, got); !bytes.Equal(q, p) {
			t.Fatalf("%d bytes: payload differs (got %d bytes)", size, len(q))
		}
	}
	waitFor(t, "read buffers to be released", func() bool {
		s := b.Stats()
		return s.InboundConns == 1 && s.ReadBuffers == smallBuf
	})
}

// A message over the sender's PayloadLimit is refused before anything is
// written, on every call and lane, and for replies.
func TestSendOverPayloadLimitRefused(t *testing.T) {
	const limit = 1000
	ctx := context.Background()
	for _, lane := range []Lane{LaneRaw, LaneLegacy} {
		t.Run(lane.String(), func(t *testing.T) {
			a, b := newPair(t, Config{Lane: lane, PayloadLimit: limit}, Config{PayloadLimit: limit})
			var handled atomic.Int32
			b.Handle("r", func(*Header, []byte, Respond) { handled.Add(1) }, RouteOptions{})
			big := Msg{Route: "r", Payload: make([]byte, limit+1)}
			check := func(call string, err error) {
				t.Helper()
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "payload of 1001 bytes, PayloadLimit 1000") {
					t.Fatalf("%s: %v, want ErrTooLarge naming 1001 and 1000", call, err)
				}
			}
			check("Tell", a.Tell(ctx, b.Addr(), big))
			_, err := a.Ask(ctx, b.Addr(), big)
			check("Ask", err)
			for i, err := range a.MultiTell(ctx, []string{b.Addr(), b.Addr()}, big) {
				check("MultiTell "+string(rune('0'+i)), err)
			}
			for i, r := range a.MultiAsk(ctx, []string{b.Addr(), b.Addr()}, big) {
				check("MultiAsk "+string(rune('0'+i)), r.Err)
			}
			sa, sb := a.Stats(), b.Stats()
			if sa.Peers != 0 || sa.Sent.Msgs != 0 || sa.SendErrors != 0 || sa.PendingAsks != 0 || sa.ArmedTimers != 0 {
				t.Fatalf("sender: peers %d sent %d send errors %d pending %d timers %d",
					sa.Peers, sa.Sent.Msgs, sa.SendErrors, sa.PendingAsks, sa.ArmedTimers)
			}
			if sb.InboundConns != 0 || sb.Received.Msgs != 0 || sb.Drops != [dropReasons]uint64{} {
				t.Fatalf("receiver: inbound %d received %d drops %v", sb.InboundConns, sb.Received.Msgs, sb.Drops)
			}
			if lane == LaneLegacy { // base64 makes 900 bytes of payload over 1000 of data
				err := a.Tell(ctx, b.Addr(), Msg{Route: "r", Payload: make([]byte, 900)})
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "(payload 900), PayloadLimit 1000") {
					t.Fatalf("legacy data over the limit: %v", err)
				}
			}
			// At the limit the message goes through.
			fits := Msg{Route: "r", Payload: make([]byte, limit)}
			if lane == LaneLegacy {
				fits.Payload = fits.Payload[:500]
			}
			if err := a.Tell(ctx, b.Addr(), fits); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the tell that fits", func() bool { return handled.Load() == 1 })
		})
	}
}

// A reply over the responder's PayloadLimit is refused by Respond.
func TestRespondOverPayloadLimitRefused(t *testing.T) {
	for _, lane := range []Lane{LaneRaw, LaneLegacy} {
		t.Run(lane.String(), func(t *testing.T) {
			a, b := newPair(t, Config{Lane: lane}, Config{PayloadLimit: 1000})
			res := make(chan error, 1)
			b.Handle("r", func(_ *Header, _ []byte, respond Respond) { res <- respond(make([]byte, 1001)) }, RouteOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { _, err := a.Ask(ctx, b.Addr(), Msg{Route: "r"}); done <- err }()
			if err := recv(t, res); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("respond: %v, want ErrTooLarge", err)
			}
			cancel()
			if err := recv(t, done); !errors.Is(err, context.Canceled) {
				t.Fatalf("ask: %v", err)
			}
			if s := b.Stats(); s.Sent.Msgs != 0 || s.SendErrors != 0 {
				t.Fatalf("responder sent %d, send errors %d", s.Sent.Msgs, s.SendErrors)
			}
		})
	}
}

// A zero outer length is reported as an empty frame, not as a payload over
// the limit, and the connection is kept.
func TestEmptyFrameError(t *testing.T) {
	errs := make(chan error, 1)
	got := make(chan string, 1)
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, OnError: func(err error) { errs <- err },
		Handler: func(_ *Header, p []byte, _ Respond) { got <- string(p) }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := dialRaw(t, b.Addr(), []byte{0, 0, 0, 0})
	err = recv(t, errs)
	var fe *FrameError
	if !errors.As(err, &fe) || !errors.Is(err, ErrEmptyFrame) || errors.Is(err, ErrPayloadTooLarge) ||
		!strings.HasSuffix(err.Error(), "empty frame") {
		t.Fatalf("error %v, want a *FrameError for an empty frame", err)
	}
	if _, err := c.Write(goodFrame()); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, got); p != "ok" {
		t.Fatalf("next frame: %q", p)
	}
	if d := b.Stats().Drops[DropBadFrame]; d != 1 {
		t.Fatalf("bad frames %d", d)
	}
}
