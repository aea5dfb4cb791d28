package node

import (
	"context"
	"fmt"
	"log/slog"
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
