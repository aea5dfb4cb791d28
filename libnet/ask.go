package libnet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// pendingKey identifies a pending ask. Raw-lane replies come back on the
// connection the ask went out on, so they are matched by UUID and peer
// address; legacy replies arrive on the listener from the responder's pool
// and are matched by UUID alone (peer "").
type pendingKey struct {
	id   [16]byte
	peer string
}

type result struct {
	reply Reply
	err   error
}

type call struct{ ch chan result } // capacity 1

// Ask sends m to peer as an ask and waits for the reply, until ctx ends or,
// if ctx has no deadline, Config.AskTimeout. The pending entry and its
// deadline timer are removed on every exit: reply, deadline, cancel, write
// error and Close. Errors: ErrTimeout (wrapping
// context.DeadlineExceeded), context.Canceled, ErrClosed, ErrNoListener
// (legacy lane on a send-only endpoint), ErrTooLarge and ErrBadMsg
// (wrapped, nothing written), ErrRouteTooLong, dial and write errors.
func (e *Endpoint) Ask(ctx context.Context, peer string, m Msg) (Reply, error) {
	md := e.modeFor(peer)
	ctx, done := e.askContext(ctx)
	defer done()
	id := e.newID()
	f, err := e.encode(md, DirAsk, id, &m, e.remaining(ctx))
	if err != nil {
		return Reply{}, err
	}
	return e.ask(ctx, peer, md.lane, id, &f)
}

// MultiAsk asks every peer. Peers on the raw lane share one frame (one
// UUID, matched per connection); each legacy peer gets its own frame,
// because the legacy envelope carries the UUID inside the JSON data.
// results[i] is peers[i]'s reply or error.
func (e *Endpoint) MultiAsk(ctx context.Context, peers []string, m Msg) []Result {
	out := make([]Result, len(peers))
	ctx, done := e.askContext(ctx)
	defer done()
	rawID := e.newID()
	var raw *frame
	var wg sync.WaitGroup
	for i, p := range peers {
		md, id := e.modeFor(p), rawID
		lane := md.lane
		var f *frame
		if lane == LaneRaw && raw != nil {
			f = raw
		} else {
			if lane != LaneRaw {
				id = e.newID()
			}
			enc, err := e.encode(md, DirAsk, id, &m, e.remaining(ctx))
			if err != nil {
				out[i].Err = err
				continue
			}
			f = &enc
			if lane == LaneRaw {
				raw = f
			}
		}
		wg.Add(1)
		go func(i int, p string, lane Lane, id [16]byte, f *frame) {
			defer wg.Done()
			out[i].Reply, out[i].Err = e.ask(ctx, p, lane, id, f)
		}(i, p, lane, id, f)
	}
	wg.Wait()
	return out
}

// Result is one peer's outcome of MultiAsk.
type Result struct {
	Reply Reply
	Err   error
}

// askContext gives ctx a deadline (AskTimeout if it has none) and counts
// the armed deadline timer until done is called.
func (e *Endpoint) askContext(ctx context.Context) (context.Context, func()) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(e.cfg.AskTimeout)
	}
	ctx, cancel := context.WithDeadline(ctx, dl)
	e.c.armedTimers.Add(1)
	return ctx, func() {
		cancel()
		e.c.armedTimers.Add(-1)
	}
}

func (e *Endpoint) remaining(ctx context.Context) time.Duration {
	dl, _ := ctx.Deadline()
	return max(time.Until(dl), 0)
}

func (e *Endpoint) ask(ctx context.Context, peer string, lane Lane, id [16]byte, f *frame) (Reply, error) {
	if lane != LaneRaw && !e.listening() {
		return Reply{}, ErrNoListener
	}
	key := pendingKey{id: id}
	if lane == LaneRaw {
		key.peer = peer
	}
	c := &call{ch: make(chan result, 1)}
	if err := e.addPending(key, c); err != nil {
		return Reply{}, err
	}
	defer e.removePending(key)
	start := time.Now()
	if err := e.sendFrame(ctx, peer, f); err != nil {
		return Reply{}, askErr(err)
	}
	select {
	case r := <-c.ch:
		if r.err == nil {
			e.c.askLat.record(time.Since(start))
		}
		return r.reply, r.err
	case <-ctx.Done():
		return Reply{}, askErr(ctx.Err())
	}
}

func askErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

func (e *Endpoint) addPending(k pendingKey, c *call) error {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if e.pclosed {
		return ErrClosed
	}
	e.pending[k] = c
	return nil
}

func (e *Endpoint) removePending(k pendingKey) {
	e.pmu.Lock()
	delete(e.pending, k)
	e.pmu.Unlock()
}

// failPending answers every pending ask with err.
func (e *Endpoint) failPending(err error) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	e.pclosed = true
	for _, c := range e.pending {
		select {
		case c.ch <- result{err: err}:
		default:
		}
	}
}

// deliver hands a resp to its pending ask, copying an aliased payload.
func (e *Endpoint) deliver(c *conn, h *Header, payload []byte, aliased bool) {
	key := pendingKey{id: h.UUID}
	if c.peer != nil && h.Version != 0 && h.Lane() == LaneRaw {
		key.peer = c.peer.addr
	}
	e.pmu.Lock()
	pc := e.pending[key]
	e.pmu.Unlock()
	if pc == nil {
		e.drop(DropLateReply, nil)
		return
	}
	if aliased {
		payload = exactCopy(payload)
	}
	r := result{reply: Reply{Header: *h, Payload: payload}}
	r.reply.Header.Owner = exactCopy(h.Owner)
	select {
	case pc.ch <- r:
	default:
		e.drop(DropLateReply, nil) // a second reply to the same ask
	}
}

// exactCopy returns a copy of b whose capacity is its length (nil for nil),
// so that an append by its owner never reaches memory it shares.
func exactCopy(b []byte) []byte {
	if b == nil {
		return nil
	}
	c := make([]byte, len(b))
	copy(c, b)
	return c
}

// AskAsync is Ask without the wait: m is queued to peer as an ask and
// done is called once, from another goroutine, with the reply or the
// error. The deadline (timeout, or Config.AskTimeout when it is 0 or
// less) is kept by the endpoint, so the caller arms no timer of its own.
// Asks to one peer are written in call order. m.Payload is read, not
// copied, until done has been called. Errors are Ask's.
func (e *Endpoint) AskAsync(peer string, m Msg, timeout time.Duration, done func(Reply, error)) {
	if timeout <= 0 {
		timeout = e.cfg.AskTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	e.c.armedTimers.Add(1)
	finish := func(r Reply, err error) {
		cancel()
		e.c.armedTimers.Add(-1)
		done(r, err)
	}
	md := e.modeFor(peer)
	if md.lane != LaneRaw && !e.listening() {
		finish(Reply{}, ErrNoListener)
		return
	}
	id := e.newID()
	key := pendingKey{id: id}
	if md.lane == LaneRaw {
		key.peer = peer
	}
	c := &call{ch: make(chan result, 1)}
	if err := e.addPending(key, c); err != nil {
		finish(Reply{}, err)
		return
	}
	start := time.Now()
	lf := &lazyFrame{build: func() (frame, error) { return e.encode(md, DirAsk, id, &m, timeout) }}
	e.postLazy(peer, lf, func(err error) {
		if err != nil {
			select {
			case c.ch <- result{err: askErr(err)}:
			default:
			}
		}
	})
	go func() {
		var r result
		select {
		case r = <-c.ch:
			if r.err == nil {
				e.c.askLat.record(time.Since(start))
			}
		case <-ctx.Done():
			r.err = askErr(ctx.Err())
		}
		e.removePending(key)
		finish(r.reply, r.err)
	}()
}
