package archive

import (
	"context"
	"sync"
	"time"

	"github.com/couriernet/courier/message"
)

const (
	// itemOverhead is what one queued envelope costs besides its wire bytes.
	itemOverhead = 256
	maxRecord    = message.MaxSize
)

// item is one queued envelope.
type item struct {
	env  *message.Envelope
	done func(error)
	recv int64  // receive time, Unix ns
	in   int64  // Append's sinceStart, when Config.OnInsert is set
	size int64  // queue bytes
	crc  uint32 // CRC-32C of the wire bytes (embedded archive), computed by Append off the writer goroutine
}

// writeQueue is a writer's queue of envelopes, bounded in bytes: put waits
// for room (push back, never a drop), take hands the writer whatever is
// queued without waiting for more.
type writeQueue struct {
	limit int64 // bytes; one item is always let in when the queue is empty

	mu     sync.Mutex
	items  []item
	bytes  int64 // queued or in the batch being written
	msgs   int
	closed bool
	room   chan struct{} // closed and replaced when bytes are released
	wake   chan struct{} // one slot: work for the writer
}

func newWriteQueue(limit int64) *writeQueue {
	return &writeQueue{limit: limit, room: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// put queues it, waiting while the queue is full. It returns ErrClosed
// after close, or ctx.Err().
func (q *writeQueue) put(ctx context.Context, it item) error {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return ErrClosed
		}
		if q.bytes == 0 || q.bytes+it.size <= q.limit {
			q.items = append(q.items, it)
			q.bytes += it.size
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

// take moves up to max queued items into batch, waiting until there is one;
// while it waits it runs the functions received on side (nil: none), so a
// writer can serve other requests when idle. It reports false when the
// queue is closed and empty.
func (q *writeQueue) take(batch []item, max int, side <-chan func()) ([]item, bool) {
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

// release gives back the bytes of a finished batch.
func (q *writeQueue) release(batch []item) {
	var n int64
	for i := range batch {
		n += batch[i].size
	}
	q.mu.Lock()
	q.bytes -= n
	q.msgs -= len(batch)
	close(q.room)
	q.room = make(chan struct{})
	q.mu.Unlock()
}

// close refuses further puts, releases the waiting ones and lets take
// drain what is queued.
func (q *writeQueue) close() {
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

// len returns the queued bytes and messages, those being written included.
func (q *writeQueue) len() (int64, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.msgs
}

// finish calls the done callbacks of a committed (err nil) or failed batch,
// after handing onInsert (nil: none) each committed message's time since
// Append.
func finish(batch []item, err error, st *counters, onInsert func(*message.Envelope, time.Duration)) {
	timed := onInsert != nil && err == nil
	var now int64
	if timed {
		now = sinceStart()
	}
	for i := range batch {
		e := err
		if batch[i].env.Message().Ephemeral {
			e = nil // never stored, so never failed
			st.eph.Add(1)
		} else if err != nil {
			st.failed.Add(1)
		} else if timed {
			onInsert(batch[i].env, time.Duration(now-batch[i].in))
		}
		if d := batch[i].done; d != nil {
			d(e)
		}
	}
}

// monoOrigin is the origin of sinceStart.
var monoOrigin = time.Now()

// sinceStart returns the monotonic nanoseconds since the package was
// loaded, the clock of item.in: unlike Config.Now, it is never a test's
// fake clock and never steps.
func sinceStart() int64 { return int64(time.Since(monoOrigin)) }
