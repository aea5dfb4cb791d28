package node

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// TestStoreResume: B starts with --store-resume and A, a store node, as
// its static node; it fills its archive with the 30 messages A archived
// while B did not exist.
func TestStoreResume(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	committed := make(chan error, 64)
	a, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir(), Logger: quiet,
		OnArchived: func(_ *message.Envelope, err error) { committed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer a.Stop(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !servesStore(a) {
		srv, err := store.NewServer(a.Host(), a.Archive(), store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
	}
	topic := shard.RelayShard{}.PubsubTopic()
	var hashes []message.Hash
	for i := range 30 {
		env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte(fmt.Sprint("before B ", i)), ContentTopic: "/t/1/n/proto"})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, env.Hash())
	}
	for range 30 {
		if err := testwait.Recv(t, committed, "a commit"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, StoreResume: true, DataDir: t.TempDir(),
		StaticNodes: a.ListenAddresses()[:1], Logger: quiet})
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
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("B holds %d of %d messages after store resume", len(res.Messages), len(hashes))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func servesStore(n *Node) bool {
	for _, p := range n.Host().Mux().Protocols() {
		if p == store.ProtocolID {
			return true
		}
	}
	return false
}
