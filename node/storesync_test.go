package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// TestStoreSyncCatchesUp: node A archives 40 messages while B is down; B
// starts with store-sync and A as its static node, and its first round
// fetches every one of them into its archive.
func TestStoreSyncCatchesUp(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	// A archives messages 15 s old, within the 20 s its archive takes
	// relayed ones in; a relay jitter of 1 s puts them in B's first round.
	base := Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, StoreSync: true, StoreSyncInterval: -1,
		StoreSyncRelayJitter: time.Second, Logger: quiet}
	acfg := base
	acfg.DataDir = t.TempDir()
	var committed = make(chan error, 64)
	acfg.OnArchived = func(_ *message.Envelope, err error) { committed <- err }
	a, err := New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer a.Stop(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	var hashes []message.Hash
	for i := range 40 {
		env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte(fmt.Sprint("missed ", i)), ContentTopic: "/t/1/n/proto",
			Timestamp: time.Now().Add(-15*time.Second).UnixNano() + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, env.Hash())
	}
	for range 40 {
		select {
		case err := <-committed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("A did not archive")
		}
	}

	bcfg := base
	bcfg.DataDir = t.TempDir()
	bcfg.StaticNodes = a.ListenAddresses()[:1]
	b, err := New(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop(ctx)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := b.Archive().Query(ctx, archive.Query{Hashes: hashes, Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == len(hashes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B holds %d of %d messages after its first round (stats %+v)", len(res.Messages), len(hashes), b.StoreSync().Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := b.StoreSync().Stats(); st.Rounds+st.Served == 0 || st.MessagesReceived != 40 || st.Rejected != 0 {
		t.Fatalf("B's store-sync stats %+v; want a session, 40 received, none rejected", st)
	}
}

// TestStoreSyncRepairsRefused: B's archive refuses a relayed message as
// too old (more than 20 s, nwaku's rule) that A's archive holds. B's
// store-sync index must follow B's archive, not B's relay: the message is
// not in it, so B's next round finds it missing and fetches it from A, and
// store-sync archives it without the timestamp check. After a restart B's
// index, loaded from its archive, holds it.
func TestStoreSyncRepairsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := Config{Relay: true, Store: true, StoreSync: true, StoreSyncInterval: -1, StoreSyncRelayJitter: time.Second}
	acfg := base
	acfg.DataDir = t.TempDir()
	a := startTestNode(t, acfg)
	bcfg := base
	bcfg.DataDir = t.TempDir()
	bcfg.StaticNodes = a.ListenAddresses()[:1]
	b := startTestNode(t, bcfg)
	topic := shard.RelayShard{}.PubsubTopic()
	waitFor(ctx, t, "A sees B on the topic", func() bool { return slices.Contains(a.relay.TopicPeers(topic), b.Host().ID()) })

	msg := &message.Message{Payload: []byte("late"), ContentTopic: "/t/1/late/proto", Timestamp: time.Now().Add(-30 * time.Second).UnixNano()}
	env := message.NewEnvelope(msg, topic, msg.Encode(nil), nil)
	committed := make(chan error, 1)
	if err := a.Archive().Append(ctx, env, func(err error) { committed <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if _, err := a.Publish(ctx, topic, msg); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "B's archive refuses the relayed message as too old", func() bool { tooOld, _ := b.store.gate.Refused(); return tooOld == 1 })
	if n := a.StoreSync().Stats().Items; n != 1 {
		t.Fatalf("A's index holds %d items, want the message A's archive committed", n)
	}
	if n := b.StoreSync().Stats().Items; n != 0 {
		t.Fatalf("B's index holds %d items, want none: B's archive refused the message", n)
	}

	res, err := b.StoreSync().SyncWith(ctx, a.Host().ID())
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 1 {
		t.Errorf("B's round found %d missing, want 1", res.Missing)
	}
	held := func(n *Node) bool {
		r, err := n.Archive().Query(ctx, archive.Query{Hashes: []message.Hash{env.Hash()}})
		return err == nil && len(r.Messages) == 1
	}
	waitFor(ctx, t, "store-sync brings the message to B's archive", func() bool { return held(b) })
	waitFor(ctx, t, "B's index holds it once archived", func() bool { return b.StoreSync().Stats().Items == 1 })

	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	b = startTestNode(t, bcfg)
	if n := b.StoreSync().Stats().Items; n != 1 {
		t.Errorf("B's index, loaded from its archive after a restart, holds %d items, want the message", n)
	}
}

// waitFor polls cond every 20 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within the test's time", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestStoreSyncNoRelayJitter: with StoreSyncRelayJitter negative (no
// jitter, what --store-sync-relay-jitter=0 gives) the first round between
// A and B, once B starts and dials A (either side's: each starts one as
// soon as it has a peer, and none after it), brings B a message A archived
// a moment ago; with the default 20 s jitter that round would leave it
// out.
func TestStoreSyncNoRelayJitter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := Config{Relay: true, Store: true, StoreSync: true, StoreSyncInterval: -1, StoreSyncRelayJitter: -1}
	acfg := base
	acfg.DataDir = t.TempDir()
	committed := make(chan error, 1)
	acfg.OnArchived = func(_ *message.Envelope, err error) { committed <- err }
	a := startTestNode(t, acfg)
	topic := shard.RelayShard{}.PubsubTopic()
	env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte("just now"), ContentTopic: "/t/1/now/proto", Timestamp: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	published := time.Now()

	bcfg := base
	bcfg.DataDir = t.TempDir()
	bcfg.StaticNodes = a.ListenAddresses()[:1]
	b := startTestNode(t, bcfg)
	waitFor(ctx, t, "the first round to bring B the message", func() bool {
		r, err := b.Archive().Query(ctx, archive.Query{Hashes: []message.Hash{env.Hash()}})
		return err == nil && len(r.Messages) == 1
	})
	if age := time.Since(published); age >= 20*time.Second {
		t.Fatalf("fetched %v after it was archived, not before the default jitter", age)
	}
	if st := b.StoreSync().Stats(); st.MessagesReceived != 1 || st.Rejected != 0 {
		t.Fatalf("B's store-sync stats %+v; want the message received once", st)
	}
}
