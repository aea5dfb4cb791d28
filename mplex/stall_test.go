package mplex

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// hang is how long the tests below wait for something that must happen
// before failing: a guard against a hang, not a timing requirement.
const hang = 20 * time.Second

// within runs f and fails the test if it has not returned within hang.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hang):
		t.Fatalf("%s still blocked after %v", what, hang)
	}
}

// closeReason waits for c to close and returns why.
func closeReason(t *testing.T, c *conn) error {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(hang):
		c.mu.Lock()
		n := len(c.resets)
		c.mu.Unlock()
		t.Fatalf("connection still open after %v, %d resets queued", hang, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// refusals returns n NewStream frames of stream 1, two bytes each: past
// MaxInboundStreams each is refused and answered with a Reset.
func refusals(n int) []byte {
	b := make([]byte, 0, 2*n)
	for range n {
		b = appendFrame(b, 1, flagNewStream, nil)
	}
	return b
}

// A peer that holds MaxInboundStreams and sends 2 MB of NewStream frames
// while never reading gets its connection closed once MaxQueuedResets
// Resets wait to be written.
func TestRefusedStreamsBounded(t *testing.T) {
	a, b := net.Pipe() // b is never read
	mc, err := (&Transport{MaxInboundStreams: 1, WriteTimeout: time.Hour}).NewConn(a, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	defer func() { mc.Close(); b.Close() }()
	if _, err := b.Write(appendFrame(nil, 0, flagNewStream, nil)); err != nil {
		t.Fatal(err)
	}
	input := refusals(1 << 20)
	var n int
	within(t, "the peer's write", func() { n, err = b.Write(input) })
	if err == nil {
		t.Fatalf("the connection read all %d bytes of refused NewStreams and stayed open", len(input))
	}
	if reason := closeReason(t, c); !errors.Is(reason, ErrTooManyResets) {
		t.Fatalf("closed with %v, want ErrTooManyResets", reason)
	}
	// Resets are written in batches: one, of at most MaxQueuedResets, is
	// stuck in the write, MaxQueuedResets more wait, and one overflows;
	// and the reader's 4 KiB buffer may hold more unread.
	if max := 2*(2*MaxQueuedResets+2) + 4096; n > max {
		t.Fatalf("the connection read %d bytes before closing, want at most %d", n, max)
	}
}

// Streams the peer opens and this side resets, as a host resets a stream
// of an unknown protocol, leave the connection at once; with the peer not
// reading, their Resets wait, and once MaxQueuedResets wait the next one
// closes the connection. No Reset waits.
func TestLocalResetsBounded(t *testing.T) {
	a, b := net.Pipe() // b is never read
	mc, err := (&Transport{WriteTimeout: time.Hour}).NewConn(a, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	defer func() { mc.Close(); b.Close() }()
	resets := 0
	within(t, "opening and resetting streams", func() {
		for id := range uint64(MaxQueuedResets + 2) {
			if _, err := b.Write(appendFrame(nil, id, flagNewStream, nil)); err != nil {
				return
			}
			s, err := c.AcceptStream()
			if err != nil {
				return
			}
			s.Reset()
			resets++
			for resets == 1 && queuedResets(c) > 0 {
				time.Sleep(time.Millisecond) // the first Reset is the one stuck in the write
			}
		}
	})
	if reason := closeReason(t, c); !errors.Is(reason, ErrTooManyResets) {
		t.Fatalf("closed with %v after %d resets, want ErrTooManyResets", reason, resets)
	}
	// one Reset is stuck in the write, MaxQueuedResets wait, one overflows
	if resets != MaxQueuedResets+2 {
		t.Fatalf("%d streams reset before the connection closed, want %d", resets, MaxQueuedResets+2)
	}
}

// With the peer not reading, a write to the connection that does not
// complete within WriteTimeout closes the connection with
// ErrWriteTimeout, and the writers waiting on the full queue fail.
func TestWriteTimeout(t *testing.T) {
	a, b := net.Pipe() // b is never read
	mc, err := (&Transport{WriteTimeout: 200 * time.Millisecond}).NewConn(a, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*conn)
	defer func() { mc.Close(); b.Close() }()
	s, err := mc.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	within(t, "a write to a full queue", func() {
		msg := make([]byte, 1024)
		for werr == nil {
			_, werr = s.Write(msg)
		}
	})
	if !errors.Is(werr, ErrConnClosed) || !errors.Is(werr, network.ErrReset) {
		t.Fatalf("write: %v, want the connection closed", werr)
	}
	if reason := closeReason(t, c); !errors.Is(reason, ErrWriteTimeout) {
		t.Fatalf("closed with %v, want ErrWriteTimeout", reason)
	}
}

// gatedPeer is a raw peer over a net.Pipe that reads nothing until open
// is called, so frames pile up in the connection's queue.
type gatedPeer struct {
	*rawPeer
	gate chan struct{}
}

func newGatedPeer(t *testing.T, tr *Transport, isServer bool) (*conn, *gatedPeer) {
	t.Helper()
	a, b := net.Pipe()
	mc, err := tr.NewConn(a, isServer, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedPeer{&rawPeer{t: t, nc: b, frames: make(chan frame, 4096)}, make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.frames)
		select {
		case <-p.gate:
		case <-t.Context().Done():
			return
		}
		br := bufio.NewReader(b)
		for {
			h, n, err := readHeader(br)
			if err != nil {
				return
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(br, data); err != nil {
				return
			}
			p.frames <- frame{h.id, h.flag, data}
		}
	}()
	t.Cleanup(func() {
		mc.Close()
		b.Close()
		<-done
	})
	return mc.(*conn), p
}

func (p *gatedPeer) open() { close(p.gate) }

// fill makes the connection's send queue full, with the first frame
// queued stuck in the write to the unread pipe: it writes on a stream of
// its own until a write has waited 50 ms for room. It returns that stream,
// its deadline cleared.
func fill(t *testing.T, c *conn) network.MuxedStream {
	t.Helper()
	s, err := c.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for {
		s.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := s.Write([]byte("filler"))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s.SetWriteDeadline(time.Time{})
	return s
}

// Reset never waits for room in the send queue, for a stream this side
// opened or one the peer opened; once the peer reads, the Resets come
// before the frames queued earlier, and no frame of a reset stream
// follows its Reset.
func TestResetNeverWaits(t *testing.T) {
	c, p := newGatedPeer(t, &Transport{}, true)
	p.send(1, flagNewStream, nil)
	in := accept(t, c)
	out, err := c.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// out's NewStream is the frame stuck in the write: it is announced
	out.Write([]byte("queued on out"))
	in.Write([]byte("queued on in"))
	filler := fill(t, c)
	within(t, "Reset with a full send queue", func() {
		in.Reset()
		out.ResetWithError(7)
	})
	var se *network.StreamError
	if _, err := out.Write([]byte("x")); !errors.As(err, &se) || se.ErrorCode != 7 {
		t.Fatalf("write after reset: %v", err)
	}
	p.open()
	first := p.next()
	if first.id != 0 || first.flag != flagNewStream {
		t.Fatalf("first frame %+v, want out's NewStream", first)
	}
	type key struct {
		id   uint64
		flag byte
	}
	want := map[key]bool{{1, flagResetReceiver}: true, {0, flagResetInitiator}: true}
	for range 2 {
		f := p.next()
		if !want[key{f.id, f.flag}] || len(f.data) != 0 {
			t.Fatalf("frame %+v, want the two Resets before the queued frames", f)
		}
		delete(want, key{f.id, f.flag})
	}
	if _, err := filler.Write([]byte("marker")); err != nil {
		t.Fatal(err)
	}
	for {
		f := p.next()
		if string(f.data) == "marker" {
			break
		}
		if f.flag != flagNewStream && string(f.data) != "filler" {
			t.Fatalf("frame %+v after the Resets, want only the filling stream's", f)
		}
	}
}

// A stream reset while its NewStream frame still waits in the queue is
// never announced: the peer sees none of its frames, not even the Reset.
func TestResetBeforeAnnounced(t *testing.T) {
	c, p := newGatedPeer(t, &Transport{}, false)
	first, err := c.OpenStream(context.Background()) // stuck in the write
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("never sent"))
	s.CloseWrite()
	within(t, "Reset", func() { s.Reset() })
	first.Write([]byte("marker"))
	p.open()
	for {
		f := p.next()
		if f.id == 1 {
			t.Fatalf("frame %+v of a stream reset before it was announced", f)
		}
		if string(f.data) == "marker" {
			break
		}
	}
}

// A deadline set while a Read or a Write already waits ends the wait, as
// net.Conn requires.
func TestDeadlineSetWhileWaiting(t *testing.T) {
	c, p := newGatedPeer(t, &Transport{WriteTimeout: time.Hour}, true)
	p.send(0, flagNewStream, nil)
	s := accept(t, c)
	fill(t, c)
	for _, tt := range []struct {
		name string
		set  func(time.Time) error
		call func() error
	}{
		{"read", s.SetReadDeadline, func() error { _, err := s.Read(make([]byte, 1)); return err }},
		{"write", s.SetWriteDeadline, func() error { _, err := s.Write([]byte("x")); return err }},
		{"both", s.SetDeadline, func() error { _, err := s.Read(make([]byte, 1)); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.set(time.Time{})
			errc := make(chan error, 1)
			go func() { errc <- tt.call() }()
			time.Sleep(20 * time.Millisecond) // let the call start waiting; either order passes
			tt.set(time.Now().Add(10 * time.Millisecond))
			select {
			case err := <-errc:
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("%s: %v, want a timeout", tt.name, err)
				}
			case <-time.After(hang):
				t.Fatalf("a %s waiting when the deadline was set never returned", tt.name)
			}
		})
	}
}

// Every reader waiting on a stream sees the peer's Close as io.EOF, and
// every reader sees a reset.
func TestConcurrentReaders(t *testing.T) {
	const readers = 4
	for _, tt := range []struct {
		name string
		flag byte
		want error
	}{
		{"close", flagCloseInitiator, io.EOF},
		{"reset", flagResetInitiator, ErrStreamReset},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, p := newRawPeer(t, &Transport{})
			p.send(3, flagNewStream, nil)
			s := accept(t, c)
			errc := make(chan error, readers)
			for range readers {
				go func() {
					_, err := s.Read(make([]byte, 1))
					errc <- err
				}()
			}
			time.Sleep(20 * time.Millisecond) // let the readers wait; either order passes
			p.send(3, tt.flag, nil)
			for i := range readers {
				select {
				case err := <-errc:
					if !errors.Is(err, tt.want) {
						t.Fatalf("reader %d: %v, want %v", i, err, tt.want)
					}
				case <-time.After(hang):
					t.Fatalf("%d of %d readers never saw the %s", readers-i, readers, tt.name)
				}
			}
		})
	}
}

// Streams closed on this side are forgotten although the peer never closes
// its side, those this side opened as well as those the peer opened; what
// the peer sends on them later is dropped, and ids are not reused.
func TestClosedStreamsForgotten(t *testing.T) {
	c, p := newRawPeer(t, &Transport{MaxInboundStreams: 2})
	for id := range uint64(100) {
		s, err := c.OpenStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f := p.next(); f.id != id || f.flag != flagNewStream {
			t.Fatalf("frame %+v, want NewStream %d", f, id)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if f := p.next(); f.id != id || f.flag != flagCloseInitiator {
			t.Fatalf("frame %+v, want Close %d", f, id)
		}
		p.send(id, flagMessageReceiver, []byte("late reply"))
	}
	for id := range uint64(10) { // MaxInboundStreams is 2
		p.send(id, flagNewStream, nil)
		s := acceptWithin(t, c, p)
		s.Close()
		if f := p.next(); f.id != id || f.flag != flagCloseReceiver {
			t.Fatalf("frame %+v, want Close %d", f, id)
		}
		p.send(id, flagMessageInitiator, []byte("late"))
	}
	// a round trip: the frames above have all been read
	p.send(50, flagNewStream, nil)
	acceptWithin(t, c, p)
	if n := openStreams(c); n != 1 {
		t.Fatalf("%d streams open, want the last accepted one only", n)
	}
	if got := c.buffered.Load(); got != 0 {
		t.Fatalf("connection holds %d unread bytes, want 0", got)
	}
}

// acceptWithin accepts the stream the peer just opened, failing if the
// connection refused it with a Reset instead.
func acceptWithin(t *testing.T, c *conn, p *rawPeer) network.MuxedStream {
	t.Helper()
	select {
	case s := <-c.accept:
		return s
	case f := <-p.frames:
		t.Fatalf("frame %+v instead of an accepted stream", f)
	case <-time.After(hang):
		t.Fatal("no stream accepted")
	}
	return nil
}

func queuedResets(c *conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.resets)
}
