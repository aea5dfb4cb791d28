package archive_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

// newEnv encodes and decodes a message as the relay validator would and
// returns its envelope.
func newEnv(tb testing.TB, pubsub, content string, ts int64, payload []byte) *message.Envelope {
	tb.Helper()
	env, err := makeEnv(pubsub, content, ts, payload)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return env
}

func makeEnv(pubsub, content string, ts int64, payload []byte) (*message.Envelope, error) {
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

// seedMix returns n encoded messages of the seed payload mix: 25 % 10,000,
// 50 % 50,000 and 25 % 150,000 payload bytes (mean 65 kB), random bytes.
func seedMix(tb testing.TB, n int, seed uint64) ([]*message.Message, [][]byte) {
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

// appendWait appends env and waits for its acknowledgement.
func appendWait(tb testing.TB, a archive.Archive, env *message.Envelope) {
	tb.Helper()
	ack := make(chan error, 1)
	if err := a.Append(context.Background(), env, func(err error) { ack <- err }); err != nil {
		tb.Fatalf("Append: %v", err)
	}
	if err := testwait.Recv(tb, ack, "the acknowledgement"); err != nil {
		tb.Fatalf("Append acknowledged with %v", err)
	}
}

func openT(tb testing.TB, dir string, cfg archive.Config) *archive.Embedded {
	tb.Helper()
	a, err := archive.Open(dir, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return a
}

// driver opens archives of one implementation for the conformance tests,
// which run against every driver.
type driver struct {
	name string
	// recordOverhead is what Stats.BytesAppended counts per message besides
	// its wire bytes.
	recordOverhead int
	// open opens an archive on a new, empty store and returns it with a
	// function that opens the same store again (after Close). Both close
	// what they open at the end of the test.
	open func(t testing.TB, cfg archive.Config) (archive.Archive, func(archive.Config) archive.Archive)
}

var drivers = []driver{
	{name: "embedded", recordOverhead: 8, open: func(t testing.TB, cfg archive.Config) (archive.Archive, func(archive.Config) archive.Archive) {
		dir := t.TempDir()
		reopen := func(cfg archive.Config) archive.Archive {
			a := openT(t, dir, cfg)
			t.Cleanup(func() { a.Close() })
			return a
		}
		return reopen(cfg), reopen
	}},
	{name: "postgres", open: func(t testing.TB, cfg archive.Config) (archive.Archive, func(archive.Config) archive.Archive) {
		url := pgtest.DB(t)
		reopen := func(cfg archive.Config) archive.Archive {
			a, err := archive.OpenPostgres(context.Background(), url, cfg)
			if err != nil {
				t.Fatalf("OpenPostgres: %v", err)
			}
			t.Cleanup(func() { a.Close() })
			return a
		}
		return reopen(cfg), reopen
	}},
}

// forDrivers runs f as a subtest for each driver. The Postgres subtests
// skip when PostgreSQL is not installed (and fail when CI=true).
func forDrivers(t *testing.T, f func(t *testing.T, d driver)) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) { f(t, d) })
	}
}
