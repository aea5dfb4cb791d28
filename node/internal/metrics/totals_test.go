package metrics

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// syncBuf is a bytes.Buffer safe for a logger's goroutine and the test.
type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was written since the last take.
func (b *syncBuf) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// TestLogTotals checks --metrics-logging: every 10 minutes nwaku's lines
// (waku/node/waku_metrics.nim startMetricsLog) for the families the
// registry has, messages as totals, errors as the increase since the last
// log, nothing before the first interval or after the context ends.
func TestLogTotals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		msgs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waku_node_messages_total"}, []string{"type"})
		errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waku_node_errors_total"}, []string{"type"})
		storePeers := prometheus.NewGauge(prometheus.GaugeOpts{Name: "waku_store_peers"})
		reg.MustRegister(msgs, errs, storePeers)
		msgs.WithLabelValues("relay").Add(5)
		errs.WithLabelValues("publish_failure").Add(2)
		errs.WithLabelValues("subscribe_filter_failure").Add(1)
		storePeers.Set(3)

		var out syncBuf
		log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			LogTotals(ctx, reg, log, LogInterval)
			close(done)
		}()

		time.Sleep(LogInterval - time.Second)
		synctest.Wait()
		if got := out.take(); got != "" {
			t.Fatalf("logged before the first interval:\n%s", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		want := `level=INFO msg="Total messages" topics="waku node metrics" count=5
level=INFO msg="Total store peers" topics="waku node metrics" count=3
level=INFO msg="Total errors" topics="waku node metrics" count=3
`
		if got := out.take(); got != want {
			t.Fatalf("first log:\n%s\nwant:\n%s", got, want)
		}

		msgs.WithLabelValues("relay").Add(1)
		errs.WithLabelValues("publish_failure").Add(4)
		storePeers.Set(1)
		time.Sleep(LogInterval)
		synctest.Wait()
		want = strings.NewReplacer("count=5", "count=6", "peers\" topics=\"waku node metrics\" count=3", "peers\" topics=\"waku node metrics\" count=1",
			"errors\" topics=\"waku node metrics\" count=3", "errors\" topics=\"waku node metrics\" count=4").Replace(want)
		if got := out.take(); got != want {
			t.Fatalf("second log:\n%s\nwant:\n%s", got, want)
		}

		cancel()
		<-done
		time.Sleep(2 * LogInterval)
		synctest.Wait()
		if got := out.take(); got != "" {
			t.Fatalf("logged after the context ended:\n%s", got)
		}
	})
}
