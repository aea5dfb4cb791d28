package relay

import (
	"testing"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	"github.com/couriernet/courier/message"
)

func TestPayloadLen(t *testing.T) {
	for _, m := range []*message.Message{
		{ContentTopic: "/t/1/n/proto"},
		{Payload: []byte("x"), ContentTopic: "/t/1/n/proto"},
		{Payload: make([]byte, 150_000), ContentTopic: "/t/1/n/proto", Timestamp: 7, Meta: []byte("meta"), Ephemeral: true},
	} {
		wire := m.Encode(nil)
		if got := payloadLen(wire); got != len(m.Payload) {
			t.Errorf("payloadLen of a %d-byte payload = %d", len(m.Payload), got)
		}
	}
	// Two payload fields: protobuf keeps the last.
	wire := append((&message.Message{Payload: []byte("first")}).Encode(nil), (&message.Message{Payload: []byte("second!")}).Encode(nil)...)
	if got := payloadLen(wire); got != 7 {
		t.Errorf("payloadLen of two payloads = %d, want 7", got)
	}
	if got := payloadLen([]byte{0x0a, 0x05, 'x'}); got != 0 {
		t.Errorf("payloadLen of a truncated payload = %d, want 0", got)
	}
}

// FuzzPayloadLen checks payloadLen against the decoder: for every input
// message.Decode accepts, it finds the payload's length.
func FuzzPayloadLen(f *testing.F) {
	f.Add((&message.Message{Payload: []byte("hello"), ContentTopic: "/t/1/n/proto", Timestamp: 1}).Encode(nil))
	f.Add([]byte{0x0a, 0x05, 'x'})
	f.Fuzz(func(t *testing.T, wire []byte) {
		n := payloadLen(wire)
		if m, err := message.Decode(wire, nil); err == nil && n != len(m.Payload) {
			t.Fatalf("payloadLen %d, decoded payload %d bytes", n, len(m.Payload))
		}
	})
}

// BenchmarkTrafficRPC measures what the traffic tracer adds per message to
// gossipsub's receive and send paths: a received RPC and one sent to one
// peer, each of one 50 kB message.
func BenchmarkTrafficRPC(b *testing.B) {
	tr := newTraffic()
	topic := "/waku/2/rs/1/0"
	tr.add(topic, new(topicCounters))
	wire := (&message.Message{Payload: make([]byte, 50_000), ContentTopic: "/courier/1/bench/proto", Timestamp: 1}).Encode(nil)
	rpc := &pubsub.RPC{RPC: pb.RPC{Publish: []*pb.Message{{Data: wire, Topic: &topic}}}}
	b.ReportAllocs()
	for b.Loop() {
		tr.RecvRPC(rpc)
		tr.SendRPC(rpc, "")
	}
}
