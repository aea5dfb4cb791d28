package relay

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/couriernet/courier/message"
)

// Archiver is the part of an archive the dispatcher uses: archive.Archive
// satisfies it. Append may block to push back; done runs once the envelope
// is committed.
type Archiver interface {
	Append(ctx context.Context, env *message.Envelope, done func(error)) error
}

// Handler receives relayed envelopes on its own goroutine, one at a time, in
// the order they were dispatched. The envelope is shared with every other
// consumer: read it, keep it, never modify it.
type Handler func(env *message.Envelope)

type handlerEntry struct {
	name  string
	queue chan *message.Envelope
	done  chan struct{}
}

// dispatcher hands each envelope to the archive and to every handler.
// Handlers sit behind bounded queues and lose on a full queue, counted;
// the archive pushes back, never losing (see the package doc, "Loss").
type dispatcher struct {
	ctx         context.Context
	archive     Archiver
	archiveDone func(*message.Envelope, error)
	queueLen    int
	c           *counters

	mu       sync.RWMutex
	handlers []*handlerEntry
	nHandler atomic.Int32 // len(handlers), read without mu
	closed   bool
	wg       sync.WaitGroup
}

func (d *dispatcher) dispatch(env *message.Envelope) {
	d.c.delivered.Add(1)
	if d.archive != nil {
		done := func(err error) {
			if err != nil {
				d.c.drop(DropArchive)
			}
			if d.archiveDone != nil {
				d.archiveDone(env, err)
			}
		}
		if err := d.archive.Append(d.ctx, env, done); err != nil {
			d.c.drop(DropArchive)
			if d.archiveDone != nil {
				d.archiveDone(env, err)
			}
		}
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, h := range d.handlers {
		select {
		case h.queue <- env:
		default:
			d.c.drop(DropHandlerQueueFull)
		}
	}
}

// delivers reports whether anything takes the envelopes dispatched: the
// archive or a handler. It takes no lock: gossipsub's event loop asks it
// for every message id.
func (d *dispatcher) delivers() bool {
	return d.archive != nil || d.nHandler.Load() > 0
}

// add starts a handler goroutine and returns the function that stops it.
func (d *dispatcher) add(name string, fn Handler) (remove func()) {
	h := &handlerEntry{name: name, queue: make(chan *message.Envelope, d.queueLen), done: make(chan struct{})}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return func() {}
	}
	d.handlers = append(d.handlers, h)
	d.nHandler.Store(int32(len(d.handlers)))
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		defer close(h.done)
		for env := range h.queue {
			fn(env)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { d.remove(h) }) }
}

func (d *dispatcher) remove(h *handlerEntry) {
	d.mu.Lock()
	for i, x := range d.handlers {
		if x == h {
			d.handlers = append(d.handlers[:i:i], d.handlers[i+1:]...)
			d.nHandler.Store(int32(len(d.handlers)))
			close(h.queue)
			break
		}
	}
	d.mu.Unlock()
	<-h.done
}

// close stops every handler after it has run what is queued.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	for _, h := range d.handlers {
		close(h.queue)
	}
	d.handlers = nil
	d.nHandler.Store(0)
	d.mu.Unlock()
	d.wg.Wait()
}
