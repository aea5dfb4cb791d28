// Package lifecycle is the life cycle every protocol service of the module
// follows: the goroutines it runs (stream handlers, workers, loops) are
// counted, a context ends when it closes, and it closes once.
//
// The rule of Close, for every service: the first call stops the service
// (no new goroutine is let in, the caller's stop steps run, the context is
// cancelled, and Close waits for every goroutine counted) and returns the
// stop steps' errors joined; every later call, and a call made while the
// first is still running, returns nil at once.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// Group is one service's life cycle. Make it with New; its methods are
// safe for concurrent use.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// New returns a Group that is open.
func New() *Group {
	g := &Group{}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

// Context returns the context that Close cancels, after its stop steps.
func (g *Group) Context() context.Context { return g.ctx }

// Enter counts the calling goroutine (a stream handler, say) unless Close
// has begun, and reports whether it did: on true the caller must call
// Leave when it is done, on false it must stop at once. Counting under the
// same lock that Close takes means Close's wait can never race with a
// late arrival.
func (g *Group) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Leave ends what Enter counted.
func (g *Group) Leave() { g.wg.Done() }

// Go runs f on a new goroutine counted like Enter, unless Close has begun;
// it reports whether f was started.
func (g *Group) Go(f func()) bool {
	if !g.Enter() {
		return false
	}
	go func() {
		defer g.Leave()
		f()
	}()
	return true
}

// Closed reports whether Close has begun.
func (g *Group) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Close stops the service the first time it is called: from then on Enter
// and Go refuse; stop steps run in order, each of them whatever the others
// returned (unmounting stream handlers, say, so that no new stream
// arrives); the context is cancelled; and Close waits for every goroutine
// counted. It returns the stop steps' errors joined (errors.Join), nil
// when there are none. Every later call returns nil at once, without
// waiting.
func (g *Group) Close(stop ...func() error) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	var errs []error
	for _, f := range stop {
		errs = append(errs, f())
	}
	g.cancel()
	g.wg.Wait()
	return errors.Join(errs...)
}
