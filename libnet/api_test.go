package libnet

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

// Every enum a caller hands to the public API is checked where it enters:
// an out-of-range value is refused with the sentinel named, and nothing
// panics afterwards (SetPeerLane(peer, LaneJSON) followed by MultiTell used
// to index past the per-lane frames).
func TestCallerEnumsOutOfRange(t *testing.T) {
	ctx := context.Background()
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{Lane: LaneRaw})
	var told atomic.Int32
	b.Handle("r", func(*Header, []byte, Respond) { told.Add(1) }, RouteOptions{})
	for _, l := range []Lane{LaneJSON, 3, 7, 255} {
		t.Run("SetPeerLane "+strconv.Itoa(int(l)), func(t *testing.T) {
			if err := a.SetPeerLane(b.Addr(), l); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("SetPeerLane(%d) = %v, want ErrBadConfig", l, err)
			}
			if got := a.LaneFor(b.Addr()); got != LaneRaw {
				t.Fatalf("lane after a refused SetPeerLane: %v", got)
			}
			for i, err := range a.MultiTell(ctx, []string{b.Addr(), b.Addr()}, Msg{Route: "r"}) {
				if err != nil {
					t.Fatalf("MultiTell[%d]: %v", i, err)
				}
			}
		})
		t.Run("Config.Lane "+strconv.Itoa(int(l)), func(t *testing.T) {
			if _, err := New(Config{Lane: l}); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("New(Lane %d) = %v", l, err)
			}
			if _, err := New(Config{Lane: LaneRaw, PeerLanes: map[string]Lane{"127.0.0.1:9": l}}); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("New(PeerLanes %d) = %v", l, err)
			}
		})
	}
	for _, c := range []Compression{CompressZstd + 1, 9, 255} {
		t.Run("Compression "+strconv.Itoa(int(c)), func(t *testing.T) {
			if _, err := New(Config{Lane: LaneRaw, Compression: c}); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("New(Compression %d) = %v", c, err)
			}
			m := Msg{Route: "r", Payload: make([]byte, 4096), Compression: c}
			if err := a.Tell(ctx, b.Addr(), m); !errors.Is(err, ErrBadMsg) {
				t.Fatalf("Tell: %v, want ErrBadMsg", err)
			}
			if _, err := a.Ask(ctx, b.Addr(), m); !errors.Is(err, ErrBadMsg) {
				t.Fatalf("Ask: %v, want ErrBadMsg", err)
			}
			for i, err := range a.MultiTell(ctx, []string{b.Addr()}, m) {
				if !errors.Is(err, ErrBadMsg) {
					t.Fatalf("MultiTell[%d]: %v, want ErrBadMsg", i, err)
				}
			}
			for i, r := range a.MultiAsk(ctx, []string{b.Addr()}, m) {
				if !errors.Is(r.Err, ErrBadMsg) {
					t.Fatalf("MultiAsk[%d]: %v, want ErrBadMsg", i, r.Err)
				}
			}
		})
	}
	for _, s := range []interface{ String() string }{Lane(9), Dir(0), Dir(9), Compression(9), DropReason(dropReasons), DropReason(255)} {
		if got := s.String(); got != "unknown" && got != "default" {
			t.Errorf("%T(%v).String() = %q", s, s, got)
		}
	}
	waitFor(t, "the MultiTells", func() bool { return told.Load() == 8 })
}

