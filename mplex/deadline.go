package mplex

import (
	"sync"
	"time"
)

// deadline is a settable deadline: done returns a channel closed once the
// deadline has passed. A channel handed out stays the one to wait on
// until it is closed, so setting or moving the deadline also applies to
// calls already waiting. The zero value has no deadline.
type deadline struct {
	mu      sync.Mutex
	timer   *time.Timer
	gen     uint64        // bumped by each set; a stale timer does nothing
	expired chan struct{} // nil until first needed
}

// set moves the deadline to t; the zero time removes it.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
	if d.expired != nil && isClosed(d.expired) {
		d.expired = nil
	}
	if t.IsZero() {
		return
	}
	if d.expired == nil {
		d.expired = make(chan struct{})
	}
	wait := time.Until(t)
	if wait <= 0 {
		close(d.expired)
		return
	}
	gen, ch := d.gen, d.expired
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen {
			close(ch)
		}
	})
}

// done returns a channel closed when the deadline passes. It is made when
// first asked for, so that a deadline set later, while a call waits on it,
// closes it too (net.Conn: a deadline applies to calls already waiting).
func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.expired == nil {
		d.expired = make(chan struct{})
	}
	return d.expired
}

// stop stops the timer; the deadline no longer fires.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
