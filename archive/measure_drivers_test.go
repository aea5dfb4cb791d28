package archive_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// BenchmarkDrivers compares the two drivers with their default Config:
// b.N messages of the seed mix appended as fast as Append takes them
// (ack-msg/s: the rate at which they were acknowledged, i.e. committed),
// then 2,000 store queries of a page of 20 with data, one content topic
// and a time range at random places of the archive (query-p50-ms,
// query-p99-ms). Postgres is the throwaway server of internal/pgtest on
// the same machine and disk, with PostgreSQL's default durability:
//
//	go test -run '^$' -bench Drivers -benchtime 10000x ./archive/
//
// Each run checks that every message was stored and every query answered
// a full page.
func BenchmarkDrivers(b *testing.B) {
	msgs, wires := seedMix(b, benchPool, 7)
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			a, _ := d.open(b, archive.Config{Logger: slog.New(slog.DiscardHandler)})
			const t0 = 1_800_000_000_000_000_000
			ctx := context.Background()
			acked := make(chan struct{})
			b.SetBytes(meanSize(wires))
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				var seed [8]byte
				binary.LittleEndian.PutUint64(seed[:], uint64(i))
				m := *msgs[i%benchPool]
				m.Timestamp = t0 + int64(i)*1000
				env := message.NewEnvelopeWithHash(&m, "/waku/2/rs/1/0", wires[i%benchPool], sha256.Sum256(seed[:]))
				var done func(error)
				if i == b.N-1 {
					done = func(error) { close(acked) }
				}
				if err := a.Append(ctx, env, done); err != nil {
					b.Fatal(err)
				}
			}
			<-acked
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ack-msg/s")
			if st := a.Stats(); st.Inserts != uint64(b.N) || st.Failed != 0 {
				b.Fatalf("stats %+v", st)
			}
			if b.N < 120 {
				return // too few for a page of 20 anywhere
			}
			r := rand.New(rand.NewPCG(1, 2))
			lat := make([]time.Duration, 2000)
			for k := range lat {
				from := t0 + int64(r.IntN(b.N-100))*1000
				to := from + 1000*1000
				q := archive.Query{PubsubTopic: "/waku/2/rs/1/0", ContentTopics: []string{"/courier/1/bench/proto"},
					StartTime: &from, EndTime: &to, Limit: 20, IncludeData: true, Forward: k%2 == 0}
				s := time.Now()
				res, err := a.Query(ctx, q)
				lat[k] = time.Since(s)
				if err != nil || len(res.Messages) != 20 {
					b.Fatalf("query: %v, %v", res, err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "query-p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "query-p99-ms")
		})
	}
}
