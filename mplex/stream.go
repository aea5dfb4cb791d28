package mplex

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	pool "github.com/libp2p/go-buffer-pool"
	"github.com/libp2p/go-libp2p/core/network"
)

// Stream errors.
var (
	// ErrStreamReset is returned by the reads and writes of a stream the
	// peer reset; mplex carries no error code. It wraps network.ErrReset.
	ErrStreamReset = fmt.Errorf("mplex: stream reset by the peer: %w", network.ErrReset)
	// ErrWriteClosed is returned by Write after CloseWrite or Close.
	ErrWriteClosed = errors.New("mplex: stream closed for writing")
	// ErrReadClosed is returned by Read after CloseRead or Close.
	ErrReadClosed = errors.New("mplex: stream closed for reading")
)

// errDeadline is returned when a read or write deadline passes; it
// reports Timeout() true.
var errDeadline = os.ErrDeadlineExceeded

// stream is one mplex stream, a network.MuxedStream.
type stream struct {
	c   *conn
	key streamKey

	readable chan struct{} // one-slot: data arrived
	readEnd  chan struct{} // closed once reads no longer wait: the peer closed, or CloseRead
	gone     chan struct{} // closed when the stream is reset or the conn closes
	rdl, wdl deadline

	mu        sync.Mutex
	chunks    [][]byte // unread frame payloads, pooled buffers
	off       int      // bytes of chunks[0] already read
	unread    int      // bytes left in chunks
	remoteEOF bool     // the peer closed its side
	readShut  bool     // CloseRead or Close was called
	readEnded bool     // readEnd is closed
	writeShut bool     // CloseWrite or Close was called
	err       error    // why the stream ended (reset, conn closed)
	fromConn  bool     // err came from the connection, not a reset
	// announced: the peer knows the stream (it opened it, or sendLoop took
	// its NewStream frame), so a Reset must reach it.
	announced bool
}

var _ network.MuxedStream = (*stream)(nil)

func newStream(c *conn, key streamKey) *stream {
	return &stream{
		c: c, key: key, announced: !key.local,
		readable: make(chan struct{}, 1), readEnd: make(chan struct{}), gone: make(chan struct{}),
	}
}

func (s *stream) signal() {
	select {
	case s.readable <- struct{}{}:
	default:
	}
}

// Read copies unread data into p. It returns io.EOF once the peer closed
// its side and all its data was read. Concurrent reads each see the EOF,
// the reset or the deadline.
func (s *stream) Read(p []byte) (int, error) {
	for {
		s.mu.Lock()
		n, err, wait := s.readLocked(p)
		more := s.unread > 0
		s.mu.Unlock()
		if n > 0 {
			s.c.buffered.Add(-int64(n))
			if more {
				s.signal() // for another concurrent reader
			}
		}
		if !wait {
			return n, err
		}
		select {
		case <-s.readable:
		case <-s.readEnd:
		case <-s.gone:
		case <-s.rdl.done():
			return 0, errDeadline
		}
	}
}

// readLocked reads what it can; wait reports that nothing is there yet.
func (s *stream) readLocked(p []byte) (n int, err error, wait bool) {
	switch {
	case s.err != nil && !s.fromConn:
		return 0, s.err, false
	case s.readShut:
		return 0, ErrReadClosed, false
	case len(p) == 0:
		return 0, nil, false
	}
	for n < len(p) && len(s.chunks) > 0 {
		c := copy(p[n:], s.chunks[0][s.off:])
		n += c
		s.off += c
		if s.off == len(s.chunks[0]) {
			pool.Put(s.chunks[0])
			s.chunks[0] = nil
			s.chunks = s.chunks[1:]
			s.off = 0
		}
	}
	s.unread -= n
	switch {
	case n > 0:
		return n, nil, false
	case s.remoteEOF:
		return 0, io.EOF, false
	case s.err != nil:
		return 0, s.err, false
	}
	return 0, nil, true
}

// Write queues p in frames of at most 256 KiB and returns once they are
// queued, as go-yamux does; the frames are written in order. A write
// deadline, set before or during the call, bounds the wait for room in the
// connection's queue.
func (s *stream) Write(p []byte) (int, error) {
	flag := byte(flagMessageReceiver)
	if s.key.local {
		flag = flagMessageInitiator
	}
	written := 0
	for {
		if err := s.writable(); err != nil {
			return written, err
		}
		if len(p) == 0 {
			return written, nil
		}
		chunk := p[:min(len(p), maxWriteFrame)]
		if err := s.c.writeFrame(s, flag, chunk, s.wdl.done()); err != nil {
			return written, s.writeErr(err)
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
}

func (s *stream) writable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.writeShut:
		return ErrWriteClosed
	}
	return nil
}

