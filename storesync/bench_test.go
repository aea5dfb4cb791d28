package storesync

import (
	"context"
	"testing"

	"github.com/couriernet/courier/message"
)

// BenchmarkSyncArchives50k syncs two embedded archives of 50,500 messages
// each that differ by 1 % (500 messages only on each side) over libp2p on
// loopback, and reports the session's round trips and bytes. The messages
// span 51 s; the differing ones are either the newest (contiguous, as
// after a downtime) or every 51st (spread over the whole span). Run it
// with -benchtime=1x: building the archives takes longer than the sync.
func BenchmarkSyncArchives50k(b *testing.B) {
	for _, spread := range []bool{false, true} {
		name := map[bool]string{false: "contiguous", true: "spread"}[spread]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				benchSync50k(b, spread)
			}
		})
	}
}

func benchSync50k(b *testing.B, spread bool) {
	b.StopTimer()
	x := newSyncNode(b, Config{StorageCapacity: 60_000})
	y := newSyncNode(b, Config{StorageCapacity: 60_000})
	var common, onlyX, onlyY []*message.Envelope
	for i, env := range testEnvelopes(51_000, "bench") {
		switch {
		case spread && i%51 == 0 && len(onlyX) < 500, !spread && i >= 50_000 && i < 50_500:
			onlyX = append(onlyX, env)
		case spread && i%51 == 1 && len(onlyY) < 500, !spread && i >= 50_500:
			onlyY = append(onlyY, env)
		default:
			common = append(common, env)
		}
	}
	x.store(b, append(common[:len(common):len(common)], onlyX...))
	y.store(b, append(common[:len(common):len(common)], onlyY...))
	x.start(b)
	y.start(b)
	connect(b, y.host, x.host)
	b.StartTimer()
	res, err := y.sync.SyncWith(context.Background(), x.host.ID())
	if err != nil {
		b.Fatal(err)
	}
	waitFor(b, "both archives complete", func() bool {
		return x.sync.Stats().MessagesReceived == uint64(len(onlyY)) && y.sync.Stats().MessagesReceived == uint64(len(onlyX))
	})
	b.StopTimer()
	st := y.sync.Stats()
	b.ReportMetric(float64(len(common)+len(onlyX)), "items_per_side")
	b.ReportMetric(float64(res.RoundTrips), "round_trips")
	b.ReportMetric(float64(st.ReconciliationBytesSent+st.ReconciliationBytesReceived), "reconciliation_bytes")
	b.ReportMetric(float64(st.TransferBytesSent+st.TransferBytesReceived), "transfer_bytes")
}
