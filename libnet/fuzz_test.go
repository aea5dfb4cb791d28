package libnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

func fuzzSeeds(f *testing.F) {
	f.Add(container(2, 24, rawHdr(1, 0, 3), 3, []byte("abc"), 0, nil))
	f.Add(container(2, 24, rawHdr(2, 8, 0), 0, nil, 0, nil))
	f.Add(container(1, wire.V1MinLen, make([]byte, wire.V1MinLen), 2, []byte("{}"), 0, nil))
	f.Add([]byte(`{"UUID":"550e8400-e29b-41d4-a716-446655440000","PORT":1,"msgDir":"tell","data":{"payload":{"value":"AA==","dataType":"bb"},"route":"r"}}`))
	f.Add([]byte{1})
	for _, data := range []string{
		`{"payload":{"type":"Buffer","data":[4,0,1,170]},"route":"binary/t"}`,
		`{"payload":{"data":[4,0,1,170],"type":"Buffer"},"route":"binary/t"}`,
		`{"value":"BAABqg==","dataType":"bb"}`,
		`{"type":"Buffer","data":[4,0,1,700]}`,
	} {
		f.Add([]byte(augJSON("1", "resp", data, 1, "5000.5")))
	}
}

// FuzzParseFrame checks that the container and header parsers never panic
// and that what they accept lies inside the input.
func FuzzParseFrame(f *testing.F) {
	fuzzSeeds(f)
	lim := wire.Limits{Header: 2048, Payload: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := wire.ParseFrame(b, lim)
		if err != nil {
			return
		}
		if len(fr.Header) > lim.Header || len(fr.Data) > lim.Payload || len(fr.Owner) > wire.MaxOwner || len(fr.Sig) > wire.MaxSignature {
			t.Fatalf("limits not enforced: %d %d %d %d", len(fr.Header), len(fr.Data), len(fr.Owner), len(fr.Sig))
		}
		if h, err := wire.ParseRaw(fr.Header); err == nil {
			if wire.RawLen(h.Flags, string(h.SenderID), string(h.Route)) != len(fr.Header) {
				t.Fatal("raw header length does not round-trip")
			}
		}
		_, _ = wire.ParseV1(fr.Header)
	})
}

// FuzzLegacyEnvelope checks the augData reader on arbitrary JSON.
func FuzzLegacyEnvelope(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		a, _, err := legacy.Parse(b)
		if err == nil && a.Binary && a.Data != nil {
			t.Fatal("binary envelope kept raw data")
		}
		if s := capReport(a.Payload) + capReport(a.Data); s != "" {
			t.Fatalf("spare capacity: %s", s)
		}
	})
}

// FuzzHandleFrame runs whole frames through a connection's receive path
// (parse, verify, decompress, envelope, dispatch) without a socket, on an
// endpoint with a hash key (legacy frames must then be signed) and on one
// without (every frame reaches the parsers).
func FuzzHandleFrame(f *testing.F) {
	fuzzSeeds(f)
	key, _ := testKeys(f)
	var conns []*conn
	for _, k := range [][]byte{key, nil} {
		e, err := New(Config{Lane: LaneRaw, HashKey: k, PayloadLimit: 1 << 16, Handler: func(*Header, []byte, Respond) {}})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { e.Close() })
		conns = append(conns, &conn{ep: e, remote: "fuzz"})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range conns {
			c.handle(b, len(b)+4)
		}
	})
}

// chunkConn is a connection whose reads return at most chunk bytes of
// stream each, then io.EOF; deadlines are ignored.
type chunkConn struct {
	net.Conn // nil: only Read and SetReadDeadline are used
	stream   []byte
	chunk    int
}

func (c *chunkConn) Read(b []byte) (int, error) {
	if len(c.stream) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), c.chunk)], c.stream)
	c.stream = c.stream[n:]
	return n, nil
}

func (c *chunkConn) SetReadDeadline(time.Time) error { return nil }

// FuzzFrameReader reads a byte stream, arriving in reads of at most chunk
// bytes, with a connection's frame reader and checks every frame and the
// final error against the stream's own framing, and that no read buffer is
// left held. Its seeds are small (a frame split over reads takes the same
// path as one over the 16 KiB small buffer); TestLargeFramesRoundTrip covers
// the sizes around the small buffer and the 64 KiB step.
func FuzzFrameReader(f *testing.F) {
	const maxFrame = 1 << 18
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1, 9}, uint16(5))
	f.Add([]byte{0, 0, 0, 0}, uint16(1))
	f.Add([]byte{0, 0, 0, 9, 1}, uint16(2))
	f.Add([]byte{0, 0, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0, 2, 1, 2, 0}, uint16(3))
	f.Add(binary.BigEndian.AppendUint32(nil, maxFrame+1), uint16(4))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint16) {
		server := &chunkConn{stream: stream, chunk: max(int(chunk), 1)}
		var gauge atomic.Int64
		r := newFrameReader(server, maxFrame, 0, 0, &gauge)
		off := 0
		var err error
		for {
			var b []byte
			if b, err = r.next(); err != nil {
				break
			}
			n := int(binary.BigEndian.Uint32(stream[off:]))
			if want := stream[off+4 : off+4+n]; !bytes.Equal(b, want) {
				t.Fatalf("frame at %d: %d bytes differ from the stream's %d", off, len(b), n)
			}
			off += 4 + n
			r.done()
		}
		r.release()
		rest := stream[off:]
		var want error
		switch {
		case len(rest) == 0:
			want = io.EOF
		case len(rest) < 4:
			want = ErrTruncated
		case binary.BigEndian.Uint32(rest) == 0:
			want = ErrEmptyFrame
		case binary.BigEndian.Uint32(rest) > maxFrame:
			want = ErrPayloadTooLarge
		default:
			want = ErrTruncated
		}
		if !errors.Is(err, want) {
			t.Fatalf("stream ended at %d of %d with %v, want %v", off, len(stream), err, want)
		}
		if g := gauge.Load(); g != 0 {
			t.Fatalf("read buffers %d after release", g)
		}
	})
}
