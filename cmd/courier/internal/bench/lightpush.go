package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/node"
)

// runMacroLightpush runs macro with a light client in front: a libp2p host
// in the process pushes each message to node A with lightpush v3 (32
// requests in flight at most); A publishes it on relay as it arrived and B
// relays, archives and runs the handlers, as in macro. Under the table it
// prints A's decodes, hashes and encodes per message.
func runMacroLightpush(ctx context.Context, cfg Config, w *Workload, name string) (Row, error) {
	row := NewRow(name, cfg.Profile, w.N)
	pair, err := startPair(ctx, cfg, w, pairConfig{dirName: "macro", window: cfg.Inflight, ackLatency: true,
		configure: func(a, _ *node.Config) { a.Lightpush = true }})
	defer pair.close()
	if err != nil {
		return row, err
	}
	a, t := pair.a, pair.t
	var cc message.Counters
	// The light client is the publishing application.
	var lh host.Host
	asNode(ctx, "publisher", func() {
		if lh, err = libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0")); err != nil {
			return
		}
		// The node drops peers that do not answer metadata, as nwaku does.
		if _, err = metadata.New(lh, metadata.Config{Logger: quietLogger}); err != nil {
			return
		}
		err = lh.Connect(ctx, peer.AddrInfo{ID: a.Host().ID(), Addrs: a.Host().Addrs()})
	})
	if lh != nil {
		defer lh.Close()
	}
	if err != nil {
		return row, err
	}
	lp := &lightPublisher{c: lightpush.NewClient(lh, lightpush.ClientConfig{Counters: &cc}), to: a.Host().ID(), topic: cfg.PubsubTopic, w: w}
	proc := func() message.CounterSnapshot { return pair.proc().Add(cc.Snapshot()) }
	losses := func() string { return fmt.Sprintf("%s; lightpush: %v", pair.losses(), lp.err()) }
	p := cfg.newPhase(name)
	var a0 message.CounterSnapshot
	stop := startProgress(cfg.Progress, name, t)
	asNode(ctx, "publisher", func() {
		err = drive(ctx, cfg, w, t, &p, func(i int) (int64, error) { return lp.publish(ctx, i) }, losses,
			func() { a0 = pair.ca.Snapshot(); p.begin(proc(), pair.cb.Snapshot(), pair.msgIDs()) })
	})
	lp.wait()
	if err == nil {
		err = lp.err()
	}
	p.end(proc(), pair.cb.Snapshot(), pair.msgIDs())
	stop()
	noteWarmup(cfg, name, &p)
	if err == nil {
		err = pair.checkDrops(name)
	}
	d := pair.ca.Snapshot().Sub(a0)
	n := float64(w.N)
	fmt.Fprintf(cfg.Out, "%s: lightpush service node A per message: %.3f decodes, %.3f hashes, %.3f encodes\n",
		name, float64(d.Decodes)/n, float64(d.Hashes)/n, float64(d.Encodes)/n)
	p.fill(&row, w, t)
	row.WireBytesPerMsg = float64(p.recv1.DecodedBytes-p.recv0.DecodedBytes) / n
	row.Trace.CacheBoundBytes = cacheBound(row, 2, p.sent)
	return row, err
}

// lightPublisher pushes workload messages with lightpush v3, each request
// on its own goroutine; the tracker's window bounds how many are in flight.
type lightPublisher struct {
	c     *lightpush.Client
	to    peer.ID
	topic string
	w     *Workload
	wg    sync.WaitGroup
	mu    sync.Mutex
	first error
}

// publish builds message i and pushes it in the background. It returns the
// bytes the harness allocated for the payload.
func (l *lightPublisher) publish(ctx context.Context, i int) (int64, error) {
	payload := make([]byte, l.w.Size(i))
	l.w.FillPayload(payload, i)
	m := &message.Message{Payload: payload, ContentTopic: l.w.ContentTopic, Timestamp: time.Now().UnixNano()}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		resp, err := l.c.Push(ctx, l.to, l.topic, m)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			l.mu.Lock()
			if l.first == nil {
				l.first = fmt.Errorf("bench: lightpush of message %d: %w", i, err)
			}
			l.mu.Unlock()
		}
	}()
	return int64(cap(payload)), nil
}

func (l *lightPublisher) wait() { l.wg.Wait() }

func (l *lightPublisher) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}
