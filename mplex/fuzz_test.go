package mplex

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// fuzzConn is a net.Conn that reads the given pieces in turn, then io.EOF,
// and discards what is written.
type fuzzConn struct {
	mu     sync.Mutex
	pieces [][]byte
}

func (f *fuzzConn) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.pieces) > 0 && len(f.pieces[0]) == 0 {
		f.pieces = f.pieces[1:]
	}
	if len(f.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.pieces[0])
	f.pieces[0] = f.pieces[0][n:]
	return n, nil
}

func (f *fuzzConn) Write(p []byte) (int, error)      { return len(p), nil }
func (f *fuzzConn) Close() error                     { return nil }
func (f *fuzzConn) LocalAddr() net.Addr              { return nil }
func (f *fuzzConn) RemoteAddr() net.Addr             { return nil }
func (f *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (f *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzFrameReader feeds arbitrary bytes, split in two reads at an
// arbitrary point, to a connection with two streams of its own open and
// small limits. Whatever the bytes, the connection ends in an error or
// resets, never a panic or a hang, and holds no unread bytes it cannot
// account for.
func FuzzFrameReader(f *testing.F) {
	seed := func(frames ...[]byte) []byte {
		var b []byte
		for _, fr := range frames {
			b = append(b, fr...)
		}
		return b
	}
	f.Add(seed(appendFrame(nil, 0, flagNewStream, []byte("0")), appendFrame(nil, 0, flagMessageInitiator, []byte("hello")), appendFrame(nil, 0, flagCloseInitiator, nil)), uint16(3))
	f.Add(seed(appendFrame(nil, 0, flagMessageReceiver, []byte("to ours")), appendFrame(nil, 1, flagResetReceiver, nil)), uint16(1))
	f.Add(seed(appendFrame(nil, 7, flagNewStream, nil), appendFrame(nil, 7, flagMessageInitiator, make([]byte, 200))), uint16(0))
	f.Add(seed(appendFrame(nil, 2, flagNewStream, nil), appendFrame(nil, 2, flagNewStream, nil)), uint16(2))
	f.Add([]byte{0x07, 0x00}, uint16(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint16(5))
	f.Add([]byte{0x02, 0x81, 0x80, 0x40}, uint16(2))
	f.Add(seed(appendFrame(nil, 9, flagMessageInitiator, []byte("unknown stream")), appendFrame(nil, 9, flagCloseInitiator, nil)), uint16(4))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		at := int(split) % (len(data) + 1)
		nc := &fuzzConn{pieces: [][]byte{data[:at], data[at:]}}
		tr := &Transport{MaxInboundStreams: 4, MaxStreamBuffer: 128, MaxConnBuffer: 256}
		mc, err := tr.NewConn(nc, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := mc.(*conn)
		var wg sync.WaitGroup
		drain := func(s io.ReadWriteCloser) {
			defer wg.Done()
			io.Copy(io.Discard, s)
			s.Close()
		}
		for range 2 {
			s, err := c.OpenStream(context.Background())
			if err != nil {
				break // the reader may have ended the connection already
			}
			wg.Add(1)
			go drain(s)
		}
		for {
			s, err := c.AcceptStream()
			if err != nil {
				break
			}
			wg.Add(1)
			go drain(s)
		}
		wg.Wait()
		c.Close()
	})
}
