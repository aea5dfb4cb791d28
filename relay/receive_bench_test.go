package relay

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/message"
)

// BenchmarkReceive measures what a peer's message costs the relay before
// dispatch, per message, on one goroutine: gossipsub's message id, then
// the topic validator (decode, rules, and the deterministic hash where
// something will ask it). "forward" is a relay that delivers to nothing,
// which computes the message id alone; "deliver" one with a handler,
// which pairs the id with the hash and the CRC-32C (earlyDecode). Each
// message differs from the last in its fingerprint, so each is a first
// sight.
func BenchmarkReceive(b *testing.B) {
	for _, size := range []int{10_000, 65_000, 150_000} {
		for _, mode := range []string{"forward", "deliver"} {
			b.Run(fmt.Sprintf("%dkB/%s", size/1000, mode), func(b *testing.B) { benchReceive(b, size, mode == "deliver") })
		}
	}
}

func benchReceive(b *testing.B, size int, deliver bool) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	r, err := New(h, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if deliver {
		defer r.AddHandler("sink", func(*message.Envelope) {})()
	}
	validate := r.validator(dropTopic, new(topicCounters))
	wire := (&message.Message{Payload: make([]byte, size), ContentTopic: "/courier/1/bench/proto", Timestamp: 1}).Encode(nil)
	seq := wire[len(wire)-64:][:8] // payload bytes in the fingerprint's last 64
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	var i uint64
	for b.Loop() {
		i++
		binary.BigEndian.PutUint64(seq, i)
		m := &pubsub.Message{Message: &pb.Message{Data: wire, Topic: proto.String(dropTopic)}}
		r.messageID(m.Message)
		if res := validate(b.Context(), "", m); res != pubsub.ValidationAccept {
			b.Fatalf("validator: %v", res)
		}
	}
}
