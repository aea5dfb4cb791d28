package message_test

import (
	"fmt"
	"testing"

	"github.com/couriernet/courier/message"
)

var benchSizes = []int{10_000, 50_000, 150_000}

func benchMessage(size int) *message.Message {
	return &message.Message{Payload: make([]byte, size), ContentTopic: "/courier/1/bench/proto", Timestamp: 1700000000000000000}
}

func BenchmarkEncode(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dkB", size/1000), func(b *testing.B) {
			m := benchMessage(size)
			buf := make([]byte, 0, m.Size())
			var c message.Counters
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				buf = m.Append(buf[:0], &c)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dkB", size/1000), func(b *testing.B) {
			wire := benchMessage(size).Encode(nil)
			var c message.Counters
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				if _, err := message.Decode(wire, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHash(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dkB", size/1000), func(b *testing.B) {
			m := benchMessage(size)
			var c message.Counters
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = m.Hash("/waku/2/rs/0/0", &c)
			}
		})
	}
}
