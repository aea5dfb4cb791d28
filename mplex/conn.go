package mplex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pool "github.com/libp2p/go-buffer-pool"
	"github.com/libp2p/go-libp2p/core/network"
)

// ErrConnClosed is returned by OpenStream and AcceptStream on a closed
// connection, and wrapped (with network.ErrReset) by the reads and writes
// of its streams.
var ErrConnClosed = errors.New("mplex: connection closed")

var errStreamConnClosed = fmt.Errorf("%w (%w)", ErrConnClosed, network.ErrReset)

// Errors that close a connection whose peer does not read.
var (
	// ErrWriteTimeout: a write to the connection took longer than
	// Transport.WriteTimeout.
	ErrWriteTimeout = errors.New("mplex: connection write timed out")
	// ErrTooManyResets: more than MaxQueuedResets Reset frames wait to be
	// written, for a peer that opens streams past MaxInboundStreams, or
	// has its streams reset, faster than it reads.
	ErrTooManyResets = errors.New("mplex: too many resets waiting for the peer to read")
)

// sendQueue is how many frames a connection queues for writing; with
// frames of at most maxWriteFrame, 8 MiB. A writer waits while it is full.
const sendQueue = 32

// maxWriteFrame is the largest frame payload written; longer writes are
// split.
const maxWriteFrame = 256 << 10

// writePiece is the most written to the connection under one deadline
// extension: go-yamux's largest frame (MaxMessageSize, 64 KiB).
const writePiece = 64 << 10

// maxResetBatch and maxResetBuf bound the reset batches (16 bytes an
// entry) and frame buffer (at most 10 bytes a Reset) that sendLoop keeps
// for reuse: at most 80 KiB a connection, and only once it reset that
// many streams at once.
const (
	maxResetBatch = 2 << 10
	maxResetBuf   = 16 << 10
)

// reserveStep is the unit in which memory for unread data is reserved
// from, and given back to, the connection's resource scope.
const reserveStep = 1 << 20

// streamKey names a stream: its id and whether this side opened it.
type streamKey struct {
	id    uint64
	local bool
}

// outFrame is a queued frame: a pooled buffer holding the whole frame, and
// the stream it is for, which sendLoop asks whether it still goes out.
type outFrame struct {
	b    []byte
	s    *stream
	open bool // a NewStream frame
}

// conn is one multiplexed connection. Lock order: conn.mu before
// stream.mu. One goroutine reads frames (readLoop) and never blocks on a
// stream. Writers queue whole frames on send (as go-yamux queues its
// frames), and sendLoop writes them in order, Resets first: those never
// wait for room.
type conn struct {
	nc   net.Conn
	lim  limits
	span network.ResourceScopeSpan // nil without a resource manager

	send   chan outFrame // frames to write; at most sendQueue
	ctrl   chan struct{} // one-slot: resets are waiting
	accept chan *stream  // streams opened by the peer, not yet accepted
	closed chan struct{} // closed by shutdown
	wg     sync.WaitGroup

	mu       sync.Mutex
	streams  map[streamKey]*stream
	inbound  int         // streams in streams opened by the peer
	nextID   uint64      // id of the next stream this side opens
	resets   []streamKey // Reset frames for sendLoop to send first
	overflow bool        // resets overflowed: a shutdown is under way
	closeErr error       // why the connection closed; nil while open

	buffered atomic.Int64 // unread bytes held by all streams
	reserved int          // bytes reserved in span; readLoop only

	// sendLoop only
	spare         []streamKey // the other reset batch, swapped with resets
	resetBuf      []byte      // reused for the Reset frames of a batch
	writeDeadline time.Time   // the write deadline set on nc
}

func newConn(nc net.Conn, lim limits, span network.ResourceScopeSpan) *conn {
	c := &conn{
		nc: nc, lim: lim, span: span,
		send:    make(chan outFrame, sendQueue),
		ctrl:    make(chan struct{}, 1),
		accept:  make(chan *stream, lim.inbound),
		closed:  make(chan struct{}),
		streams: make(map[streamKey]*stream),
	}
	c.wg.Add(2)
	go c.readLoop()
	go c.sendLoop()
	return c
}

