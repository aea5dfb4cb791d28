package relay

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
	"github.com/couriernet/courier/message"
)

// TestGraylistedDropsCounted: a peer sends 20 messages that do not decode
// (counted invalid, its score falls to -40,000, below the graylist
// threshold of -10,000); gossipsub then ignores its RPCs whole, without a
// tracer event. Its next RPCs, 30 undecodable and 5 valid messages and one
// on a topic the relay has not joined, are counted as graylisted_peer
// (the 35 on the joined topic), so every message it sent on that topic
// is counted exactly once, under one reason. An honest peer's message, sent after, is
// delivered and not counted. The heartbeat is long so that the bad peer
// is not disconnected (at the heartbeat) before its RPCs are read. Then
// the score inspection is run by hand with both peers above the threshold,
// as after a decay: the bad peer, whose RPCs were refused since the last
// inspection, is disconnected, the honest one is not; a second inspection
// with the bad peer back in finds nothing refused and leaves it.
func TestGraylistedDropsCounted(t *testing.T) {
	params := NwakuGossipSubParams()
	params.HeartbeatInterval = time.Minute
	ha, hx, hb := dropHost(t), dropHost(t), dropHost(t)
	r, err := New(ha, Config{GossipSub: &params})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Subscribe(dropTopic, OwnerConfig); err != nil {
		t.Fatal(err)
	}
	hx.SetStreamHandler(pubsub.GossipSubID_v11, func(s network.Stream) { io.Copy(io.Discard, s) })
	ctx := context.Background()
	if err := hx.Connect(ctx, peer.AddrInfo{ID: ha.ID(), Addrs: ha.Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := hx.NewStream(ctx, ha.ID(), pubsub.GossipSubID_v11)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Reset()
	w := msgio.NewVarintWriter(s)
	seq := uint64(0)
	undecodable := func(n int, topic string) []*pb.Message {
		var out []*pb.Message
		for range n {
			seq++
			data := make([]byte, 16)
			data[0], data[1] = 0xff, 0xff // field 31, wire type 7: not a WakuMessage
			binary.BigEndian.PutUint64(data[2:], seq)
			out = append(out, &pb.Message{Data: data, Topic: proto.String(topic)})
		}
		return out
	}
	valid := func(n int) []*pb.Message {
		var out []*pb.Message
		for range n {
			seq++
			m := &message.Message{Payload: binary.BigEndian.AppendUint64(nil, seq), ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano()}
			out = append(out, &pb.Message{Data: m.Encode(nil), Topic: proto.String(dropTopic)})
		}
		return out
	}
	send := func(rpc *pb.RPC) {
		t.Helper()
		b, err := proto.Marshal(rpc)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteMsg(b); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	subscribe := &pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &yes, Topicid: proto.String(dropTopic)}}}
	send(subscribe)
	send(&pb.RPC{Publish: undecodable(20, dropTopic)})
	testwait.Until(t, "20 invalid messages counted", func() bool { return r.Stats().Drops[DropInvalid] == 20 })
	// The validator counts a message invalid just before gossipsub scores
	// the rejection: probe with one message at a time (then an RPC without
	// messages, which settles it) until one is graylisted.
	probes := 0
	for r.Stats().Drops[DropGraylisted] == 0 {
		if probes++; probes > 50 {
			t.Fatalf("no probe graylisted: drops %v", r.Stats().Drops)
		}
		send(&pb.RPC{Publish: undecodable(1, dropTopic)})
		send(subscribe)
		testwait.Until(t, "the probe counted", func() bool {
			st := r.Stats()
			return st.Drops[DropInvalid]+st.Drops[DropGraylisted] == uint64(20+probes)
		})
	}
	send(&pb.RPC{Publish: undecodable(30, dropTopic)})
	send(&pb.RPC{Publish: append(valid(5), undecodable(1, "/waku/2/rs/0/7")...)})

	// The honest peer's RPC lets the last one be settled, and is delivered.
	sendRPC(t, hb, ha, &pb.RPC{Publish: valid(1)})
	testwait.Until(t, "35 more graylisted drops counted and the honest message delivered", func() bool {
		st := r.Stats()
		return st.Drops[DropGraylisted] == 36 && st.Delivered == 1
	})
	st := r.Stats()
	if st.Drops[DropInvalid] != uint64(20+probes-1) || st.TotalDrops() != uint64(55+probes) {
		t.Errorf("drops %v after %d probes; want %d invalid, 36 graylisted_peer and no other", st.Drops, probes, 20+probes-1)
	}
	if ha.Network().Connectedness(hx.ID()) != network.Connected {
		t.Fatal("the bad peer was disconnected before the heartbeat")
	}

	above := map[peer.ID]float64{hx.ID(): graylistThreshold / 4, hb.ID(): graylistThreshold / 4}
	r.inspectScores(above)
	if ha.Network().Connectedness(hx.ID()) == network.Connected {
		t.Error("the peer whose RPCs were refused as graylisted is still connected after the inspection")
	}
	if ha.Network().Connectedness(hb.ID()) != network.Connected {
		t.Error("the honest peer was disconnected")
	}
	if n := r.Stats().BadPeerDisconnects; n != 1 {
		t.Errorf("%d bad-peer disconnects, want 1", n)
	}
	testwait.Until(t, "the bad peer connected again", func() bool {
		hx.Connect(ctx, peer.AddrInfo{ID: ha.ID(), Addrs: ha.Addrs()})
		return ha.Network().Connectedness(hx.ID()) == network.Connected
	})
	r.inspectScores(above)
	if ha.Network().Connectedness(hx.ID()) != network.Connected || r.Stats().BadPeerDisconnects != 1 {
		t.Error("a second inspection disconnected the peer again, with no RPC refused since the first")
	}
}

