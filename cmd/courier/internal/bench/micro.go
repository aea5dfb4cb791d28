package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/relay"
)

// window is the most messages in flight (docs/benchmark.md).
const window = 32

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// archiveFailures counts envelopes the archive failed, for the loud check.
type archiveFailures struct{ n atomic.Uint64 }

func (a *archiveFailures) onArchived(t **tracker) func(*message.Envelope, error) {
	return func(env *message.Envelope, err error) {
		if err != nil {
			a.n.Add(1)
			return
		}
		(*t).event(indexOf(env.Message().Payload))
	}
}

// addHandlers registers n application handlers; each counts as one event.
func addHandlers(r *relay.Relay, n int, t **tracker) {
	for h := range n {
		first := h == 0
		r.AddHandler(fmt.Sprintf("bench-%d", h), func(env *message.Envelope) {
			i := indexOf(env.Message().Payload)
			if first {
				(*t).arrival(i)
			}
			(*t).event(i)
		})
	}
}

// runMicro runs the micro scenario: one node, no network for the relay;
// the harness hands fresh wire buffers to the relay's validator and
// dispatch (Relay.Inject). The node's filter service pushes every message
// to filterPeers subscribers over libp2p on 127.0.0.1; with stalled,
// one more subscriber never reads its push stream.
func runMicro(ctx context.Context, cfg Config, w *Workload, name string, stalled bool, filterPeers int) (Row, error) {
	row := NewRow(name, cfg.Profile, w.N)
	dir, err := tempDir(cfg.Dir, "micro")
	if err != nil {
		return row, err
	}
	defer removeAll(dir)
	var t *tracker
	var fails archiveFailures
	var ctr message.Counters
	n, err := node.New(node.Config{
		// Store-sync is on so that its index insert is part of the chain;
		// with no peer it never starts a round.
		NoListen: filterPeers == 0 && !stalled, ListenAddress: "127.0.0.1",
		Relay: true, Store: true, StoreSync: true, StoreSyncInterval: -1, Filter: filterPeers > 0 || stalled,
		DataDir: dir, PubsubTopics: []string{cfg.PubsubTopic},
		Counters: &ctr, OnArchived: fails.onArchived(&t), Logger: quietLogger,
		// Every filter subscriber dials from 127.0.0.1: no IP colocation limit.
		Discovery: node.DiscoveryConfig{IPColocationLimit: -1},
	})
	if err != nil {
		return row, err
	}
	t = newTracker(w.Total(), w.Warmup, 1+cfg.Handlers+filterPeers, window)
	addHandlers(n.Relay(), cfg.Handlers, &t)
	if err := n.Start(ctx); err != nil {
		n.Stop(ctx)
		return row, err
	}
	if n.Filter() != nil {
		subs, err := startFilterSubscribers(ctx, n, cfg, filterPeers, stalled, &t)
		if err != nil {
			n.Stop(ctx)
			return row, err
		}
		defer subs.close()
	}
	row.FilterPeers = float64(filterPeers)
	stop := startProgress(cfg.Progress, name, t)
	var p phase
	var produceErr error
	produce := func(from, to int, measured bool) {
		for i := from; i < to && produceErr == nil; i++ {
			if produceErr = t.acquire(ctx, i); produceErr != nil {
				return
			}
			wire := w.Wire(i, time.Now().UnixNano())
			if measured {
				p.harnessBytes += int64(cap(wire))
			}
			if err := harness.Inject(n.Relay(), cfg.PubsubTopic, wire); err != nil {
				produceErr = err
			}
		}
	}
	runtime.GC() // the live heap metric and GC pacing start from this scenario's heap
	produce(0, w.Warmup, false)
	err = t.wait(ctx, w.Warmup, func() string { return dropSummary(n.Relay(), &fails) })
	if err == nil && produceErr == nil {
		p.begin(ctr.Snapshot(), ctr.Snapshot(), n.Relay().Stats().MsgIDHashes)
		t.startMeasuring() // after begin's GC: the live heap metric is current
		archiveCPU := n.Archive().Stats().WriterCPU
		produce(w.Warmup, w.Total(), true)
		err = t.wait(ctx, w.Total(), func() string { return dropSummary(n.Relay(), &fails) })
		p.end(ctr.Snapshot(), ctr.Snapshot(), n.Relay().Stats().MsgIDHashes)
		if d := n.Archive().Stats().WriterCPU - archiveCPU; d > 0 {
			row.ArchiveCPUNsPerMsg = float64(d) / float64(w.N)
		}
	}
	stop()
	if err == nil {
		err = produceErr
	}
	if err == nil {
		err = checkDrops(name, n.Relay(), &fails)
	}
	if err == nil {
		err = checkFilter(name, n, stalled)
	}
	if f := n.Filter(); f != nil && stalled {
		st := f.Stats()
		fmt.Fprintf(cfg.Out, "%s: filter pushes %d written, %d dropped on the stalled subscriber's full queue\n", name, st.Pushed, st.Dropped)
	}
	p.fill(&row, w, t)
	row.WireBytesPerMsg = float64(p.proc1.DecodedBytes-p.proc0.DecodedBytes) / float64(w.N)
	if serr := n.Stop(context.Background()); err == nil && serr != nil {
		err = serr
	}
	return row, err
}

func dropSummary(r *relay.Relay, fails *archiveFailures) string {
	return fmt.Sprintf("relay drops %v, archive failures %d", r.Stats().Drops, fails.n.Load())
}

// checkDrops fails the run loudly if any message was lost anywhere.
func checkDrops(name string, r *relay.Relay, fails *archiveFailures) error {
	st := r.Stats()
	if st.TotalDrops() != 0 || fails.n.Load() != 0 {
		return fmt.Errorf("bench: %s lost messages: %s", name, dropSummary(r, fails))
	}
	return nil
}