// Close closes the connection and its streams and waits for the
// connection's goroutines to end.
func (c *conn) Close() error {
	c.shutdown(ErrConnClosed)
	c.wg.Wait()
	return nil
}

// CloseWithError closes the connection; mplex cannot carry the code.
func (c *conn) CloseWithError(network.ConnErrorCode) error { return c.Close() }

// IsClosed reports whether the connection is closed.
func (c *conn) IsClosed() bool { return isClosed(c.closed) }

// As matches nothing: the connection wraps no other muxer.
func (c *conn) As(any) bool { return false }

// OpenStream opens a stream; ctx bounds the wait to write its NewStream
// frame. The name sent is the stream id in decimal, as js-libp2p sends it.
func (c *conn) OpenStream(ctx context.Context) (network.MuxedStream, error) {
	c.mu.Lock()
	if c.closeErr != nil {
		c.mu.Unlock()
		return nil, ErrConnClosed
	}
	if c.nextID > maxStreamID {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: stream ids exhausted", ErrProtocol)
	}
	s := newStream(c, streamKey{id: c.nextID, local: true})
	c.nextID++
	c.streams[s.key] = s
	c.mu.Unlock()
	var name [20]byte
	if err := c.writeFrame(s, flagNewStream, strconv.AppendUint(name[:0], s.key.id, 10), ctx.Done()); err != nil {
		c.resetStream(s, err, false)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return s, nil
}

// AcceptStream returns the next stream opened by the peer.
func (c *conn) AcceptStream() (network.MuxedStream, error) {
	select {
	case s := <-c.accept:
		return s, nil
	case <-c.closed:
		return nil, ErrConnClosed
	}
}

// shutdown closes the connection once, with err as the reason, and ends
// every open stream.
func (c *conn) shutdown(err error) {
	c.mu.Lock()
	if c.closeErr != nil {
		c.mu.Unlock()
		return
	}
	c.closeErr = err
	close(c.closed)
	open := make([]*stream, 0, len(c.streams))
	for _, s := range c.streams {
		open = append(open, s)
	}
	clear(c.streams)
	c.inbound = 0
	c.resets = nil
	c.mu.Unlock()
	c.nc.Close()
	for _, s := range open {
		s.connClosed()
	}
}

// writeFrame queues one frame of s, copying p once into a pooled buffer
// so the frame goes out in a single write. It waits for room in the queue
// until expired (which may be nil) or s.gone is closed. Once queued, the
// frame is written unless the connection fails or s is reset first.
func (c *conn) writeFrame(s *stream, flag byte, p []byte, expired <-chan struct{}) error {
	if c.IsClosed() {
		return errStreamConnClosed
	}
	buf := pool.Get(maxFrameOverhead + len(p))
	f := outFrame{b: appendFrame(buf[:0], s.key.id, flag, p), s: s, open: flag == flagNewStream}
	select {
	case c.send <- f:
		return nil
	case <-expired:
		pool.Put(buf)
		return errDeadline
	case <-s.gone:
		pool.Put(buf)
		return errGone
	case <-c.closed:
		pool.Put(buf)
		return errStreamConnClosed
	}
}

// errGone tells a writer its stream ended while it waited; the stream
// replaces it with the stream's own error.
var errGone = errors.New("mplex: stream ended")

// sendLoop writes the queued frames in order, and the Resets queued by
// queueReset before them. A failed write closes the connection.
func (c *conn) sendLoop() {
	defer c.wg.Done()
	for {
		var err error
		select {
		case <-c.ctrl:
			err = c.writeResets()
		default:
			select {
			case f := <-c.send:
				err = c.writeQueued(f)
			case <-c.ctrl:
				err = c.writeResets()
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.shutdown(err)
			return
		}
	}
}

// writeQueued writes f unless its stream was reset before: the peer has
// forgotten the stream, or, when f is its NewStream, never hears of it.
func (c *conn) writeQueued(f outFrame) error {
	defer pool.Put(f.b)
	if !f.s.sending(f.open) {
		return nil
	}
	return c.write(f.b)
}

// writeResets writes the Resets queued by queueReset in one write.
func (c *conn) writeResets() error {
	c.mu.Lock()
	keys := c.resets
	c.resets = c.spare[:0]
	c.mu.Unlock()
	b := c.resetBuf[:0]
	for _, k := range keys {
		flag := byte(flagResetReceiver)
		if k.local {
			flag = flagResetInitiator
		}
		b = appendFrame(b, k.id, flag, nil)
	}
	if cap(keys) <= maxResetBatch {
		c.spare = keys[:0]
	}
	if cap(b) <= maxResetBuf {
		c.resetBuf = b
	}
	if len(b) == 0 {
		return nil
	}
	return c.write(b)
}

// write writes b to the connection in pieces of at most writePiece, each
// with a write deadline at least half of WriteTimeout away: the deadline
// is moved on, as go-yamux does, once half of it has passed.
func (c *conn) write(b []byte) error {
	for len(b) > 0 {
		if now := time.Now(); now.Add(c.lim.writeTimeout / 2).After(c.writeDeadline) {
			c.writeDeadline = now.Add(c.lim.writeTimeout)
			if err := c.nc.SetWriteDeadline(c.writeDeadline); err != nil {
				return err
			}
		}
		n := min(len(b), writePiece)
		if _, err := c.nc.Write(b[:n]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("%w (%v)", ErrWriteTimeout, c.lim.writeTimeout)
			}
			return err
		}
		b = b[n:]
	}
	return nil
}

// queueReset asks sendLoop to send a Reset for k ahead of queued frames;
// c.mu is held. With MaxQueuedResets already waiting it queues nothing
// and returns ErrTooManyResets: the caller closes the connection.
func (c *conn) queueReset(k streamKey) error {
	if c.closeErr != nil {
		return nil
	}
	if len(c.resets) >= MaxQueuedResets {
		return ErrTooManyResets
	}
	c.resets = append(c.resets, k)
	select {
	case c.ctrl <- struct{}{}:
	default:
	}
	return nil
}

// resetStream ends s with err: its unread data and its queued frames are
// dropped and waiting reads and writes return err. When send is set, the
// stream was still open and the peer knows of it, a Reset for the peer is
// queued ahead of other frames. It never waits.
func (c *conn) resetStream(s *stream, err error, send bool) {
	c.mu.Lock()
	open := c.streams[s.key] == s
	if open {
		c.remove(s)
	}
	c.mu.Unlock()
	if announced := s.reset(err); open && send && announced {
		c.mu.Lock()
		if err := c.queueReset(s.key); err != nil && !c.overflow {
			// closing may wait on the connection (a TLS close_notify);
			// the caller, perhaps in Reset, must not
			c.overflow = true
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.shutdown(err)
			}()
		}
		c.mu.Unlock()
	}
}

