package storesync

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
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

// TestServiceSyncsArchives: A holds 300 messages, B 100 of them plus 20 of
// its own; after one round started by B both archives hold all 320, and
// every transferred message was decoded and hashed exactly once.
func TestServiceSyncsArchives(t *testing.T) {
	a := newSyncNode(t, Config{PubsubTopics: []string{testTopic}})
	b := newSyncNode(t, Config{PubsubTopics: []string{testTopic}})
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
	// A second round finds nothing to do.
	res, err = b.sync.SyncWith(context.Background(), a.host.ID())
	if err != nil || res.Missing != 0 || res.Sent != 0 || res.RoundTrips != 1 {
		t.Fatalf("second round %+v, %v; want one round trip and nothing missing", res, err)
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
