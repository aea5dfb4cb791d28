package relay

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

const dropTopic = "/waku/2/rs/0/0"

func dropHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestGossipsubRejectsCounted provokes gossipsub's own rejections with
// RPCs a peer writes straight to a gossipsub stream, each breaking one rule
// of 11/WAKU2-RELAY (StrictNoSign: no signature, no from, seqno or key) or
// coming from a blacklisted peer or source, and checks that each is counted
// under its reason and under no other.
func TestGossipsubRejectsCounted(t *testing.T) {
	blocked := dropHost(t).ID() // a peer id to blacklist as a source
	cases := []struct {
		name      string
		msg       func(sender peer.ID) *pb.Message
		blacklist func(sender peer.ID) peer.ID
		want      DropReason
	}{
		{"signed message", func(peer.ID) *pb.Message { return &pb.Message{Signature: []byte{1}} }, nil, DropUnexpectedSignature},
		{"seqno set", func(peer.ID) *pb.Message { return &pb.Message{Seqno: []byte{0, 0, 0, 0, 0, 0, 0, 1}} }, nil, DropUnexpectedAuthor},
		{"from set", func(p peer.ID) *pb.Message { return &pb.Message{From: []byte(p)} }, nil, DropUnexpectedAuthor},
		{"key set", func(peer.ID) *pb.Message { return &pb.Message{Key: []byte{1}} }, nil, DropUnexpectedAuthor},
		{"blacklisted peer", func(peer.ID) *pb.Message { return &pb.Message{} },
			func(sender peer.ID) peer.ID { return sender }, DropBlacklistedPeer},
		{"blacklisted source", func(peer.ID) *pb.Message { return &pb.Message{From: []byte(blocked)} },
			func(peer.ID) peer.ID { return blocked }, DropBlacklistedSource},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ha, hb := dropHost(t), dropHost(t)
			r, err := New(ha, Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Subscribe(dropTopic, OwnerConfig); err != nil {
				t.Fatal(err)
			}
			if tc.blacklist != nil {
				r.ps.BlacklistPeer(tc.blacklist(hb.ID()))
			}
			m := tc.msg(hb.ID())
			m.Data = (&message.Message{Payload: []byte("x"), ContentTopic: "/app/1/chat/proto"}).Encode(nil)
			m.Topic = proto.String(dropTopic)
			sendRPC(t, hb, ha, &pb.RPC{Publish: []*pb.Message{m}})
			testwait.Until(t, "a drop counted as "+tc.want.String(), func() bool { return r.Stats().Drops[tc.want] > 0 })
			onlyDrop(t, r, tc.want)
		})
	}
}

// sendRPC writes rpc to a new gossipsub stream from "from" to "to", framed as
// gossipsub frames it (an unsigned varint length, then the protobuf).
func sendRPC(t *testing.T, from, to host.Host, rpc *pb.RPC) {
	t.Helper()
	ctx := context.Background()
	if err := from.Connect(ctx, peer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := from.NewStream(ctx, to.ID(), pubsub.GossipSubID_v11)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b, err := proto.Marshal(rpc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(append(protowire.AppendVarint(nil, uint64(len(b))), b...)); err != nil {
		t.Fatal(err)
	}
}

// onlyDrop fails if r counted a drop under any reason but want, or
// delivered anything.
func onlyDrop(t *testing.T, r *Relay, want DropReason) {
	t.Helper()
	st := r.Stats()
	for reason, n := range st.Drops {
		if n > 0 && reason != want {
			t.Errorf("also counted %d under %s", n, reason)
		}
	}
	if st.Delivered != 0 {
		t.Errorf("delivered %d messages that should have been dropped", st.Delivered)
	}
}

// TestRejectReasonMapping: every reject reason gossipsub names maps to
// one drop reason, the validator's own results are not counted twice, and
// a reason a later gossipsub adds lands in DropOtherReject.
func TestRejectReasonMapping(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		want    DropReason
		counted bool
	}{
		{pubsub.RejectValidationFailed, 0, false},
		{pubsub.RejectValidationIgnored, 0, false},
		{pubsub.RejectValidationQueueFull, DropValidationQueueFull, true},
		{pubsub.RejectValidationThrottled, DropValidationThrottled, true},
		{pubsub.RejectUnexpectedSignature, DropUnexpectedSignature, true},
		{pubsub.RejectUnexpectedAuthInfo, DropUnexpectedAuthor, true},
		{pubsub.RejectBlacklstedPeer, DropBlacklistedPeer, true},
		{pubsub.RejectBlacklistedSource, DropBlacklistedSource, true},
		{pubsub.RejectSelfOrigin, DropSelfOrigin, true},
		{pubsub.RejectMissingSignature, DropOtherReject, true},
		{pubsub.RejectInvalidSignature, DropOtherReject, true},
		{"a reason of a later gossipsub", DropOtherReject, true},
	} {
		got, counted := rejectReason(tc.reason)
		if counted != tc.counted || (counted && got != tc.want) {
			t.Errorf("rejectReason(%q) = %v, %v; want %v, %v", tc.reason, got, counted, tc.want, tc.counted)
		}
	}
	seen := map[string]bool{}
	for _, d := range DropReasons() {
		name := d.String()
		if name == "" || seen[name] {
			t.Errorf("reason %d has name %q (empty or repeated)", d, name)
		}
		seen[name] = true
	}
	if s := DropReason(200).String(); s != "DropReason(200)" {
		t.Errorf("out-of-range String = %q", s)
	}
}