// writeErr turns errGone into the reason the stream ended.
func (s *stream) writeErr(err error) error {
	if errors.Is(err, errGone) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	}
	return err
}

// CloseWrite sends Close: the peer reads io.EOF after the data written.
func (s *stream) CloseWrite() error {
	s.mu.Lock()
	if s.err != nil || s.writeShut {
		s.mu.Unlock()
		return nil
	}
	s.writeShut = true
	s.mu.Unlock()
	flag := byte(flagCloseReceiver)
	if s.key.local {
		flag = flagCloseInitiator
	}
	err := s.c.writeFrame(s, flag, nil, s.wdl.done())
	s.c.removeIfDone(s)
	if errors.Is(err, errGone) {
		return nil
	}
	return err
}

// CloseRead drops unread data, and data arriving later, and makes reads
// fail with ErrReadClosed. mplex cannot tell the peer.
func (s *stream) CloseRead() error {
	s.mu.Lock()
	s.readShut = true
	s.endReadLocked()
	freed := s.dropLocked()
	s.mu.Unlock()
	s.c.buffered.Add(-int64(freed))
	s.c.removeIfDone(s)
	return nil
}

// Close is CloseRead and CloseWrite; the stream is then forgotten, whether
// or not the peer closed its side.
func (s *stream) Close() error {
	s.CloseRead()
	return s.CloseWrite()
}

// Reset aborts the stream on both sides.
func (s *stream) Reset() error { return s.ResetWithError(0) }

// ResetWithError aborts the stream; mplex cannot carry the code, which
// only the local reads and writes report. It never waits: the Reset frame
// is queued ahead of the frames already queued, and the stream's own
// queued frames are dropped.
func (s *stream) ResetWithError(code network.StreamErrorCode) error {
	s.c.resetStream(s, &network.StreamError{ErrorCode: code}, true)
	return nil
}

func (s *stream) SetDeadline(t time.Time) error {
	s.rdl.set(t)
	s.wdl.set(t)
	return nil
}

func (s *stream) SetReadDeadline(t time.Time) error {
	s.rdl.set(t)
	return nil
}

func (s *stream) SetWriteDeadline(t time.Time) error {
	s.wdl.set(t)
	return nil
}

// reset ends the stream with err and frees its unread data. It reports
// whether the peer knows of the stream; if not, sendLoop will not announce
// it either.
func (s *stream) reset(err error) (announced bool) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	s.err = err
	freed := s.dropLocked()
	close(s.gone)
	announced = s.announced
	s.mu.Unlock()
	s.c.buffered.Add(-int64(freed))
	s.deadlinesStop()
	return announced
}

// sending reports whether sendLoop is to write a frame of the stream: not
// once the stream was reset. For its NewStream frame, it marks the stream
// announced.
func (s *stream) sending(open bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	if open {
		s.announced = true
	}
	return true
}

// connClosed ends the stream with its connection. Data already received
// stays readable.
func (s *stream) connClosed() {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err, s.fromConn = errStreamConnClosed, true
	close(s.gone)
	s.mu.Unlock()
	s.deadlinesStop()
}

func (s *stream) deadlinesStop() {
	s.rdl.stop()
	s.wdl.stop()
}

// dropLocked frees the unread data and returns its size.
func (s *stream) dropLocked() int {
	for i, b := range s.chunks {
		pool.Put(b)
		s.chunks[i] = nil
	}
	n := s.unread
	s.chunks, s.off, s.unread = nil, 0, 0
	return n
}

// push appends a frame's payload, which the stream now owns; false when
// the stream no longer takes data (the caller keeps buf).
func (s *stream) push(buf []byte) bool {
	s.mu.Lock()
	if s.err != nil || s.readShut || s.remoteEOF {
		s.mu.Unlock()
		return false
	}
	s.chunks = append(s.chunks, buf)
	s.unread += len(buf)
	s.mu.Unlock()
	s.signal()
	return true
}

// accepting reports whether data frames are still wanted.
func (s *stream) accepting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err == nil && !s.readShut && !s.remoteEOF
}

func (s *stream) unreadBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unread
}

func (s *stream) remoteClosed() {
	s.mu.Lock()
	s.remoteEOF = true
	s.endReadLocked()
	s.mu.Unlock()
}

// endReadLocked wakes every waiting reader for good: reads no longer wait.
func (s *stream) endReadLocked() {
	if !s.readEnded {
		s.readEnded = true
		close(s.readEnd)
	}
}

// done reports that this side closed its reads and its writes.
func (s *stream) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readShut && s.writeShut
}
