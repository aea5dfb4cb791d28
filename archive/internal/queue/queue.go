// Package queue is the archive drivers' write queue, bounded in bytes,
// and the calls of the done callbacks of a committed or failed batch.
package queue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
	"github.com/couriernet/courier/message"
)

// ItemOverhead is what one queued envelope counts besides its wire bytes
// (archive.Config.QueueBytes).
const ItemOverhead = 256

// Item is one queued envelope.
type Item struct {
	Env  *message.Envelope
	Done func(error)
	Recv int64  // receive time, Unix ns
	In   int64  // Append's SinceStart, when Config.OnInsert is set
	Size int64  // queue bytes
	CRC  uint32 // CRC-32C of the wire bytes (embedded archive): the envelope's (WireCRC), or computed by Append; off the writer goroutine either way
}

// NewItem checks env as Append does and returns its item, received at
// now(); timed records the time of the Append for Config.OnInsert. Errors
// wrap archive.ErrBadEnvelope: a nil envelope or message, or wire bytes
// over message.MaxSize.
func NewItem(env *message.Envelope, done func(error), now func() time.Time, timed bool) (Item, error) {
	if env == nil || env.Message() == nil {
		return Item{}, fmt.Errorf("%w: nil envelope or message", archive.ErrBadEnvelope)
	}
	if n := len(env.Wire()); n > message.MaxSize {
		return Item{}, fmt.Errorf("%w: %d wire bytes, over %d", archive.ErrBadEnvelope, n, message.MaxSize)
	}
	it := Item{Env: env, Done: done, Recv: now().UnixNano(), Size: int64(len(env.Wire())) + ItemOverhead}
	if timed {
		it.In = SinceStart()
	}
	return it, nil
}

// Queue is a writer's queue of envelopes, bounded in bytes: Put waits for
// room (push back, never a drop), Take hands the writer whatever is
// queued without waiting for more.
type Queue struct {
	limit int64 // bytes; one item is always let in when the queue is empty

	mu     sync.Mutex
	items  []Item
	bytes  int64 // queued or in the batch being written
	msgs   int
	closed bool
	room   chan struct{} // closed and replaced when bytes are released
	wake   chan struct{} // one slot: work for the writer
}

// New returns a queue of limit bytes.
func New(limit int64) *Queue {
	return &Queue{limit: limit, room: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Put queues it, waiting while the queue is full. It returns
// archive.ErrClosed after Close, or ctx.Err().
func (q *Queue) Put(ctx context.Context, it Item) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return archive.ErrClosed
		}
		if q.bytes == 0 || q.bytes+it.Size <= q.limit {
			q.items = append(q.items, it)
			q.bytes += it.Size
			q.msgs++
			q.mu.Unlock()
			select {
			case q.wake <- struct{}{}:
			default:
			}
			return nil
		}
		room := q.room
		q.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Take moves up to max queued items into batch, waiting until there is
// one; while it waits it runs the functions received on side (nil: none),
// so a writer can serve other requests when idle. It reports false when
// the queue is closed and empty.
func (q *Queue) Take(batch []Item, max int, side <-chan func()) ([]Item, bool) {
	for {
		q.mu.Lock()
		if n := len(q.items); n > 0 {
			n = min(n, max)
			batch = append(batch[:0], q.items[:n]...)
			rest := copy(q.items, q.items[n:])
			clear(q.items[rest:])
			q.items = q.items[:rest]
			q.mu.Unlock()
			return batch, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return batch, false
		}
		select {
		case <-q.wake:
		case f := <-side:
			f()
		}
	}
}

// Release gives back the bytes of a finished batch.
func (q *Queue) Release(batch []Item) {
	var n int64
	for i := range batch {
		n += batch[i].Size
	}
	q.mu.Lock()
	q.bytes -= n
	q.msgs -= len(batch)
	close(q.room)
	q.room = make(chan struct{})
	q.mu.Unlock()
}

// Close refuses further puts, releases the waiting ones and lets Take
// drain what is queued.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	close(q.room)
	q.room = make(chan struct{})
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len returns the queued bytes and messages, those being written included.
func (q *Queue) Len() (int64, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.msgs
}

// Finish calls the done callbacks of a committed (err nil) or failed
// batch, after handing onInsert (nil: none) each committed message's time
// since Append, or onFailure (nil: none) the error and the count of the
// batch's messages that are not ephemeral, and counts the ephemeral and
// failed messages in st (archive.Config.OnInsert, OnFailure).
func Finish(batch []Item, err error, st *driver.Counters, onInsert func(*message.Envelope, time.Duration), onFailure func(error, int)) {
	if err != nil && onFailure != nil {
		failed := 0
		for i := range batch {
			if !batch[i].Env.Message().Ephemeral {
				failed++
			}
		}
		if failed > 0 {
			onFailure(err, failed)
		}
	}
	timed := onInsert != nil && err == nil
	var now int64
	if timed {
		now = SinceStart()
	}
	for i := range batch {
		e := err
		if batch[i].Env.Message().Ephemeral {
			e = nil // never stored, so never failed
			st.Eph.Add(1)
		} else if err != nil {
			st.Failed.Add(1)
		} else if timed {
			onInsert(batch[i].Env, time.Duration(now-batch[i].In))
		}
		if d := batch[i].Done; d != nil {
			d(e)
		}
	}
}

// monoOrigin is the origin of SinceStart.
var monoOrigin = time.Now()

// SinceStart returns the monotonic nanoseconds since the package was
// loaded, the clock of Item.In: unlike Config.Now, it is never a test's
// fake clock and never steps.
func SinceStart() int64 { return int64(time.Since(monoOrigin)) }
