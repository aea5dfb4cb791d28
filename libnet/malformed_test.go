package libnet

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/libnet/internal/wire"
)

func outer(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// container lays out a headered frame with the given lengths and bytes.
func container(version uint8, hdrLen uint32, hdr []byte, dataLen uint32, data []byte, ownerLen uint32, owner []byte) []byte {
	le := binary.LittleEndian
	b := []byte{wire.Marker, version}
	b = le.AppendUint32(b, hdrLen)
	b = append(b, hdr...)
	b = le.AppendUint32(b, dataLen)
	b = append(b, data...)
	b = le.AppendUint32(b, ownerLen)
	b = append(b, owner...)
	return le.AppendUint32(b, 0)
}

func rawHdr(dir, flags uint8, rawLen uint32) []byte {
	h := make([]byte, 24)
	h[16], h[17] = dir, flags
	binary.LittleEndian.PutUint32(h[20:], rawLen)
	return h
}

// goodFrame is an unsigned raw tell with no route and payload "ok".
func goodFrame() []byte { return outer(container(2, 24, rawHdr(1, 0, 2), 2, []byte("ok"), 0, nil)) }

// A frame that is rejected whole is dropped and counted, and the next frame
// on the same connection is served, as lib-net's listener skips a frame it
// cannot verify or validate (shardus_net_listener.rs receive @2832f1d).
// Only a frame that cannot be delimited closes the connection.
func TestMalformedFrames(t *testing.T) {
	v1 := func(msgLen uint32) []byte {
		h := make([]byte, wire.V1MinLen)
		binary.LittleEndian.PutUint32(h[16:], msgLen)
		return h
	}
	for _, tc := range []struct {
		name   string
		bytes  []byte
		want   error
		closes bool
	}{
		{"lying outer length", binary.BigEndian.AppendUint32(nil, 0xffffffff), ErrPayloadTooLarge, true},
		{"truncated frame", binary.BigEndian.AppendUint32(nil, 100), ErrTruncated, true},
		{"zero outer length", outer(nil), ErrEmptyFrame, false},
		{"unknown lane", outer([]byte{7, 1, 2}), ErrUnknownLane, false},
		{"unknown version", outer(container(9, 0, nil, 0, nil, 0, nil)), ErrUnknownVersion, false},
		{"header over limit", outer(container(2, 5000, make([]byte, 5000), 0, nil, 0, nil)), ErrHeaderTooLarge, false},
		{"header length lies", outer(container(2, 24, rawHdr(1, 0, 0), 0, nil, 0, nil)[:20]), ErrLengthMismatch, false},
		{"owner too long", outer(container(2, 24, rawHdr(1, 0, 0), 0, nil, 33, make([]byte, 33))), ErrFieldTooLarge, false},
		{"raw bad direction", outer(container(2, 24, rawHdr(9, 0, 0), 0, nil, 0, nil)), ErrMalformed, false},
		{"raw length lies", outer(container(2, 24, rawHdr(1, 0, 5), 3, []byte("abc"), 0, nil)), ErrLengthMismatch, false},
		{"raw over payload limit", outer(container(2, 24, rawHdr(1, 1, 1<<30), 3, []byte("abc"), 0, nil)), ErrPayloadTooLarge, false},
		{"v1 message_length lies", outer(container(1, wire.V1MinLen, v1(9), 2, []byte("{}"), 0, nil)), ErrLengthMismatch, false},
		{"v1 bad json", outer(container(1, wire.V1MinLen, v1(2), 2, []byte("{x"), 0, nil)), ErrBadEnvelope, false},
		{"plain lane bad json", outer([]byte(`{"UUID":1`)), ErrBadEnvelope, false},
		{"gzip garbage", outer(container(2, 24, rawHdr(1, 1, 3), 3, []byte("abc"), 0, nil)), ErrMalformed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make(chan error, 4)
			got := make(chan string, 2)
			b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw,
				Handler: func(_ *Header, p []byte, _ Respond) { got <- string(p) },
				OnError: func(err error) { errs <- err }})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			c := dialRaw(t, b.Addr(), tc.bytes)
			if tc.closes {
				c.(*net.TCPConn).CloseWrite()
			}
			err = recv(t, errs)
			var fe *FrameError
			if !errors.As(err, &fe) || !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.want != ErrPayloadTooLarge && errors.Is(err, ErrPayloadTooLarge) {
				t.Fatalf("error %v also reports payload too large", err)
			}
			if d := b.Stats().Drops[DropBadFrame]; d != 1 {
				t.Fatalf("bad frames counted %d", d)
			}
			if tc.closes {
				if _, err := io.ReadAll(c); err != nil { // closed cleanly by the endpoint
					t.Fatalf("read after reject: %v", err)
				}
			} else if _, err := c.Write(goodFrame()); err != nil {
				t.Fatal(err)
			} else if p := recv(t, got); p != "ok" {
				t.Fatalf("next frame on the connection: %q", p)
			}
			// The listener still serves other connections.
			a, _ := New(Config{Lane: LaneRaw})
			defer a.Close()
			if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "x", Payload: []byte("ok")}); err != nil {
				t.Fatal(err)
			}
			if p := recv(t, got); p != "ok" {
				t.Fatalf("frame on a new connection: %q", p)
			}
		})
	}
}

func TestBadSignatureIsRejectedAndCounted(t *testing.T) {
	key, sk := testKeys(t)
	_, other, _ := ed25519.GenerateKey(nil)
	var mu sync.Mutex
	var got []error
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, HashKey: key, Handler: func(*Header, []byte, Respond) {},
		OnError: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wrongKey := append([]byte(nil), key...)
	wrongKey[0] ^= 1
	a, _ := New(Config{Lane: LaneRaw, HashKey: wrongKey, SigningKey: other, SignRaw: true})
	defer a.Close()
	good, _ := New(Config{Lane: LaneRaw, HashKey: key, SigningKey: sk, SignRaw: true})
	defer good.Close()
	if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "x"}); err != nil {
		t.Fatal(err)
	}
	// A good frame on another connection still arrives; a reply proves order.
	done := make(chan struct{})
	b.Handle("ping", func(_ *Header, _ []byte, r Respond) { r(nil); close(done) }, RouteOptions{})
	if _, err := good.Ask(context.Background(), b.Addr(), Msg{Route: "ping"}); err != nil {
		t.Fatal(err)
	}
	recv(t, done)
	for b.Stats().Drops[DropBadSignature] != 1 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var se *SignatureError
	if len(got) != 1 || !errors.As(got[0], &se) || !errors.Is(got[0], ErrBadSignature) || len(se.Owner) != 32 {
		t.Fatalf("errors %v", got)
	}
}
