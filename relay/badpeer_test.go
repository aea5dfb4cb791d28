package relay_test

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/relay"
)

// TestBadPeerDisconnected: a peer that sends messages which do not decode
// is scored -100 per invalid message squared (nwaku's weights), falls
// below the graylist threshold (-10,000) after ten, and is disconnected
// at the next heartbeat, as nwaku's disconnectBadPeers does; an honest
// relay peer stays connected.
func TestBadPeerDisconnected(t *testing.T) {
	ha, hb, hx := newHost(t), newHost(t), newHost(t)
	ra, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	for _, r := range []*relay.Relay{ra, rb} {
		if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
			t.Fatal(err)
		}
	}
	// hx speaks gossipsub by hand: it reads what ra sends and writes its own RPCs.
	hx.SetStreamHandler(pubsub.GossipSubID_v11, func(s network.Stream) { io.Copy(io.Discard, s) })
	ctx := context.Background()
	for _, h := range []peer.AddrInfo{{ID: hb.ID(), Addrs: hb.Addrs()}, {ID: hx.ID(), Addrs: hx.Addrs()}} {
		if err := ha.Connect(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	s, err := hx.NewStream(ctx, ha.ID(), pubsub.GossipSubID_v11)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	// gossipsub scores a peer only once it has opened its own stream to it
	// (docs/reliability.md, Limits): until then invalid messages cost the
	// peer nothing.
	testwait.Until(t, "ra scoring hx", func() bool { _, ok := ra.PeerScore(hx.ID()); return ok })
	w := msgio.NewVarintWriter(s)
	tp, yes := topic, true
	rpc := &pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &yes, Topicid: &tp}}}
	for i := range 20 {
		data := make([]byte, 16)
		data[0], data[1] = 0xff, 0xff // field 31, wire type 7: not a WakuMessage
		binary.BigEndian.PutUint64(data[2:], uint64(i))
		rpc.Publish = append(rpc.Publish, &pb.Message{Data: data, Topic: &tp})
	}
	b, err := proto.Marshal(rpc)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMsg(b); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ha.Network().Connectedness(hx.ID()) == network.Connected {
		if time.Now().After(deadline) {
			score, _ := ra.PeerScore(hx.ID())
			t.Fatalf("flooding peer still connected after 10 s, score %v", score)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := ra.Stats()
	if st.BadPeerDisconnects < 1 || st.Drops[relay.DropInvalid] != 20 {
		t.Errorf("stats: %d bad-peer disconnects, %d invalid drops; want at least 1 and 20", st.BadPeerDisconnects, st.Drops[relay.DropInvalid])
	}
	if score, ok := ra.PeerScore(hx.ID()); !ok || score >= -10000 {
		t.Errorf("flooding peer's score %v (%v), want below -10000", score, ok)
	}
	if ha.Network().Connectedness(hb.ID()) != network.Connected {
		t.Error("the honest peer was disconnected")
	}
	if score, _ := ra.PeerScore(hb.ID()); score < 0 {
		t.Errorf("honest peer's score %v", score)
	}
}
