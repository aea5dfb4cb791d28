package archive_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// TestMeasureDrivers compares the two drivers with their default Config:
// insert throughput at the seed mix (N messages appended as fast as
// Append takes them; the rate at which they were acknowledged, i.e.
// committed) and then the latency of 2,000 store queries of a page of 20
// with data, one content topic and a time range, in random places of the
// archive. It runs only when COURIER_ARCHIVE_COMPARE holds N:
//
//	COURIER_ARCHIVE_COMPARE=10000 go test -run TestMeasureDrivers -v ./archive/
//
// Postgres is the throwaway server of internal/pgtest on the same machine
// and disk (fsync and synchronous_commit on, PostgreSQL's defaults).
func TestMeasureDrivers(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COURIER_ARCHIVE_COMPARE"))
	if n <= 0 {
		t.Skip("set COURIER_ARCHIVE_COMPARE to the messages per driver")
	}
	msgs, wires := seedMix(t, benchPool, 7)
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{})
		const t0 = 1_800_000_000_000_000_000
		ctx := context.Background()
		acked := make(chan struct{})
		start := time.Now()
		for i := range n {
			var seed [8]byte
			binary.LittleEndian.PutUint64(seed[:], uint64(i))
			m := *msgs[i%benchPool]
			m.Timestamp = t0 + int64(i)*1000
			env := message.NewEnvelopeWithHash(&m, "/waku/2/rs/1/0", wires[i%benchPool], sha256.Sum256(seed[:]))
			var done func(error)
			if i == n-1 {
				done = func(error) { close(acked) }
			}
			if err := a.Append(ctx, env, done); err != nil {
				t.Fatal(err)
			}
		}
		<-acked
		took := time.Since(start)
		st := a.Stats()
		if st.Inserts != uint64(n) || st.Failed != 0 {
			t.Fatalf("stats %+v", st)
		}
		t.Logf("%s: %d inserts in %v: %.0f msg/s, %.0f MB/s, %d batches", d.name, n, took.Round(time.Millisecond),
			float64(n)/took.Seconds(), float64(st.BytesAppended)/took.Seconds()/1e6, st.Batches)
		r := rand.New(rand.NewPCG(1, 2))
		lat := make([]time.Duration, 2000)
		for k := range lat {
			from := t0 + int64(r.IntN(max(1, n-100)))*1000
			q := archive.Query{PubsubTopic: "/waku/2/rs/1/0", ContentTopics: []string{"/courier/1/bench/proto"},
				StartTime: &from, EndTime: new(int64), Limit: 20, IncludeData: true, Forward: k%2 == 0}
			*q.EndTime = from + 1000*1000
			s := time.Now()
			res, err := a.Query(ctx, q)
			lat[k] = time.Since(s)
			if err != nil || len(res.Messages) != 20 {
				t.Fatalf("query: %d messages, %v", len(res.Messages), err)
			}
		}
		slices.Sort(lat)
		t.Logf("%s: query (page of 20 with data, one content topic, a time range) p50 %v p99 %v max %v", d.name,
			lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	})
}