// Every []byte a decoder hands out has len == cap, so that an append by
// its owner allocates instead of writing over bytes it shares (the read
// buffer, the next frame, another field).
func TestDecodedSlicesHaveNoSpareCapacity(t *testing.T) {
	key, sk := testKeys(t)
	payload := []byte("a payload that is long enough to be compressed, compressed, compressed")
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"raw", Config{Lane: LaneRaw}},
		{"raw-signed", Config{Lane: LaneRaw, HashKey: key, SigningKey: sk, SignRaw: true}},
		{"raw-gzip", Config{Lane: LaneRaw, Compression: CompressGzip, CompressMin: -1}},
		{"raw-brotli", Config{Lane: LaneRaw, Compression: CompressBrotli, CompressMin: -1}},
		{"raw-zstd", Config{Lane: LaneRaw, Compression: CompressZstd, CompressMin: -1}},
		{"legacy-signed", Config{Lane: LaneLegacy, HashKey: key, SigningKey: sk}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newPair(t, tc.cfg, tc.cfg)
			got := make(chan string, 1)
			b.Handle("echo", func(h *Header, p []byte, respond Respond) {
				got <- capReport(p) + capReport(h.Owner)
				_ = respond(p)
			}, RouteOptions{})
			r, err := a.Ask(context.Background(), b.Addr(), Msg{Route: "echo", Payload: payload})
			if err != nil {
				t.Fatal(err)
			}
			if s := recv(t, got); s != "" {
				t.Fatalf("handler: %s", s)
			}
			if string(r.Payload) != string(payload) {
				t.Fatalf("reply %q", r.Payload)
			}
			if s := capReport(r.Payload) + capReport(r.Header.Owner); s != "" {
				t.Fatalf("reply: %s", s)
			}
		})
	}

	t.Run("decoders", func(t *testing.T) {
		aug := []byte(`{"PORT":1,"UUID":"550e8400-e29b-41d4-a716-446655440000","data":{"payload":{"value":"AAECAw==","dataType":"bb"},"route":"r"},"msgDir":"tell"}`)
		a, _, err := legacy.Parse(aug)
		if err != nil || len(a.Payload) != 4 {
			t.Fatalf("parse: %v %x", err, a.Payload)
		}
		js := []byte(`{"PORT":1,"UUID":"550e8400-e29b-41d4-a716-446655440000","data":{"some":"json"},"msgDir":"tell"}`)
		d, _, err := legacy.Parse(js)
		if err != nil || string(d.Data) != `{"some":"json"}` {
			t.Fatalf("parse: %v %s", err, d.Data)
		}
		f, err := wire.ParseFrame(container(2, 24, rawHdr(1, 0, 3), 3, []byte("abc"), 2, []byte("ow")), wire.Limits{Header: 64, Payload: 64})
		if err != nil {
			t.Fatal(err)
		}
		c := &codecs{limit: 1 << 20}
		defer c.close()
		var out []string
		for _, comp := range []Compression{CompressGzip, CompressBrotli, CompressZstd} {
			z, err := c.compress(comp, payload)
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.decompress(comp, z, 4096)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, capReport(p))
		}
		for _, s := range append(out, capReport(a.Payload), capReport(d.Data), capReport(f.Header), capReport(f.Data),
			capReport(f.Owner), capReport(f.Sig), capReport(f.Signed)) {
			if s != "" {
				t.Error(s)
			}
		}
	})
}

// capReport describes b if it has spare capacity, else returns "".
func capReport(b []byte) string {
	if len(b) != cap(b) {
		return "len " + strconv.Itoa(len(b)) + " cap " + strconv.Itoa(cap(b)) + "; "
	}
	return ""
}

// A sender that looked up a peer just before the peer was evicted queues to
// a writer that has stopped; the message goes out on a fresh connection
// instead of failing with ErrClosed while the endpoint is open.
func TestSendToEvictedPeerUsesFreshConnection(t *testing.T) {
	const n = 20
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{Lane: LaneRaw})
	var told atomic.Int32
	b.Handle("r", func(*Header, []byte, Respond) { told.Add(1) }, RouteOptions{})
	for i := range n {
		p, err := a.peer(b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		a.pool.Remove(b.Addr()) // evicted: its writer drains and exits
		a.mu.Unlock()
		recv(t, p.stopped)
		// The stale peer is what a concurrent sender still holds.
		a.mu.Lock()
		a.pool.Add(b.Addr(), p)
		a.mu.Unlock()
		if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "r"}); err != nil {
			t.Fatalf("tell %d through an evicted peer: %v", i, err)
		}
	}
	waitFor(t, "every tell", func() bool { return told.Load() == n })
	if s := a.Stats(); s.Peers != 1 || s.SendErrors != 0 {
		t.Fatalf("peers %d send errors %d", s.Peers, s.SendErrors)
	}
}
