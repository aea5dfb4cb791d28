package embedded_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/archive"
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
