package storesync

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// syncNode is a host with an embedded archive and a store-sync service.
type syncNode struct {
	host     host.Host
	archive  *embedded.Archive
	sync     *Service
	counters *message.Counters
}

// testTopic is the pubsub topic of the test messages.
const testTopic = "/waku/2/rs/0/0"

func newSyncNode(t testing.TB, cfg Config) *syncNode {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	a, err := embedded.Open(t.TempDir(), archive.Config{}, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	n := &syncNode{host: h, archive: a, counters: new(message.Counters)}
	cfg.Counters = n.counters
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval == 0 {
		cfg.Interval = -1 // rounds only when the test asks
	}
	if n.sync, err = New(h, a, cfg); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *syncNode) start(t testing.TB) {
	t.Helper()
	if err := n.sync.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.sync.Close() })
}

// store appends envelopes to the archive and the index, as the relay's
// dispatcher does, and waits until they are committed.
func (n *syncNode) store(t testing.TB, envs []*message.Envelope) {
	t.Helper()
	errs := make(chan error, len(envs))
	for _, env := range envs {
		if err := n.archive.Append(context.Background(), env, func(err error) { errs <- err }); err != nil {
			t.Fatal(err)
		}
		n.sync.Ingest(env)
	}
	for range envs {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("archive did not commit")
		}
	}
}

// testEnvelopes returns n messages on testTopic with timestamps within the
// last half hour, each with a distinct payload.
func testEnvelopes(n int, tag string) []*message.Envelope {
	base := time.Now().Add(-30 * time.Minute).UnixNano()
	out := make([]*message.Envelope, n)
	for i := range out {
		m := &message.Message{Payload: []byte(fmt.Sprintf("%s-%d", tag, i)), ContentTopic: "/app/1/chat/proto", Timestamp: base + int64(i)*int64(time.Millisecond)}
		wire := m.Encode(nil)
		dm, err := message.Decode(wire, nil)
		if err != nil {
			panic(err)
		}
		out[i] = message.NewEnvelope(dm, testTopic, wire, nil)
	}
	return out
}

