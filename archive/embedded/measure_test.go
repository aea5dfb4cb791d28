//go:build linux

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

	"golang.org/x/sys/unix"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
)

// BenchmarkWritePath compares, at the seed mix with the default Config, the
// append bound (the same bytes appended to one file, an fsync every 64
// messages), the archive alone, and decode+hash+archive. Each sub-benchmark
// writes b.N messages to a fresh directory and ends after the last fsync
// (the archive's Close); before it the page cache is written back
// (sync(2)), so no run pays for the dirty pages of the one before. With
// -count the three run alternately, so compare their medians:
//
//	go test -run '^$' -bench WritePath -benchtime 10000x -count 5 ./archive/
//
// Besides ns/op (per message) and MB/s it reports ack-msg/s, the rate at
// which messages were acknowledged (the archive: committed, surviving kill
// -9; the bound: fsynced). Each run checks that every message was stored.
func BenchmarkWritePath(b *testing.B) {
	msgs, wires := seedMix(b, benchPool, 7)
	runs := []struct {
		name string
		run  func(dir string, n int) (time.Time, error) // returns when the last message was acknowledged
	}{
		{"bound", func(dir string, n int) (time.Time, error) { return runBound(dir, wires, n) }},
		{"archive", func(dir string, n int) (time.Time, error) { return runArchive(dir, msgs, wires, n, false) }},
		{"decode+hash+archive", func(dir string, n int) (time.Time, error) { return runArchive(dir, msgs, wires, n, true) }},
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			dir := b.TempDir()
			b.SetBytes(meanSize(wires))
			unix.Sync()
			b.ResetTimer()
			start := time.Now()
			acked, err := r.run(dir, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/acked.Sub(start).Seconds(), "ack-msg/s")
		})
	}
}

func runBound(dir string, wires [][]byte, n int) (time.Time, error) {
	f, err := os.Create(filepath.Join(dir, "bound"))
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	for i := range n {
		if _, err := f.Write(wires[i%len(wires)]); err != nil {
			return time.Time{}, err
		}
		if i%64 == 63 {
			if err := f.Sync(); err != nil {
				return time.Time{}, err
			}
		}
	}
	if err := f.Sync(); err != nil {
		return time.Time{}, err
	}
	acked := time.Now()
	var want int64
	for i := range n {
		want += int64(len(wires[i%len(wires)]))
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != want {
		return time.Time{}, fmt.Errorf("bound file: %v bytes, %v; want %d", fi.Size(), err, want)
	}
	return acked, nil
}

// runArchive appends n messages and closes the archive. With decode, each
// message is decoded from its wire bytes and hashed, as the relay
// validator does, after its timestamp is set to a growing value (which
// gives the reused wire bytes distinct hashes; the wire bytes keep the old
// one). Without, the hash is made up and no byte is hashed.
func runArchive(dir string, msgs []*message.Message, wires [][]byte, n int, decode bool) (time.Time, error) {
	a, err := embedded.Open(dir, archive.Config{}, embedded.Options{})
	if err != nil {
		return time.Time{}, err
	}
	var acked time.Time
	last := func(error) { acked = time.Now() } // acknowledgements come in order
	ctx := context.Background()
	var c message.Counters
	for i := range n {
		w := wires[i%len(wires)]
		var env *message.Envelope
		if decode {
			m, err := message.Decode(w, &c)
			if err != nil {
				return time.Time{}, err
			}
			m.Timestamp = 1_800_000_000_000_000_000 + int64(i)
			env = message.NewEnvelope(m, "/waku/2/rs/1/0", w, &c)
		} else {
			var seed [8]byte
			binary.LittleEndian.PutUint64(seed[:], uint64(i))
			m := *msgs[i%len(msgs)]
			m.Timestamp = 1_800_000_000_000_000_000 + int64(i)
			env = message.NewEnvelopeWithHash(&m, "/waku/2/rs/1/0", w, sha256.Sum256(seed[:]))
		}
		var done func(error)
		if i == n-1 {
			done = last
		}
		if err := a.Append(ctx, env, done); err != nil {
			return time.Time{}, err
		}
	}
	if err := a.Close(); err != nil {
		return time.Time{}, err
	}
	if st := a.Stats(); st.Inserts != uint64(n) || st.Failed != 0 {
		return time.Time{}, fmt.Errorf("archive stored %d messages, failed %d; want %d stored", st.Inserts, st.Failed, n)
	}
	return acked, nil
}
