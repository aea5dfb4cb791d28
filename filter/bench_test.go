package filter

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
)

// BenchmarkPush hands one 100-byte message to one subscriber (whose full
// queue drops it), with and without the OnMessage duration hook, so that
// the hook's cost per message shows: matching, de-duplication, the push
// frame's one buffer.
//
//	go test -run '^$' -bench Push ./filter/
func BenchmarkPush(b *testing.B) {
	for _, hook := range []bool{false, true} {
		name := "hook=off"
		if hook {
			name = "hook=on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{PushQueueSize: 1}
			if hook {
				var total time.Duration
				cfg.OnMessage = func(d time.Duration) { total += d }
			}
			cfg.setDefaults()
			s := newService(nil, cfg)
			defer s.Close()
			now := time.Unix(1_700_000_000, 0)
			s.now = func() time.Time { return now }
			s.Answer(peer.ID("a"), sub("/x/1/y/proto"))
			wire := (&message.Message{Payload: make([]byte, 100), ContentTopic: "/x/1/y/proto"}).Encode(nil)
			m, err := message.Decode(wire, nil)
			if err != nil {
				b.Fatal(err)
			}
			env := message.NewEnvelope(m, topic, wire, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				now = now.Add(time.Hour) // past the de-duplication window
				s.Push(env)
			}
		})
	}
}
