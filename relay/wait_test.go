package relay_test

import (
	"context"
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/relay"
)

// TestWaitTopicPeers: the wait returns once a peer follows the topic, which
// happens only after the two hosts connect, refuses a topic not joined, and
// ends with ErrClosed when the relay closes under it.
func TestWaitTopicPeers(t *testing.T) {
	ha, hb := newHost(t), newHost(t)
	a, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := relay.New(hb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if err := a.WaitTopicPeers(ctx, topic, 1); !errors.Is(err, relay.ErrNotSubscribed) {
		t.Fatalf("before Subscribe: %v, want ErrNotSubscribed", err)
	}
	for _, r := range []*relay.Relay{a, b} {
		if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.WaitTopicPeers(ctx, topic, 0); err != nil {
		t.Fatalf("zero peers: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.WaitTopicPeers(ctx, topic, 1) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v before any peer connected", err)
	default:
	}
	if err := ha.Connect(ctx, peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, done, "the wait for b"); err != nil {
		t.Fatal(err)
	}
	if got := a.TopicPeers(topic); len(got) != 1 || got[0] != hb.ID() {
		t.Fatalf("topic peers %v, want b", got)
	}

	// A wait for more peers than will come ends when the relay closes.
	go func() { done <- a.WaitTopicPeers(ctx, topic, 2) }()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, done, "the wait to end at Close"); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	if err := a.WaitTopicPeers(context.Background(), topic, 1); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("closed relay: %v, want ErrClosed", err)
	}
}

// TestCloseTwice: the Close rule of every service of the module: a second
// Close, and one made while the first runs, returns nil.
func TestCloseTwice(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- r.Close() }()
	}
	for range 2 {
		if err := testwait.Recv(t, errs, "Close"); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatalf("third Close: %v", err)
	}
}
