package libnet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/libnet/internal/wire"
)

// smallBuf is the size in bytes of the buffer each connection owns: a frame
// that begins on a quiet connection is read into it first, and one that
// fits is handled from it with no other buffer and one read.
const smallBuf = 16 << 10

// readStep is the size in bytes of a pooled buffered reader and of one step
// of a frame buffer: a frame read holds at most the bytes of the frame that
// have arrived, smallBuf and two readSteps (the buffered reader and one
// partly filled step).
const readStep = 64 << 10

// Assembled frame buffers (frames over readStep) are pooled in classes of
// 2^minClass to 2^maxClass bytes; larger ones are left to the garbage
// collector.
const (
	minClass = 17 // the first power of two above readStep
	maxClass = 20
	keepBuf  = 1 << maxClass
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readStep) }}
	stepPool   = sync.Pool{New: func() any { return new([readStep]byte) }}
	// bigPools[i] holds *[]byte of capacity 2^(minClass+i), up to keepBuf.
	bigPools [maxClass - minClass + 1]sync.Pool
)

func bitsOf(n int) int { return bits.Len(uint(n - 1)) }

// errIdle ends the read loop of an inbound connection on which no frame
// began within its idle limit.
var errIdle = errors.New("libnet: connection idle")

// frameReader reads the frames of one connection. A quiet connection holds
// only its smallBuf: a frame's start is read into it, and a frame that does
// not fit goes on through a pooled buffered reader (fed first with what
// small holds) into pooled steps and, over readStep, an assembled buffer.
// Every buffer it holds is counted in the gauge.
//
// Deadlines: while it waits for a frame's first byte the read deadline is
// idle (none for 0). The rest of the frame must then arrive within frame
// (none for 0), counted from that byte's arrival or, for a frame whose
// start was read ahead with the previous one, from the first read after
// that frame's handler returned. A frame read ahead whole needs no read.
type frameReader struct {
	nc    net.Conn
	idle  time.Duration // wait for a frame's first byte; 0 means forever
	frame time.Duration // receipt of one frame; 0 means no limit
	max   int           // largest outer length accepted, in bytes
	gauge *atomic.Int64 // bytes of buffers held

	small  [smallBuf]byte
	sr, sw int // small[sr:sw] is read and not yet consumed

	src      prefixed          // what br reads: small's rest, then nc
	br       *bufio.Reader     // nil unless a frame went past small
	peeked   int               // bytes of br to discard when the frame is done
	steps    []*[readStep]byte // the frame so far, for frames over readStep
	big      *[]byte           // the assembled frame, for frames over readStep
	deadline bool              // a read deadline is set
	armed    bool              // the current frame's deadline is set
	lenb     [wire.OuterLen]byte
}

// prefixed reads pre, then nc.
type prefixed struct {
	pre []byte
	nc  net.Conn
}

func (p *prefixed) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.nc.Read(b)
}

// newFrameReader returns a reader of nc's frames; see frameReader for idle
// and frame. release must be called when it is done.
func newFrameReader(nc net.Conn, maxFrame int, idle, frame time.Duration, gauge *atomic.Int64) *frameReader {
	gauge.Add(smallBuf)
	return &frameReader{nc: nc, max: maxFrame, idle: idle, frame: frame, gauge: gauge, src: prefixed{nc: nc}}
}

// next returns the body of the next frame (the bytes after its outer
// length), valid until done is called. Errors: io.EOF for a clean end
// between frames, errIdle, ErrFrameTimeout (wrapped), ErrTruncated for a
// frame cut short, ErrPayloadTooLarge (wrapped), and socket errors such as
// net.ErrClosed. An empty frame (outer length 0) is returned as an empty
// body.
func (r *frameReader) next() ([]byte, error) {
	r.armed = false
	if r.br != nil && r.br.Buffered() == 0 && len(r.src.pre) == 0 {
		r.putReader()
	}
	if r.br != nil { // the next frame has begun in the buffered reader
		r.arm()
		if _, err := io.ReadFull(r.br, r.lenb[:]); err != nil {
			return nil, r.midFrame(err)
		}
		n, err := r.frameLen(binary.BigEndian.Uint32(r.lenb[:]))
		if err != nil {
			return nil, err
		}
		return r.body(n)
	}
	if r.sr == r.sw { // nothing read ahead: wait for a frame
		r.sr, r.sw = 0, 0
		r.setDeadline(r.idle)
		k, err := r.nc.Read(r.small[:])
		for k == 0 && err == nil {
			k, err = r.nc.Read(r.small[:])
		}
		if k == 0 {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, errIdle
			}
			return nil, err
		}
		r.sw = k
	}
	if r.sw-r.sr < wire.OuterLen { // part of the length: read on into small
		r.sw = copy(r.small[:], r.small[r.sr:r.sw])
		r.sr = 0
		r.arm()
		k, err := io.ReadAtLeast(r.nc, r.small[r.sw:], wire.OuterLen-r.sw)
		if err != nil {
			return nil, r.midFrame(err)
		}
		r.sw += k
	}
	n, err := r.frameLen(binary.BigEndian.Uint32(r.small[r.sr:]))
	if err != nil {
		return nil, err
	}
	r.sr += wire.OuterLen
	if n <= r.sw-r.sr { // whole in small; overwritten only by a later next
		b := r.small[r.sr : r.sr+n : r.sr+n]
		r.sr += n
		return b, nil
	}
	r.src.pre = r.small[r.sr:r.sw] // small is not read into until pre is consumed
	r.sr, r.sw = 0, 0
	r.getReader()
	r.arm()
	return r.body(n)
}