func connect(t testing.TB, a, b host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// has reports which of envs the archive holds, byte for byte.
func (n *syncNode) has(t *testing.T, envs []*message.Envelope) int {
	t.Helper()
	got := 0
	for i := 0; i < len(envs); i += archive.MaxPageSize {
		var hs []message.Hash
		want := map[message.Hash]*message.Envelope{}
		for _, e := range envs[i:min(i+archive.MaxPageSize, len(envs))] {
			hs = append(hs, e.Hash())
			want[e.Hash()] = e
		}
		res, err := n.archive.Query(context.Background(), archive.Query{Hashes: hs, IncludeData: true, Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			if e := want[m.Hash]; e != nil && string(e.Wire()) == string(m.Wire) && m.PubsubTopic == testTopic {
				got++
			}
		}
	}
	return got
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reconciled records the OnReconciled calls of a service.
type reconciled struct {
	mu    sync.Mutex
	calls [][2]int
}

func (r *reconciled) on(roundTrips, differences int) {
	r.mu.Lock()
	r.calls = append(r.calls, [2]int{roundTrips, differences})
	r.mu.Unlock()
}

func (r *reconciled) get() [][2]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestServiceSyncsArchives: A holds 300 messages, B 100 of them plus 20 of
// its own; after one round started by B both archives hold all 320, and
// every transferred message was decoded and hashed exactly once. Both
// sides report each reconciliation to OnReconciled.
func TestServiceSyncsArchives(t *testing.T) {
	var onA, onB reconciled
	a := newSyncNode(t, Config{PubsubTopics: []string{testTopic}, OnReconciled: onA.on})
	b := newSyncNode(t, Config{PubsubTopics: []string{testTopic}, OnReconciled: onB.on})
	common := testEnvelopes(300, "common")
	own := testEnvelopes(20, "b-only")
	a.store(t, common)
	b.store(t, append(append([]*message.Envelope{}, common[:100]...), own...))
	a.start(t)
	b.start(t)
	connect(t, b.host, a.host)

	before := b.counters.Snapshot()
	res, err := b.sync.SyncWith(context.Background(), a.host.ID())
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing == 0 || res.Missing > 200 || res.Sent != 20 {
		t.Fatalf("round named %d missing and sent %d; want 1..200 and 20", res.Missing, res.Sent)
	}
	waitFor(t, "B's archive to hold A's messages", func() bool { return b.has(t, common) == 300 })
	waitFor(t, "A's archive to hold B's messages", func() bool { return a.has(t, own) == 20 })
	delta := b.counters.Snapshot().Sub(before)
	if delta.Decodes != 200 || delta.Hashes != 200 {
		t.Fatalf("B decoded %d and hashed %d times for 200 transferred messages; want 200 and 200", delta.Decodes, delta.Hashes)
	}
	if st := b.sync.Stats(); st.MessagesReceived != 200 || st.Rejected != 0 || st.Items != 320 {
		t.Fatalf("B stats %+v", st)
	}
	if got := onB.get(); len(got) != 1 || got[0] != [2]int{res.RoundTrips, res.Differences} || res.Differences != res.Missing+20 {
		t.Fatalf("B reported %v for a round of %+v; want its round trips and %d+20 differences", got, res, res.Missing)
	}
	// A second round finds nothing to do.
	res, err = b.sync.SyncWith(context.Background(), a.host.ID())
	if err != nil || res.Missing != 0 || res.Sent != 0 || res.RoundTrips != 1 {
		t.Fatalf("second round %+v, %v; want one round trip and nothing missing", res, err)
	}
	if got := onB.get(); len(got) != 2 || got[1] != [2]int{1, 0} {
		t.Fatalf("B reported %v; want a second call with 1 round trip and no difference", got)
	}
	// A, the responder, reports its side of both rounds: differences in
	// the first, one payload and none in the second.
	waitFor(t, "A's reports", func() bool { return len(onA.get()) == 2 })
	if got := onA.get(); got[0][1] == 0 || got[1] != [2]int{1, 0} {
		t.Fatalf("A reported %v", got)
	}
}

// TestServiceFillsIndexFromArchive: a service started over an archive
// indexes what it holds in the window, so an unchanged peer has nothing to
// send after a restart.
func TestServiceFillsIndexFromArchive(t *testing.T) {
	a := newSyncNode(t, Config{})
	envs := testEnvelopes(150, "x")
	if err := a.sync.Close(); err != nil {
		t.Fatal(err)
	}
	a.sync, _ = New(a.host, a.archive, Config{Interval: -1, Logger: slog.New(slog.DiscardHandler)})
	for _, env := range envs {
		if err := a.archive.Append(context.Background(), env, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "commit", func() bool { return a.has(t, envs) == 150 })
	a.start(t)
	if n := a.sync.storage.Len(); n != 150 {
		t.Fatalf("index holds %d items after start, want 150", n)
	}
}

// TestServiceRejectsUnexpectedTransfer: messages pushed without a
// reconciliation that found them missing are counted and not archived.
func TestServiceRejectsUnexpectedTransfer(t *testing.T) {
	a := newSyncNode(t, Config{})
	b := newSyncNode(t, Config{})
	a.start(t)
	connect(t, b.host, a.host)
	envs := testEnvelopes(3, "rogue")
	str, err := b.host.NewStream(context.Background(), a.host.ID(), TransferID)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(str)
	for _, env := range envs {
		frame := appendMessageAndTopic(nil, testTopic, env.Wire())
		w.Write(lpframe.Append(nil, frame))
	}
	w.Write(lpframe.Append(nil, []byte{0x0a, 0x01})) // malformed
	w.Flush()
	str.Close()
	waitFor(t, "rejections", func() bool { return a.sync.Stats().Rejected == 4 })
	if n := a.has(t, envs); n != 0 || a.sync.storage.Len() != 0 {
		t.Fatalf("archive holds %d rogue messages, index %d", n, a.sync.storage.Len())
	}
}

// TestServiceRoundNoPeer: a round with no peer serving store-sync fails
// with ErrNoPeer.
func TestServiceRoundNoPeer(t *testing.T) {
	a := newSyncNode(t, Config{})
	if _, err := a.sync.Round(context.Background()); err != ErrNoPeer {
		t.Fatalf("Round = %v, want ErrNoPeer", err)
	}
}

// TestRoundLeastRecentPeer: Round takes the peers of Config.Peers in turn,
// the one synced with least recently first, so each of three peers is
// synced with once in every three rounds (a random pick repeats one within
// four such cycles in all but 0.24 % of runs); a peer that leaves the list
// is forgotten and one that joins comes next. The peers have no
// addresses, so each round fails at the dial after picking its peer.
func TestRoundLeastRecentPeer(t *testing.T) {
	ids := make([]peer.ID, 4)
	for i := range ids {
		key, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		if ids[i], err = peer.IDFromPrivateKey(key); err != nil {
			t.Fatal(err)
		}
	}
	list := ids[:3]
	a := newSyncNode(t, Config{Peers: func() []peer.ID { return list }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	round := func() peer.ID {
		t.Helper()
		res, err := a.sync.Round(ctx)
		if err == nil {
			t.Fatalf("a round with %s, which has no address, succeeded", res.Peer)
		}
		return res.Peer
	}
	for cycle := range 4 {
		seen := map[peer.ID]bool{}
		for range len(list) {
			seen[round()] = true
		}
		if len(seen) != len(list) {
			t.Fatalf("cycle %d synced with %d distinct peers of %d", cycle, len(seen), len(list))
		}
	}
	list = []peer.ID{ids[1], ids[2], ids[3]}
	if p := round(); p != ids[3] {
		t.Fatalf("after ids[3] joined, the round picked %s, want it", p)
	}
	a.sync.mu.Lock()
	_, kept := a.sync.lastRound[ids[0]]
	n := len(a.sync.lastRound)
	a.sync.mu.Unlock()
	if kept || n != 3 {
		t.Fatalf("lastRound holds %d peers (the departed one: %v), want the 3 listed", n, kept)
	}
}

// freshEnvelope returns a message on testTopic stamped now.
func freshEnvelope(tag string) *message.Envelope { return envelopeAt(tag, time.Now()) }

// envelopeAt returns a message on testTopic stamped at.
func envelopeAt(tag string, at time.Time) *message.Envelope {
	m := &message.Message{Payload: []byte(tag), ContentTopic: "/app/1/chat/proto", Timestamp: at.UnixNano()}
	wire := m.Encode(nil)
	dm, err := message.Decode(wire, nil)
	if err != nil {
		panic(err)
	}
	return message.NewEnvelope(dm, testTopic, wire, nil)
}

// firstRound stores env on a, starts a and b, connects b to a, and
// returns how many items b's round with a found missing.
func firstRound(t *testing.T, a, b *syncNode, env *message.Envelope) int {
	t.Helper()
	a.store(t, []*message.Envelope{env})
	a.start(t)
	b.start(t)
	connect(t, b.host, a.host)
	res, err := b.sync.SyncWith(context.Background(), a.host.ID())
	if err != nil {
		t.Fatal(err)
	}
	return res.Missing
}

// TestRoundNoRelayJitter: with RelayJitter negative (no jitter, nwaku's
// --store-sync-relay-jitter=0) a round reaches up to now, so it fetches a
// message stamped a moment ago; with the default 20 s the same round
// leaves it alone, as nwaku's calculateTimeRange does.
func TestRoundNoRelayJitter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		jitter   time.Duration
		inEffect time.Duration
		fetched  int
	}{
		{"none", -1, 0, 1},
		{"default", 0, DefaultRelayJitter, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{PubsubTopics: []string{testTopic}, RelayJitter: tc.jitter}
			a, b := newSyncNode(t, cfg), newSyncNode(t, cfg)
			if b.sync.cfg.RelayJitter != tc.inEffect {
				t.Fatalf("relay jitter in effect %v, want %v", b.sync.cfg.RelayJitter, tc.inEffect)
			}
			env := freshEnvelope("just now " + tc.name)
			if missing := firstRound(t, a, b, env); missing != tc.fetched {
				t.Fatalf("round found %d missing, want %d", missing, tc.fetched)
			}
			if tc.fetched > 0 {
				waitFor(t, "B's archive to hold the message", func() bool { return b.has(t, []*message.Envelope{env}) == 1 })
			}
			if st := b.sync.Stats(); st.MessagesReceived != uint64(tc.fetched) || st.Items != tc.fetched {
				t.Fatalf("B stats %+v, want %d received and indexed", st, tc.fetched)
			}
		})
	}
}

// TestRoundTowardDialledPeer: with a positive Interval, a service syncs
// with a store-sync peer it dials once RelayJitter after the connection
// (here none), though its periodic rounds are an hour apart and its first
// round has run: B fetches a message A archived a moment before B dialled
// it. A peer that dials B gets no such round from B. A and C only serve
// (Config.Peers offers them no peer to start a round with).
func TestRoundTowardDialledPeer(t *testing.T) {
	serveOnly := Config{PubsubTopics: []string{testTopic}, Peers: func() []peer.ID { return nil }}
	x, a, c := newSyncNode(t, serveOnly), newSyncNode(t, serveOnly), newSyncNode(t, serveOnly)
	b := newSyncNode(t, Config{PubsubTopics: []string{testTopic}, Interval: time.Hour, RelayJitter: -1})
	for _, n := range []*syncNode{x, a, c, b} {
		n.start(t)
	}
	connect(t, b.host, x.host)
	waitFor(t, "B's first round", func() bool { return b.sync.Stats().Rounds > 0 })
	time.Sleep(3 * time.Second) // past the start's retry tick: no round due until the hour
	before := b.sync.Stats().Rounds

	env := freshEnvelope("before the dial")
	a.store(t, []*message.Envelope{env})
	connect(t, b.host, a.host)
	waitFor(t, "B's round toward A to bring the message", func() bool { return b.has(t, []*message.Envelope{env}) == 1 })
	if got := b.sync.Stats().Rounds - before; got != 1 {
		t.Fatalf("B ran %d rounds after dialling A, want 1", got)
	}

	own := freshEnvelope("C's")
	c.store(t, []*message.Envelope{own})
	connect(t, c.host, b.host)
	time.Sleep(2 * time.Second)
	if got := b.sync.Stats().Rounds - before; got != 1 || b.has(t, []*message.Envelope{own}) != 0 {
		t.Fatalf("after C dialled B, B ran %d rounds in all and holds C's message: %v; want no round toward C", got, b.has(t, []*message.Envelope{own}) == 1)
	}
}

// TestDialRoundsBounded: the rounds due toward dialled peers are at most
// maxDialRounds at once; a peer dialled again keeps its one entry, and
// Close stops them all.
func TestDialRoundsBounded(t *testing.T) {
	a := newSyncNode(t, Config{Interval: time.Hour, RelayJitter: time.Hour})
	a.start(t)
	for range maxDialRounds + 10 {
		key, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := peer.IDFromPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		a.sync.scheduleDialRound(id)
		a.sync.scheduleDialRound(id)
	}
	a.sync.mu.Lock()
	n := len(a.sync.dialRounds)
	a.sync.mu.Unlock()
	if n != maxDialRounds {
		t.Fatalf("%d rounds due, want %d", n, maxDialRounds)
	}
	if err := a.sync.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(a.sync.dialRounds); n != 0 {
		t.Fatalf("%d rounds due after Close, want none", n)
	}
}

// TestRoundWindowBeforeEpoch: the flags' largest range or jitter
// (4294967295 s, 136 years) reaches back before 1970; the round's bounds
// stop at the epoch, so the peer takes the round instead of refusing a
// timestamp past 2^63-1, and a message a minute old is fetched (none
// with the jitter that large: the window is empty).
func TestRoundWindowBeforeEpoch(t *testing.T) {
	const most = 4294967295 * time.Second
	for _, tc := range []struct {
		name    string
		cfg     Config
		fetched int
	}{
		{"range", Config{Range: most}, 1},
		{"jitter", Config{RelayJitter: most}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.PubsubTopics = []string{testTopic}
			a, b := newSyncNode(t, tc.cfg), newSyncNode(t, tc.cfg)
			if w := b.sync.window(time.Now()); w.Lower.Time < 0 || w.Upper.Time < 0 {
				t.Fatalf("window %+v reaches before the epoch", w)
			}
			env := envelopeAt("a minute old", time.Now().Add(-time.Minute))
			if missing := firstRound(t, a, b, env); missing != tc.fetched {
				t.Fatalf("round found %d missing, want %d", missing, tc.fetched)
			}
		})
	}
}
