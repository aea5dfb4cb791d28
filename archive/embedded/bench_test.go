package embedded_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
)

// BenchmarkAppend measures the embedded archive at the seed payload mix
// with the default Config (the durability users get): b.N appends, then
// Close, which commits and fsyncs the rest. Every message has its own hash
// and a timestamp that grows; the 3,000 encoded messages are reused, so the
// timed work is the archive's alone.
func BenchmarkAppend(b *testing.B) { benchAppend(b, archive.Config{}) }

// BenchmarkAppendObserved is BenchmarkAppend with the insert durations
// observed into a Prometheus histogram, as the node does.
func BenchmarkAppendObserved(b *testing.B) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "insert_seconds"})
	benchAppend(b, archive.Config{OnInsert: func(_ *message.Envelope, d time.Duration) { h.Observe(d.Seconds()) }})
}

func benchAppend(b *testing.B, cfg archive.Config) {
	msgs, wires := seedMix(b, benchPool, 7)
	a := openT(b, b.TempDir(), cfg)
	ctx := context.Background()
	b.SetBytes(meanSize(wires))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var seed [8]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(i))
		m := *msgs[i%benchPool] // a timestamp that grows, as live traffic's does
		m.Timestamp = 1_800_000_000_000_000_000 + int64(i)
		env := message.NewEnvelopeWithHash(&m, "/waku/2/rs/1/0", wires[i%benchPool], sha256.Sum256(seed[:]))
		if err := a.Append(ctx, env, nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	if st := a.Stats(); st.Inserts != uint64(b.N) {
		b.Fatalf("stored %d of %d", st.Inserts, b.N)
	}
}

// BenchmarkAppendBound is the bound the archive is measured against: the
// same messages appended to one file in the same kind of directory, an
// fsync every 64 messages.
func BenchmarkAppendBound(b *testing.B) {
	_, wires := seedMix(b, benchPool, 7)
	f, err := os.Create(filepath.Join(b.TempDir(), "bound"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(meanSize(wires))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(wires[i%benchPool]); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkAppendInFlight appends the seed mix with at most window messages
// unacknowledged, as a node relaying with a publish window does, so that
// batches stay small. It reports writer-ns/msg (Stats.WriterCPU per
// message: the index transaction and the segment pwritev, kernel time
// included) and msg/batch.
func BenchmarkAppendInFlight(b *testing.B) {
	msgs, wires := seedMix(b, benchPool, 7)
	for _, window := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) { benchInFlight(b, window, msgs, wires) })
	}
}

// BenchmarkAppendIndex is BenchmarkAppendInFlight with 200-byte payloads
// and a window of 8: the writer's CPU is then mostly the index insert. With
// a window of 1 every batch is one message, as at the seed's rate (353
// msg/s), and the transaction's own statements weigh as much as the insert.
func BenchmarkAppendIndex(b *testing.B) {
	msgs, wires := smallMessages(b)
	for _, window := range []int{8, 1} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) { benchInFlight(b, window, msgs, wires) })
	}
}

// BenchmarkAppendIndexFilled is BenchmarkAppendIndex on an archive that
// already holds 100,000 or 1,000,000 messages, as a store node's does:
// the writer's page cache is then full, which is where a commit's cost
// of truncating it showed (pcache.go). Each run of a case fills its
// archive first (about 1 and 11 s), so give it a count: -benchtime
// 20000x.
func BenchmarkAppendIndexFilled(b *testing.B) {
	msgs, wires := smallMessages(b)
	const t0 = 1_800_000_000_000_000_000 // Unix ns
	for _, stored := range []int{100_000, 1_000_000} {
		for _, window := range []int{8, 1} {
			b.Run(fmt.Sprintf("stored=%d/window=%d", stored, window), func(b *testing.B) {
				benchAfterFill(b, stored, func(i int) int64 { return t0 + int64(i) },
					window, func(i int) int64 { return t0 + int64(stored+i) }, msgs, wires)
			})
		}
	}
}

