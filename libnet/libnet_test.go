package libnet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Test vectors from lib-net crypto/src/lib.rs tests (test_hash, test_sign),
// produced there by shardus-crypto-utils.
const (
	vecHashKey = "64f152869ca2d473e4ba64ab53f49ccdb2edae22da192c126850970e788af347"
	vecSecret  = "c3774b92cc8850fb4026b073081290b82cab3c0f66cac250b4d710ee9aaf83ed8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testKeys(t testing.TB) ([]byte, ed25519.PrivateKey) {
	return mustHex(t, vecHashKey), ed25519.PrivateKey(mustHex(t, vecSecret))
}

// newPair starts two listening endpoints; one on the legacy lane gets the
// test keys unless it has its own, since that lane needs them.
func newPair(t testing.TB, cfgA, cfgB Config) (a, b *Endpoint) {
	t.Helper()
	for _, c := range []*Config{&cfgA, &cfgB} {
		if c.Lane == LaneLegacy && c.SigningKey == nil {
			c.HashKey, c.SigningKey = testKeys(t)
		}
	}
	cfgA.ListenAddr, cfgB.ListenAddr = "127.0.0.1:0", "127.0.0.1:0"
	if cfgA.SenderID == "" {
		cfgA.SenderID = "node-a"
	}
	if cfgB.SenderID == "" {
		cfgB.SenderID = "node-b"
	}
	var err error
	if a, err = New(cfgA); err != nil {
		t.Fatal(err)
	}
	if b, err = New(cfgB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestHashAndSignVectors(t *testing.T) {
	key, sk := testKeys(t)
	s := newSigner(key, sk)
	sum := s.sum([]byte("hello world"))
	if got := hex.EncodeToString(sum[:]); got != "463bad7a09d224af5251be7d979cc8db3df37c422ea38d6c3986c54ee9c8f116" {
		t.Fatalf("hash = %s", got)
	}
	msg := mustHex(t, "1234567890abcdef")
	want := "cd1159381c39554a07309b0a0803a0cef4a85eb78685086f8ccbd06fe846bbd260bd8cd1ae9c4eff6af672be72c2a18d561793a301986276af999f2fd49477011234567890abcdef"
	if got := hex.EncodeToString(append(ed25519.Sign(sk, msg), msg...)); got != want {
		t.Fatalf("combined signature = %s", got)
	}
}

func TestRoundTripLanes(t *testing.T) {
	key, sk := testKeys(t)
	for _, tc := range []struct {
		name string
		lane Lane
		comp Compression
		sign bool
	}{
		{"raw", LaneRaw, CompressNone, false},
		{"raw-signed-zstd", LaneRaw, CompressZstd, true},
		{"raw-gzip", LaneRaw, CompressGzip, false},
		{"raw-brotli", LaneRaw, CompressBrotli, true},
		{"legacy", LaneLegacy, CompressNone, false},
		{"legacy-signed-gzip", LaneLegacy, CompressGzip, true},
		{"legacy-signed-brotli", LaneLegacy, CompressBrotli, true},
		{"legacy-gzip-to-1.3.11", LaneLegacy, CompressGzip, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Lane: tc.lane, Compression: tc.comp, CompressMin: -1}
			if tc.sign {
				cfg.HashKey, cfg.SigningKey, cfg.SignRaw, cfg.RequireSigned = key, sk, true, true
			}
			a, b := newPair(t, cfg, cfg)
			want := tc.comp
			if tc.lane == LaneLegacy && tc.sign { // peers known to decompress (lib-net 1.3.10 and older)
				a.SetLegacyCompress(b.Addr(), true)
				b.SetLegacyCompress(a.Addr(), true)
			} else if tc.lane == LaneLegacy { // lib-net 1.3.11 and later read only plain data
				want = CompressNone
			}
			got := make(chan string, 1)
			b.Handle("echo", func(h *Header, p []byte, respond Respond) {
				if h.Dir == DirTell {
					got <- h.SenderID + "/" + h.Route + "/" + string(p)
					return
				}
				if err := respond(append([]byte("re:"), p...)); err != nil {
					t.Error(err)
				}
			}, RouteOptions{})
			ctx := context.Background()
			payload := bytes.Repeat([]byte("payload "), 300)
			if err := a.Tell(ctx, b.Addr(), Msg{Route: "echo", Payload: payload}); err != nil {
				t.Fatal(err)
			}
			if s := recv(t, got); s != "node-a/echo/"+string(payload) {
				t.Fatalf("tell delivered %.40q", s)
			}
			r, err := a.Ask(ctx, b.Addr(), Msg{Route: "echo", Payload: payload})
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Payload) != "re:"+string(payload) || r.Header.Dir != DirResp || r.Header.SenderID != "node-b" {
				t.Fatalf("reply %v %.40q", r.Header.Dir, r.Payload)
			}
			if tc.sign && !bytes.Equal(r.Header.Owner, sk.Public().(ed25519.PublicKey)) {
				t.Fatalf("reply owner %x", r.Header.Owner)
			}
			if r.Header.Compression != want {
				t.Fatalf("reply compression %v, want %v", r.Header.Compression, want)
			}
			sa, sb := a.Stats(), b.Stats()
			if tc.lane == LaneRaw && (sa.Base64Ops+sa.JSONOps+sb.Base64Ops+sb.JSONOps) != 0 {
				t.Fatalf("raw lane did base64/JSON work: %+v %+v", sa, sb)
			}
			if tc.lane == LaneLegacy && sb.Base64Ops == 0 {
				t.Fatal("legacy lane counted no base64")
			}
		})
	}
}

func TestAskTimeoutAndCancel(t *testing.T) {
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{})
	b.Handle("silent", func(*Header, []byte, Respond) {}, RouteOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := a.Ask(ctx, b.Addr(), Msg{Route: "silent"})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := a.Ask(ctx2, b.Addr(), Msg{Route: "silent"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ask: %v", err)
	}
	if s := a.Stats(); s.PendingAsks != 0 || s.ArmedTimers != 0 {
		t.Fatalf("pending %d timers %d", s.PendingAsks, s.ArmedTimers)
	}
}

func TestMultiTellReportsEachPeer(t *testing.T) {
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{})
	var n atomic.Int32
	b.Handle("r", func(*Header, []byte, Respond) { n.Add(1) }, RouteOptions{})
	dead := "127.0.0.1:1" // nothing listens on port 1
	errs := a.MultiTell(context.Background(), []string{b.Addr(), dead, b.Addr()}, Msg{Route: "r", Payload: []byte("x")})
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errs = %v", errs)
	}
	res := a.MultiAsk(context.Background(), []string{dead}, Msg{Route: "r"})
	if res[0].Err == nil {
		t.Fatal("ask to a dead peer succeeded")
	}
}

func TestDedup(t *testing.T) {
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{})
	got := make(chan string, 4)
	b.Handle("gossip", func(_ *Header, p []byte, _ Respond) { got <- string(p) }, RouteOptions{Dedup: true})
	for _, p := range []string{"one", "one", "two"} {
		if err := a.Tell(context.Background(), b.Addr(), Msg{Route: "gossip", Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if x, y := recv(t, got), recv(t, got); x != "one" || y != "two" {
		t.Fatalf("got %q %q", x, y)
	}
	if d := b.Stats().Drops[DropDuplicate]; d != 1 {
		t.Fatalf("duplicates dropped %d", d)
	}
}
