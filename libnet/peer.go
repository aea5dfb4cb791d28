package libnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// errPeerStopped reports a peer that stopped (evicted or closed) before its
// writer took the message; sendFrame sends it again through a fresh peer.
var errPeerStopped = errors.New("libnet: peer stopped")

const maxBatch = 64 // frames per writev

// Send request states.
const (
	reqQueued   int32 = iota
	reqTaken          // the writer owns it and will answer on done
	reqCanceled       // the sender gave up; the writer skips it
)

type sendReq struct {
	f     *frame
	lazy  *lazyFrame // set instead of f by the asynchronous calls
	state atomic.Int32
	done  chan error  // capacity 1, answered once by the writer (synchronous calls)
	cb    func(error) // called once by the writer instead of done (asynchronous calls)
	start time.Time
}

// finish answers r once.
func (r *sendReq) finish(err error) {
	if r.cb != nil {
		r.cb(err)
		return
	}
	r.done <- err
}

// lazyFrame is a frame built once, by the first writer that takes it, so
// that an asynchronous caller (a JavaScript thread) neither signs nor
// compresses, and every recipient of a multi-send shares one encoding.
type lazyFrame struct {
	once  sync.Once
	build func() (frame, error)
	f     frame
	err   error
}

func (l *lazyFrame) get() (*frame, error) {
	l.once.Do(func() { l.f, l.err = l.build(); l.build = nil })
	return &l.f, l.err
}

// peer is one pooled outbound connection with its bounded send queue and
// writer goroutine: one connection per peer, reused, as lib-net's sender
// keeps one per address (shardus_net_sender.rs).
type peer struct {
	ep       *Endpoint
	addr     string
	q        chan *sendReq
	quit     chan struct{} // closed by stop
	stopped  chan struct{} // closed when the writer has exited
	stopOnce sync.Once
	lastUsed atomic.Int64 // Unix ns

	pmu      sync.Mutex // guards closing and over
	closing  bool       // the writer drains for the last time; post refuses
	over     []*sendReq // asynchronous requests queued behind a full q, oldest first
	overHead int        // over[overHead:] is still queued

	conn *conn // owned by the writer goroutine
	bufs net.Buffers
}

func newPeer(e *Endpoint, addr string) *peer {
	p := &peer{ep: e, addr: addr, q: make(chan *sendReq, e.cfg.QueueLen),
		quit: make(chan struct{}), stopped: make(chan struct{})}
	p.lastUsed.Store(time.Now().UnixNano())
	return p
}

func (p *peer) stop() { p.stopOnce.Do(func() { close(p.quit) }) }

func (p *peer) idle(now time.Time, limit time.Duration) bool {
	return len(p.q) == 0 && now.UnixNano()-p.lastUsed.Load() > int64(limit)
}

// send queues f and waits for the writer's result. The frame's buffers are
// not touched after send returns: a request the writer has not taken is
// canceled, one it has taken is waited for.
func (p *peer) send(ctx context.Context, f *frame) error {
	r := &sendReq{f: f, done: make(chan error, 1), start: time.Now()}
	p.lastUsed.Store(r.start.UnixNano())
	select {
	case p.q <- r:
	case <-p.quit:
		return errPeerStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	p.ep.c.outSends.Add(1)
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return p.cancel(r, ctx.Err())
	case <-p.stopped: // queued after the writer's last drain: never taken
		return p.cancel(r, errPeerStopped)
	}
}

func (p *peer) cancel(r *sendReq, err error) error {
	if r.state.CompareAndSwap(reqQueued, reqCanceled) {
		p.ep.c.outSends.Add(-1)
		return err
	}
	return <-r.done
}

