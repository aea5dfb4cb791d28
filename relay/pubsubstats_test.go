package relay

import (
	"context"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

// TestPubsubStats checks nim-libp2p's pubsub figures: a peer gossipsub
// has a stream to counts once, until it disconnects (C, which speaks no
// pubsub protocol and only writes to A, does not count); each first subscription and last
// unsubscription of a topic counts; messages from peers count by the
// validator's result (a message that does not decode is Rejected, one with
// an empty content topic Ignored), the node's own publishes not at all.
func TestPubsubStats(t *testing.T) {
	ha, hb, hc := dropHost(t), dropHost(t), dropHost(t)
	a, err := New(ha, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(hb, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := a.Stats().Pubsub; got != (PubsubStats{}) {
		t.Fatalf("before anything: %+v", got)
	}
	for _, r := range []*Relay{a, b} {
		if err := r.Subscribe(dropTopic, OwnerConfig); err != nil {
			t.Fatal(err)
		}
	}
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "A and B in each other's topic", func() bool {
		return len(a.TopicPeers(dropTopic)) == 1 && len(b.TopicPeers(dropTopic)) == 1
	})
	for i := range 3 {
		if _, err := b.Publish(context.Background(), dropTopic, &message.Message{Payload: []byte{byte(i)}, ContentTopic: "/app/1/chat/proto"}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, "A validated B's 3 messages", func() bool { return a.Stats().Pubsub.ValidationSuccess == 3 })

	// C writes a message that does not decode and one without a content
	// topic straight to A's gossipsub.
	undecodable := &pb.Message{Data: []byte{0xff}, Topic: proto.String(dropTopic)}
	noTopic := &pb.Message{Data: (&message.Message{Payload: []byte("x")}).Encode(nil), Topic: proto.String(dropTopic)}
	sendRPC(t, hc, ha, &pb.RPC{Publish: []*pb.Message{undecodable, noTopic}})
	testwait.Until(t, "A counted C's messages", func() bool {
		s := a.Stats().Pubsub
		return s.ValidationFailure == 1 && s.ValidationIgnore == 1
	})
	if err := a.Unsubscribe(dropTopic, OwnerConfig); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe(dropTopic, OwnerConfig); err != nil {
		t.Fatal(err)
	}
	want := PubsubStats{Peers: 1, Topics: 1, Subscriptions: 2, Unsubscriptions: 1,
		ValidationSuccess: 3, ValidationFailure: 1, ValidationIgnore: 1}
	testwait.Until(t, "A's figures", func() bool { return a.Stats().Pubsub == want })
	if got := b.Stats().Pubsub; got.ValidationSuccess != 0 || got.Subscriptions != 1 || got.Topics != 1 {
		t.Errorf("B, which only published: %+v", got)
	}
	hb.Close()
	testwait.Until(t, "B gone from A's pubsub peers", func() bool { return a.Stats().Pubsub.Peers == 0 })
}
