package store

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
)

// BenchmarkServe answers one page of 20 messages with data (one content
// topic and a time range) from an embedded archive of 2,000 messages:
// request decode, archive query, response encode, without the network.
// allocs/msg is the allocations of one answer divided by the messages it
// returns.
//
//	go test -run '^$' -bench Serve -benchtime 2000x ./store/
func BenchmarkServe(b *testing.B) {
	for _, size := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			a := openArchive(b)
			const n = 2000
			for i := range n {
				m := &message.Message{Payload: make([]byte, size), ContentTopic: ct("x"), Timestamp: int64(i + 1), Present: message.HasTimestamp}
				m.Payload[0] = byte(i)
				m.Payload[1] = byte(i >> 8)
				wire := m.Encode(nil)
				env := message.NewEnvelope(m, topicA, wire, nil)
				if i == n-1 {
					appendWait(b, a, env)
				} else if err := a.Append(context.Background(), env, nil); err != nil {
					b.Fatal(err)
				}
			}
			s := &Server{a: a, cfg: Config{MaxBytesInFlight: DefaultMaxBytesInFlight}, inFlight: semaphore.NewWeighted(DefaultMaxBytesInFlight)}
			req := (&Request{RequestID: "bench", IncludeData: true, PubsubTopic: topicA, ContentTopics: []string{ct("x")},
				StartTime: i64(100), EndTime: i64(1900), Limit: 20}).Append(nil)
			got, held := s.answer(context.Background(), req)
			if len(got) < 20*size {
				b.Fatalf("response of %d bytes", len(got))
			}
			s.inFlight.Release(held)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.SetBytes(int64(20 * size))
			b.ResetTimer()
			for range b.N {
				_, held := s.answer(context.Background(), req)
				s.inFlight.Release(held)
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/20, "allocs/msg")
		})
	}
}

var _ archive.Archive = (*embedded.Archive)(nil)

// BenchmarkFrameResponse encodes a response of 20 stored messages of 10 kB
// into one length-prefixed buffer: the server's work after the archive
// query. allocs/msg is the allocations per returned message.
func BenchmarkFrameResponse(b *testing.B) {
	resp := &Response{RequestID: "bench", StatusCode: StatusOK, StatusDesc: "OK", Messages: make([]KeyValue, 20)}
	for i := range resp.Messages {
		m := &message.Message{Payload: make([]byte, 10_000), ContentTopic: ct("x"), Timestamp: int64(i + 1)}
		resp.Messages[i] = KeyValue{Hash: hashOf(byte(i)), Wire: m.Encode(nil), PubsubTopic: topicA}
	}
	b.ReportAllocs()
	b.SetBytes(20 * 10_000)
	for b.Loop() {
		frame(resp)
	}
	b.ReportMetric(testing.AllocsPerRun(100, func() { frame(resp) })/20, "allocs/msg")
}