// post queues r without waiting: errPeerStopped if the writer has begun
// its last drain, ErrQueueFull (wrapped) if the queue is full. A request
// post accepted is answered by the writer.
func (p *peer) post(r *sendReq) error {
	p.lastUsed.Store(r.start.UnixNano())
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.closing {
		return errPeerStopped
	}
	if p.overHead == len(p.over) { // nothing waits behind q: q keeps the order
		select {
		case p.q <- r:
			p.ep.c.outSends.Add(1)
			return nil
		default:
		}
	}
	if len(p.over)-p.overHead >= p.ep.cfg.AsyncQueueLen {
		return fmt.Errorf("%w: %d messages queued to %s", ErrQueueFull, cap(p.q)+p.ep.cfg.AsyncQueueLen, p.addr)
	}
	p.over = append(p.over, r)
	p.ep.c.outSends.Add(1)
	return nil
}

// takeOver moves up to room requests from over into batch.
func (p *peer) takeOver(batch []*sendReq, room int) []*sendReq {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	k := min(room, len(p.over)-p.overHead)
	batch = append(batch, p.over[p.overHead:p.overHead+k]...)
	clear(p.over[p.overHead : p.overHead+k])
	p.overHead += k
	if p.overHead == len(p.over) {
		if cap(p.over) > 4*maxBatch {
			p.over = nil
		} else {
			p.over = p.over[:0]
		}
		p.overHead = 0
	}
	return batch
}

// run is the writer goroutine: it takes batches from the queue, writes
// them with one writev, and on stop writes what is still queued.
func (p *peer) run() {
	defer p.ep.wg.Done()
	defer close(p.stopped)
	defer p.ep.c.peers.Add(-1)
	defer p.dropConn()
	batch := make([]*sendReq, 0, maxBatch)
	for {
		if b := p.fill(batch[:0]); len(b) > 0 {
			p.write(b)
			continue
		}
		select {
		case r := <-p.q:
			p.write(p.fill(append(batch[:0], r)))
		case <-p.quit:
			p.pmu.Lock()
			p.closing = true
			p.pmu.Unlock()
			for b := p.fill(batch[:0]); len(b) > 0; b = p.fill(batch[:0]) {
				p.write(b)
			}
			return
		}
	}
}

// fill adds queued requests to batch without blocking: from q, then from
// over (whose requests are all younger than those in q).
func (p *peer) fill(batch []*sendReq) []*sendReq {
	for len(batch) < maxBatch {
		select {
		case r := <-p.q:
			batch = append(batch, r)
		default:
			return p.takeOver(batch, maxBatch-len(batch))
		}
	}
	return batch
}

// write takes the batch's live requests, writes them, reconnecting once on
// a write error (as lib-net's Connection::send does), and answers each.
func (p *peer) write(batch []*sendReq) {
	live := batch[:0]
	c := p.ep.c
	for _, r := range batch {
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue
		}
		if r.lazy != nil {
			f, err := r.lazy.get()
			if err != nil {
				c.sendErrors.Add(1)
				c.outSends.Add(-1)
				c.sampleSends()
				r.finish(err)
				continue
			}
			r.f = f
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := p.writeOnce(live)
	if err != nil && !errors.Is(err, ErrDial) {
		p.dropConn()
		err = p.writeOnce(live)
	}
	now := time.Now()
	for _, r := range live {
		if err != nil {
			c.sendErrors.Add(1)
		} else {
			c.sent.add(r.f.lane, r.f.n)
			c.writeLat.record(now.Sub(r.start))
		}
		c.outSends.Add(-1)
		c.sampleSends()
		r.finish(err)
	}
}

func (p *peer) writeOnce(live []*sendReq) error {
	if p.conn != nil && p.conn.dead.Load() { // the remote closed it
		p.dropConn()
	}
	if p.conn == nil {
		nc, err := net.DialTimeout("tcp", p.addr, p.ep.cfg.DialTimeout)
		if err != nil {
			return errors.Join(ErrDial, err)
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		p.conn = p.ep.startConn(nc, p)
	}
	p.bufs = p.bufs[:0]
	for _, r := range live {
		p.bufs = append(p.bufs, r.f.bufs[0], r.f.bufs[1], r.f.bufs[2])
	}
	err := p.conn.writeBufs(p.bufs)
	clear(p.bufs) // do not pin payloads until the next write
	return err
}

func (p *peer) dropConn() {
	if p.conn != nil {
		_ = p.conn.nc.Close()
		p.conn = nil
	}
}
