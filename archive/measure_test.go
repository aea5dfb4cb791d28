//go:build linux

package archive_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// TestMeasure compares, in one process and in alternating rounds, the
// append bound, the archive alone and decode+hash+archive at the seed mix,
// with the default Config. It runs only when COURIER_ARCHIVE_MEASURE holds
// the number of messages per run:
//
//	COURIER_ARCHIVE_MEASURE=20000 go test -run TestMeasure -v ./archive/
//
// Before each run the page cache is written back (sync(2)), so no run pays
// for the dirty pages of the one before. A run ends after the last fsync
// (the archive's Close); it also reports the rate at which messages were
// acknowledged (the archive: committed, surviving kill -9; the bound:
// fsynced).
func TestMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COURIER_ARCHIVE_MEASURE"))
	if n <= 0 {
		t.Skip("set COURIER_ARCHIVE_MEASURE to the messages per run")
	}
	msgs, wires := seedMix(t, benchPool, 7)
	mean := meanSize(wires)
	runs := []struct {
		name string
		run  func(dir string) (time.Time, error) // returns when the last message was acknowledged
	}{
		{"append bound (fsync every 64)", func(dir string) (time.Time, error) { return runBound(dir, wires, n) }},
		{"archive alone", func(dir string) (time.Time, error) { return runArchive(dir, msgs, wires, n, false) }},
		{"decode+hash+archive", func(dir string) (time.Time, error) { return runArchive(dir, msgs, wires, n, true) }},
	}
	const rounds = 5
	rates := make([][]float64, len(runs))
	ackRates := make([][]float64, len(runs))
	for round := range rounds {
		for k, r := range runs {
			dir := t.TempDir()
			unix.Sync()
			start := time.Now()
			acked, err := r.run(dir)
			if err != nil {
				t.Fatal(err)
			}
			rate := float64(n) / time.Since(start).Seconds()
			ackRate := float64(n) / acked.Sub(start).Seconds()
			rates[k] = append(rates[k], rate)
			ackRates[k] = append(ackRates[k], ackRate)
			t.Logf("round %d  %-30s %6.0f msg/s  %5.0f MB/s (acknowledged: %6.0f msg/s)", round, r.name, rate, rate*float64(mean)/1e6, ackRate)
			os.RemoveAll(dir)
		}
	}
	bound := median(rates[0])
	for k, r := range runs {
		t.Logf("median  %-30s %6.0f msg/s  %.2f of the bound (acknowledged: %6.0f msg/s)", r.name, median(rates[k]), median(rates[k])/bound, median(ackRates[k]))
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
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
	return time.Now(), f.Sync()
}

// runArchive appends n messages and closes the archive. With decode, each
// message is decoded from its wire bytes and hashed, as the relay
// validator does, after its timestamp is set to a growing value (which
// gives the reused wire bytes distinct hashes; the wire bytes keep the old
// one). Without, the hash is made up and no byte is hashed.
func runArchive(dir string, msgs []*message.Message, wires [][]byte, n int, decode bool) (time.Time, error) {
	a, err := archive.Open(dir, archive.Config{})
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
	err = a.Close()
	return acked, err
}