// remove forgets s; c.mu is held.
func (c *conn) remove(s *stream) {
	delete(c.streams, s.key)
	if !s.key.local {
		c.inbound--
	}
}

// removeIfDone forgets s once this side closed its reads and its writes:
// nothing more leaves on it, and what the peer still sends is dropped.
func (c *conn) removeIfDone(s *stream) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams[s.key] == s && s.done() {
		c.remove(s)
		s.deadlinesStop()
	}
}

// readLoop reads frames until the connection fails, then closes it.
func (c *conn) readLoop() {
	defer c.wg.Done()
	br := bufio.NewReaderSize(c.nc, 4096)
	var err error
	for err == nil {
		err = c.readFrame(br)
	}
	if errors.Is(err, io.EOF) {
		err = ErrConnClosed
	}
	c.shutdown(err)
	if c.span != nil {
		c.span.Done()
	}
}

// readFrame reads and handles one frame. An error closes the connection.
func (c *conn) readFrame(br *bufio.Reader) error {
	h, n, err := readHeader(br)
	if err != nil {
		return err
	}
	key := streamKey{id: h.id, local: h.local()}
	switch h.flag {
	case flagNewStream:
		if err := discard(br, n); err != nil {
			return err
		}
		return c.opened(h.id)
	case flagMessageReceiver, flagMessageInitiator:
		return c.deliver(br, key, n)
	case flagCloseReceiver, flagCloseInitiator:
		if err := discard(br, n); err != nil {
			return err
		}
		if s := c.lookup(key); s != nil {
			s.remoteClosed()
			c.removeIfDone(s)
		}
	default: // the Reset flags; readHeader refused the rest
		if err := discard(br, n); err != nil {
			return err
		}
		if s := c.lookup(key); s != nil {
			c.resetStream(s, ErrStreamReset, false)
		}
	}
	return nil
}