// TestGraylistCounterAccepted: the messages of an RPC that gossipsub takes
// in (its first message on a joined topic gets its id computed, or is
// rejected with a tracer event) are never counted, nor are messages on
// topics not joined; the sender of the refused RPC, named by the RPC
// inspector just before, is kept with its count until takeRefused.
func TestGraylistCounterAccepted(t *testing.T) {
	var c counters
	g := newGraylistCounter(&c)
	g.Join("a")
	rpc := func(topics ...string) *pubsub.RPC {
		out := &pubsub.RPC{}
		for _, tp := range topics {
			out.Publish = append(out.Publish, &pb.Message{Topic: proto.String(tp)})
		}
		return out
	}
	recv := func(from peer.ID, r *pubsub.RPC) {
		g.inspectRPC(from, r)
		g.RecvRPC(r)
	}
	accepted := rpc("b", "a", "a")
	recv("honest", accepted)
	g.seen(accepted.Publish[1]) // gossipsub computes the id of the first message on "a"
	rejected := rpc("a", "a")
	recv("honest", rejected)
	g.RejectMessage(&pubsub.Message{Message: rejected.Publish[0]}, pubsub.RejectBlacklstedPeer)
	recv("other", rpc("b", "b")) // nothing on a joined topic
	ignored := rpc("a", "b", "a", "a")
	recv("bad", ignored)
	g.seen(&pb.Message{})        // another message's id, not this RPC's
	g.inspectRPC("other", rpc()) // an RPC RecvRPC is not told of: it names no sender
	g.RecvRPC(rpc())
	if n := c.drops[DropGraylisted].Load(); n != 3 {
		t.Errorf("counted %d graylisted drops, want the 3 on topic a of the ignored RPC", n)
	}
	g.RecvRPC(rpc("a"))
	g.RecvRPC(rpc())
	if n := c.drops[DropGraylisted].Load(); n != 4 {
		t.Errorf("counted %d graylisted drops, want 4 with the RPC of no known sender", n)
	}
	if got := g.takeRefused(); len(got) != 1 || got["bad"] != 3 {
		t.Errorf("refused senders %v, want bad with 3 messages", got)
	}
	if got := g.takeRefused(); len(got) != 0 {
		t.Errorf("refused senders after takeRefused %v, want none", got)
	}
	g.Leave("a")
	g.RecvRPC(rpc("a"))
	g.RecvRPC(rpc())
	if n := c.drops[DropGraylisted].Load(); n != 4 {
		t.Errorf("a topic left: counted %d, want still 4", n)
	}
}
