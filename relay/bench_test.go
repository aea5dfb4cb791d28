package relay_test

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// BenchmarkInject measures the receive path from the topic validator to the
// dispatcher (decode, rules, hash, hand-off to one handler), per message.
func BenchmarkInject(b *testing.B) {
	for _, size := range []int{10_000, 50_000, 150_000} {
		b.Run(fmt.Sprintf("%dkB", size/1000), func(b *testing.B) {
			h, err := libp2p.New(libp2p.NoListenAddrs)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			r, err := relay.New(h, relay.Config{HandlerQueueSize: 4096})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			done := make(chan struct{}, 4096)
			defer r.AddHandler("sink", func(*message.Envelope) { done <- struct{}{} })()
			wire := (&message.Message{Payload: make([]byte, size), ContentTopic: "/courier/1/bench/proto", Timestamp: 1}).Encode(nil)
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				if err := harness.Inject(r, topic, wire); err != nil {
					b.Fatal(err)
				}
				<-done
			}
		})
	}
}