func discard(br *bufio.Reader, n int) error {
	_, err := br.Discard(n)
	return noEOF(err)
}

func (c *conn) lookup(k streamKey) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[k]
}

// opened registers a stream the peer opened and queues it for
// AcceptStream, or resets it when the peer has MaxInboundStreams open or
// the accept queue is full.
func (c *conn) opened(id uint64) error {
	key := streamKey{id: id}
	c.mu.Lock()
	if _, dup := c.streams[key]; dup {
		c.mu.Unlock()
		return fmt.Errorf("%w: NewStream for open stream %d", ErrProtocol, id)
	}
	if c.inbound >= c.lim.inbound {
		err := c.queueReset(key)
		c.mu.Unlock()
		return err
	}
	s := newStream(c, key)
	c.streams[key] = s
	c.inbound++
	c.mu.Unlock()
	select {
	case c.accept <- s:
	default:
		c.resetStream(s, limitErr, true)
	}
	return nil
}

// limitErr ends a stream that held more unread data than allowed.
var limitErr = &network.StreamError{ErrorCode: network.StreamResourceLimitExceeded}

// deliver reads a data frame of n bytes into the stream it is for, or
// drops it when the stream is unknown, closed for reading, or over its
// limits (resetting the stream).
func (c *conn) deliver(br *bufio.Reader, key streamKey, n int) error {
	s := c.lookup(key)
	if s == nil || n == 0 || !s.accepting() {
		return discard(br, n)
	}
	if s.unreadBytes()+n > c.lim.stream || !c.makeRoom(s, n) {
		c.resetStream(s, limitErr, true)
		return discard(br, n)
	}
	buf := pool.Get(n)
	if _, err := io.ReadFull(br, buf); err != nil {
		pool.Put(buf)
		c.buffered.Add(-int64(n))
		return noEOF(err)
	}
	if !s.push(buf) {
		pool.Put(buf)
		c.buffered.Add(-int64(n))
	}
	return nil
}

// makeRoom counts n more unread bytes against the connection, resetting
// the streams holding most unread data while the connection's bound or
// its resource scope has no room. It reports false, counting nothing, when
// s itself had to go.
func (c *conn) makeRoom(s *stream, n int) bool {
	for int(c.buffered.Load())+n > c.lim.conn || !c.reserve(n) {
		victim := c.largest()
		if victim == nil || victim == s {
			return false
		}
		c.resetStream(victim, limitErr, true)
	}
	c.buffered.Add(int64(n))
	return true
}

// largest returns the open stream holding most unread data, nil if none
// holds any.
func (c *conn) largest() *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *stream
	most := 0
	for _, s := range c.streams {
		if u := s.unreadBytes(); u > most {
			best, most = s, u
		}
	}
	return best
}

// reserve makes sure the span holds room for the unread data plus n
// bytes, growing or shrinking the reservation in steps of reserveStep.
func (c *conn) reserve(n int) bool {
	if c.span == nil {
		return true
	}
	need := int(c.buffered.Load()) + n
	if need <= c.reserved {
		if spare := c.reserved - need; spare > 2*reserveStep {
			give := spare - spare%reserveStep - reserveStep
			c.span.ReleaseMemory(give)
			c.reserved -= give
		}
		return true
	}
	step := (need - c.reserved + reserveStep - 1) / reserveStep * reserveStep
	prio := network.ReservationPriorityMedium
	if c.reserved == 0 {
		prio = network.ReservationPriorityAlways
	}
	if err := c.span.ReserveMemory(step, prio); err != nil {
		return false
	}
	c.reserved += step
	return true
}
