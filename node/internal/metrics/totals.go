package metrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// LogInterval is how often a node with Config.MetricsLogging logs its
// totals: nwaku's LogInterval (waku/node/waku_metrics.nim).
const LogInterval = 10 * time.Minute

// loggedTotals are the figures nwaku's startMetricsLog logs, in its order
// and with its messages (waku/node/waku_metrics.nim): each the sum of
// every series of a metric family, and for the fresh ones the increase
// since the previous log. A family the node does not export is left out
// rather than logged as 0.
var loggedTotals = []struct {
	msg, family string
	fresh       bool
}{
	{"Total connections initiated", "waku_node_conns_initiated_total", true},
	{"Total messages", "waku_node_messages_total", false},
	{"Total store peers", "waku_store_peers", false},
	{"Total peer exchange peers", "waku_px_peers", false},
	{"Total lightpush peers", "waku_lightpush_peers", false},
	{"Total filter peers", "waku_filter_peers", false},
	{"Total errors", "waku_node_errors_total", true},
}

// LogTotals logs loggedTotals from g at INFO, one line each with the
// figure as count, every interval until ctx ends.
func LogTotals(ctx context.Context, g prometheus.Gatherer, log *slog.Logger, interval time.Duration) {
	log = log.With("topics", "waku node metrics")
	t := time.NewTicker(interval)
	defer t.Stop()
	last := map[string]float64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Gather returns what it could gather along with an error.
		families, err := g.Gather()
		if err != nil {
			log.Warn("metrics logging: gathering metrics", "err", err)
		}
		sums := make(map[string]float64, len(families))
		for _, f := range families {
			sums[f.GetName()] = familySum(f)
		}
		for _, lt := range loggedTotals {
			v, ok := sums[lt.family]
			if !ok {
				continue
			}
			if lt.fresh {
				v, last[lt.family] = v-last[lt.family], v
			}
			log.Info(lt.msg, "count", v)
		}
	}
}

// familySum adds up the values of a counter, gauge or untyped family's
// series; other types count 0.
func familySum(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}