// smallMessages returns benchPool messages of 200-byte payloads on four
// content topics, and their wire bytes.
func smallMessages(b *testing.B) ([]*message.Message, [][]byte) {
	msgs := make([]*message.Message, benchPool)
	wires := make([][]byte, benchPool)
	for i := range msgs {
		env := newEnv(b, "/waku/2/rs/1/0", fmt.Sprintf("/courier/1/bench-%d/proto", i%4), 1, make([]byte, 200))
		msgs[i], wires[i] = env.Message(), env.Wire()
	}
	return msgs, wires
}

// BenchmarkAppendUntimed is BenchmarkAppendIndex for messages without a
// timestamp, appended to an archive that holds 100,000 messages spread
// over 1, 10 or 150 time partitions (150 are about 30 days): the insert of
// each probes every partition for a duplicate (insertRowAnyTime).
func BenchmarkAppendUntimed(b *testing.B) {
	msgs, wires := smallMessages(b)
	const stored, partition = 100_000, int64(1) << 44 // ns
	for _, parts := range []int64{1, 10, 150} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			benchAfterFill(b, stored, func(i int) int64 { return partition + int64(i)*(parts*partition/stored) },
				8, func(int) int64 { return 0 }, msgs, wires)
		})
	}
}

// benchInFlight appends b.N messages made of msgs and wires, each with its
// own hash and a timestamp that grows, with at most window unacknowledged.
func benchInFlight(b *testing.B, window int, msgs []*message.Message, wires [][]byte) {
	a := openT(b, b.TempDir(), archive.Config{})
	b.SetBytes(meanSize(wires))
	b.ResetTimer()
	appendN(b, a, 0, b.N, window, msgs, wires, func(i int) int64 { return 1_800_000_000_000_000_000 + int64(i) })
	b.StopTimer()
	reportWriter(b, archive.Stats{}, a)
}

// benchAfterFill fills a new archive with stored messages, message i
// timestamped fillTS(i), 256 unacknowledged at a time, then times b.N
// more with at most window unacknowledged, message i of them timestamped
// ts(i), and reports the writer's CPU and batch size for those alone.
func benchAfterFill(b *testing.B, stored int, fillTS func(i int) int64, window int, ts func(i int) int64, msgs []*message.Message, wires [][]byte) {
	a := openT(b, b.TempDir(), archive.Config{})
	appendN(b, a, 0, stored, 256, msgs, wires, fillTS)
	before := a.Stats()
	b.ResetTimer()
	appendN(b, a, stored, b.N, window, msgs, wires, ts)
	b.StopTimer()
	reportWriter(b, before, a)
}

// appendN appends n messages made of msgs and wires, message i with the
// hash of first+i and the timestamp ts(i), with at most window
// unacknowledged, and returns when all are acknowledged.
func appendN(b *testing.B, a *embedded.Archive, first, n, window int, msgs []*message.Message, wires [][]byte, ts func(i int) int64) {
	b.ReportAllocs()
	ctx := context.Background()
	slots := make(chan struct{}, window)
	done := func(error) { <-slots }
	for i := 0; i < n; i++ {
		var seed [8]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(first+i))
		m := *msgs[i%len(msgs)]
		m.Timestamp = ts(i)
		env := message.NewEnvelopeWithHash(&m, "/waku/2/rs/1/0", wires[i%len(wires)], sha256.Sum256(seed[:]))
		slots <- struct{}{}
		if err := a.Append(ctx, env, done); err != nil {
			b.Fatal(err)
		}
	}
	for range window {
		slots <- struct{}{}
	}
}

// reportWriter reports the writer's CPU per message and the messages per
// batch since before, closes a, and fails the benchmark unless every
// message since before was stored.
func reportWriter(b *testing.B, before archive.Stats, a *embedded.Archive) {
	st := a.Stats()
	inserts := st.Inserts - before.Inserts
	b.ReportMetric(float64(st.WriterCPU-before.WriterCPU)/float64(b.N), "writer-ns/msg")
	b.ReportMetric(float64(inserts)/float64(st.Batches-before.Batches), "msg/batch")
	if err := a.Close(); err != nil {
		b.Fatal(err)
	}
	if inserts != uint64(b.N) {
		b.Fatalf("stored %d of %d", inserts, b.N)
	}
}
