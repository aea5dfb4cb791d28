package bench

import (
	"context"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestWritePlots runs a tiny micro and macro-bare and checks that each chart
// is a PNG that decodes, and that the series behind them hold what the run
// recorded.
func TestWritePlots(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes")
	}
	rows, err := Run(context.Background(), Config{Scenarios: []string{"micro", "macro-bare"}, N: 100, Warmup: 10, Profile: "10kB", FilterPeers: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		tr := r.Trace
		if tr == nil || len(tr.Heap) < 2 || len(tr.Latency) == 0 {
			t.Fatalf("%s: trace %+v, want a heap sample every 50 of 110 messages and a latency CDF", r.Scenario, tr)
		}
		if last := tr.Latency[len(tr.Latency)-1]; last.Quantile != 1 {
			t.Fatalf("%s: the latency CDF ends at %v, want 1", r.Scenario, last.Quantile)
		}
	}
	// macro-bare: 110 messages of 10 kB (and 34 bytes of fields) fit in
	// 6 s of any rate, so each of the two caches holds the whole run.
	if r := rows[1]; r.WireBytesPerMsg != 10_034+3 || r.Trace.CacheBoundBytes != 2*110*r.WireBytesPerMsg {
		t.Fatalf("macro-bare: wire %v bytes per message, cache bound %v", r.WireBytesPerMsg, r.Trace.CacheBoundBytes)
	}
	if b := rows[0].Trace.CacheBoundBytes; !math.IsNaN(b) {
		t.Fatalf("micro has no gossipsub router but a cache bound %v", b)
	}
	dir := filepath.Join(t.TempDir(), "plots")
	if err := WritePlots(dir, rows); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{HeapPlot, LatencyPlot, ThroughputPlot} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
			t.Fatalf("%s is %v", name, b)
		}
	}
	if err := WritePlots(dir, []Row{NewRow("libnet", "10kB", 1)}); !errors.Is(err, ErrNoTrace) {
		t.Fatalf("rows without traces: %v, want ErrNoTrace", err)
	}
}