// frameLen checks an outer length.
func (r *frameReader) frameLen(u uint32) (int, error) {
	switch n := int(u); {
	case n > r.max:
		return 0, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrPayloadTooLarge, n, r.max)
	default:
		return n, nil
	}
}

// body reads a frame of n bytes through br.
func (r *frameReader) body(n int) ([]byte, error) {
	if n <= readStep { // fits the buffered reader: no copy
		b, err := r.br.Peek(n)
		if err != nil {
			return nil, r.midFrame(err)
		}
		r.peeked = n
		return b[:n:n], nil
	}
	for got := 0; got < n; {
		s := stepPool.Get().(*[readStep]byte)
		r.steps = append(r.steps, s)
		r.gauge.Add(readStep)
		k := min(n-got, readStep)
		if _, err := io.ReadFull(r.br, s[:k]); err != nil {
			return nil, r.midFrame(err)
		}
		got += k
	}
	b := r.getBig(n)
	for i, s := range r.steps {
		copy(b[i*readStep:], s[:])
	}
	r.putSteps()
	return b, nil
}

// midFrame maps an error that cut a begun frame short.
func (r *frameReader) midFrame(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrTruncated
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: rest of frame not received within %v", ErrFrameTimeout, r.frame)
	}
	return err
}

// done releases the frame returned by next.
func (r *frameReader) done() {
	if r.peeked > 0 {
		_, _ = r.br.Discard(r.peeked)
		r.peeked = 0
	}
	if r.big != nil {
		if c := cap(*r.big); c <= keepBuf {
			bigPools[bitsOf(c)-minClass].Put(r.big)
		}
		r.gauge.Add(-int64(cap(*r.big)))
		r.big = nil
	}
}

// release returns every buffer; the reader must not be used after.
func (r *frameReader) release() {
	r.done()
	r.putSteps()
	if r.br != nil {
		r.putReader()
	}
	r.gauge.Add(-smallBuf)
}

// arm sets the current frame's deadline once.
func (r *frameReader) arm() {
	if !r.armed {
		r.setDeadline(r.frame)
		r.armed = true
	}
}

func (r *frameReader) setDeadline(d time.Duration) {
	switch {
	case d > 0:
		_ = r.nc.SetReadDeadline(time.Now().Add(d))
		r.deadline = true
	case r.deadline:
		_ = r.nc.SetReadDeadline(time.Time{})
		r.deadline = false
	}
}

func (r *frameReader) getReader() {
	r.br = readerPool.Get().(*bufio.Reader)
	r.br.Reset(&r.src)
	r.gauge.Add(readStep)
}

func (r *frameReader) putReader() {
	r.br.Reset(nil)
	r.src.pre = nil
	readerPool.Put(r.br)
	r.br = nil
	r.gauge.Add(-readStep)
}

func (r *frameReader) putSteps() {
	for i, s := range r.steps {
		stepPool.Put(s)
		r.steps[i] = nil
	}
	r.gauge.Add(-int64(len(r.steps)) * readStep)
	r.steps = r.steps[:0]
}

// getBig returns a buffer of n bytes for an assembled frame, from a pool
// when n is at most keepBuf.
func (r *frameReader) getBig(n int) []byte {
	var bp *[]byte
	if n <= keepBuf {
		pool := &bigPools[bitsOf(n)-minClass]
		if bp, _ = pool.Get().(*[]byte); bp == nil {
			b := make([]byte, 1<<bitsOf(n))
			bp = &b
		}
	} else {
		b := make([]byte, n)
		bp = &b
	}
	r.big = bp
	r.gauge.Add(int64(cap(*bp)))
	return (*bp)[:n:n]
}
