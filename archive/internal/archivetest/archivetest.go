// Package archivetest holds what the archive's tests share: messages
// encoded and decoded as the relay validator would, the seed payload mix,
// and an Append that waits for its acknowledgement.
package archivetest

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

// BenchPool is how many distinct payloads of the seed mix the benchmarks
// reuse (docs/benchmark.md).
const BenchPool = 3000

// NewEnv encodes and decodes a message as the relay validator would and
// returns its envelope.
func NewEnv(tb testing.TB, pubsub, content string, ts int64, payload []byte) *message.Envelope {
	tb.Helper()
	env, err := MakeEnv(pubsub, content, ts, payload)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return env
}

// MakeEnv is NewEnv returning its error, for a process without a testing.TB.
func MakeEnv(pubsub, content string, ts int64, payload []byte) (*message.Envelope, error) {
	m := &message.Message{Payload: payload, ContentTopic: content, Timestamp: ts}
	if ts != 0 {
		m.Present |= message.HasTimestamp
	}
	wire := m.Encode(nil)
	dm, err := message.Decode(wire, nil)
	if err != nil {
		return nil, err
	}
	return message.NewEnvelope(dm, pubsub, wire, nil), nil
}

// SeedMix returns n encoded messages of the seed payload mix: 25 % 10,000,
// 50 % 50,000 and 25 % 150,000 payload bytes (mean 65 kB), random bytes.
func SeedMix(tb testing.TB, n int, seed uint64) ([]*message.Message, [][]byte) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	msgs := make([]*message.Message, n)
	wires := make([][]byte, n)
	for i := range msgs {
		size := 50_000
		switch p := r.IntN(4); p {
		case 0:
			size = 10_000
		case 3:
			size = 150_000
		}
		payload := make([]byte, size)
		for j := 0; j+8 <= size; j += 8 {
			binary.LittleEndian.PutUint64(payload[j:], r.Uint64())
		}
		m := &message.Message{Payload: payload, ContentTopic: "/courier/1/bench/proto",
			Timestamp: 1_700_000_000_000_000_000 + int64(i), Present: message.HasTimestamp}
		wires[i] = m.Encode(nil)
		dm, err := message.Decode(wires[i], nil)
		if err != nil {
			tb.Fatal(err)
		}
		msgs[i] = dm
	}
	return msgs, wires
}

// MeanSize returns the mean length of wires.
func MeanSize(wires [][]byte) int64 {
	var n int64
	for _, w := range wires {
		n += int64(len(w))
	}
	return n / int64(len(wires))
}

// AppendWait appends env and waits for its acknowledgement.
func AppendWait(tb testing.TB, a archive.Archive, env *message.Envelope) {
	tb.Helper()
	ack := make(chan error, 1)
	if err := a.Append(context.Background(), env, func(err error) { ack <- err }); err != nil {
		tb.Fatalf("Append: %v", err)
	}
	if err := testwait.Recv(tb, ack, "the acknowledgement"); err != nil {
		tb.Fatalf("Append acknowledged with %v", err)
	}
}
