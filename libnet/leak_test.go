package libnet

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoLeaks sends 100,000 tells and 10,000 asks (at most 256 asks in
// flight, every tenth left unanswered so it times out, every fiftieth
// canceled) and checks that afterwards no ask is pending, no deadline timer
// is armed, nothing is outstanding, and after Close the goroutine count is
// back where it started.
func TestNoLeaks(t *testing.T) {
	const tells, asks, askers, tellers = 100_000, 10_000, 256, 8
	base := runtime.NumGoroutine()
	a, err := New(Config{ListenAddr: "127.0.0.1:0", SenderID: "a", Lane: LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, SenderID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var told atomic.Int64
	b.Handle("tell", func(*Header, []byte, Respond) { told.Add(1) }, RouteOptions{})
	b.Handle("ask", func(_ *Header, p []byte, r Respond) { r(p) }, RouteOptions{})
	b.Handle("silent", func(*Header, []byte, Respond) {}, RouteOptions{})
	ctx := context.Background()
	payload := []byte("0123456789abcdef")

	var wg sync.WaitGroup
	var next atomic.Int64
	for range tellers {
		wg.Go(func() {
			for next.Add(1) <= tells {
				if err := a.Tell(ctx, b.Addr(), Msg{Route: "tell", Payload: payload}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var answered, timedOut, canceled atomic.Int64
	var nextAsk atomic.Int64
	for range askers {
		wg.Go(func() {
			for {
				i := nextAsk.Add(1)
				if i > asks {
					return
				}
				m := Msg{Route: "ask", Payload: []byte(strconv.FormatInt(i, 10))}
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				switch {
				case i%10 == 0:
					m.Route = "silent"
					cancel()
					actx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
				case i%50 == 1:
					cancel()
				}
				r, err := a.Ask(actx, b.Addr(), m)
				cancel()
				switch {
				case err == nil && string(r.Payload) == string(m.Payload):
					answered.Add(1)
				case errors.Is(err, ErrTimeout):
					timedOut.Add(1)
				case errors.Is(err, context.Canceled):
					canceled.Add(1)
				default:
					t.Errorf("ask %d: %v %q", i, err, r.Payload)
				}
			}
		})
	}
	wg.Wait()
	if answered.Load()+timedOut.Load()+canceled.Load() != asks || timedOut.Load() < asks/10 {
		t.Fatalf("answered %d timed out %d canceled %d", answered.Load(), timedOut.Load(), canceled.Load())
	}
	for told.Load() != tells { // tells are written; wait until handled
		time.Sleep(time.Millisecond)
	}
	sa := a.Stats()
	if sa.PendingAsks != 0 || sa.ArmedTimers != 0 || sa.OutstandingSends != 0 {
		t.Fatalf("after traffic: pending %d timers %d outstanding sends %d", sa.PendingAsks, sa.ArmedTimers, sa.OutstandingSends)
	}
	if sb := b.Stats(); sb.OutstandingReceives != 0 || sb.Received.Msgs < tells {
		t.Fatalf("receiver: outstanding %d received %d", sb.OutstandingReceives, sb.Received.Msgs)
	}
	a.Close()
	b.Close()
	for i := 0; runtime.NumGoroutine() > base; i++ {
		if i == 500 {
			t.Fatalf("goroutines %d, started with %d", runtime.NumGoroutine(), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("tells %d asks answered %d timed out %d canceled %d", tells, answered.Load(), timedOut.Load(), canceled.Load())
}
