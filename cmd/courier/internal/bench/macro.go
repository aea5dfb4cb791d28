package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/relay"
)

// publishVia is how node A publishes in runMacro.
type publishVia int

const (
	viaAPI  publishVia = iota // Node.PublishWith: the payload written once, into the encoding
	viaCopy                   // Node.Publish of a payload in a buffer of its own, copied into the encoding
	viaREST                   // POST /relay/v1/messages, 32 requests in flight at most
)

// runMacro runs the macro scenarios: node A publishes (as via says) over
// real libp2p TCP on 127.0.0.1; node B relays, archives and runs the
// handlers.
func runMacro(ctx context.Context, cfg Config, w *Workload, name string, via publishVia) (Row, error) {
	viaREST := via == viaREST
	if cfg.StoreDBURL != "" {
		name += "[postgres]"
	}
	row := NewRow(name, cfg.Profile, w.N)
	var dbURL string
	if cfg.StoreDBURL != "" {
		// B archives in Postgres, in a schema of its own for this run.
		u, drop, err := scratchSchema(ctx, cfg.StoreDBURL)
		if err != nil {
			return row, err
		}
		defer drop()
		dbURL = u
	}
	pair, err := startPair(ctx, cfg, w, pairConfig{dirName: "macro", window: cfg.Inflight, ackLatency: true,
		configure: func(a, b *node.Config) { a.REST, a.RESTAddress, b.DBURL = viaREST, "127.0.0.1", dbURL }})
	defer pair.close()
	if err != nil {
		return row, err
	}
	a, b, t := pair.a, pair.b, pair.t
	p := cfg.newPhase(name)
	publish := func(i int) (int64, error) { // as an application writes its payload: once, in place
		m := &message.Message{ContentTopic: w.ContentTopic, Timestamp: time.Now().UnixNano()}
		_, err := a.PublishWith(ctx, cfg.PubsubTopic, m, w.Size(i), func(p []byte) error { w.FillPayload(p, i); return nil })
		return 0, err
	}
	if via == viaCopy {
		publish = func(i int) (int64, error) {
			payload := make([]byte, w.Size(i))
			w.FillPayload(payload, i)
			m := &message.Message{Payload: payload, ContentTopic: w.ContentTopic, Timestamp: time.Now().UnixNano()}
			_, err := a.Publish(ctx, cfg.PubsubTopic, m)
			return int64(cap(payload)), err
		}
	}
	var rp *restPublisher
	if viaREST {
		rp = newRESTPublisher(a.HTTPAddrs()[0], cfg.PubsubTopic, w, cfg.Inflight)
		publish = rp.publish
	}
	stop := startProgress(cfg.Progress, name, t)
	var arch0 archive.Stats
	asNode(ctx, "publisher", func() {
		err = drive(ctx, cfg, w, t, &p, publish, pair.losses, func() { arch0 = b.Archive().Stats(); p.begin(pair.proc(), pair.cb.Snapshot(), pair.msgIDs()) })
	})
	if rp != nil {
		rp.wait()
		if err == nil {
			err = rp.err()
		}
	}
	p.end(pair.proc(), pair.cb.Snapshot(), pair.msgIDs())
	stop()
	noteWarmup(cfg, name, &p)
	noteArchive(cfg, name, arch0, b.Archive().Stats())
	if err == nil {
		err = pair.checkDrops(name)
	}
	p.fill(&row, w, t)
	row.WireBytesPerMsg = float64(p.recv1.DecodedBytes-p.recv0.DecodedBytes) / float64(w.N)
	row.Trace.CacheBoundBytes = cacheBound(row, 2, p.sent)
	return row, err
}

// noteWarmup prints how a steady-state warm-up of row name ended.
func noteWarmup(cfg Config, name string, p *phase) {
	if p.warmup != "" {
		fmt.Fprintf(cfg.Out, "%s: %s\n", name, p.warmup)
	}
}

// noteArchive prints what the receiver's archive did between two of its
// Stats: the batches it committed and how long they took, its fsync rounds.
func noteArchive(cfg Config, name string, a, b archive.Stats) {
	batches, syncs := b.Batches-a.Batches, b.Syncs-a.Syncs
	if batches == 0 {
		return
	}
	var syncMean time.Duration
	if syncs > 0 {
		syncMean = (b.SyncTime - a.SyncTime) / time.Duration(syncs)
	}
	fmt.Fprintf(cfg.Out, "%s: the archive committed %d batches of %.1f messages, %.0f µs each on average (the longest since it opened %.1f ms); %d fsync rounds of %.1f ms on average\n",
		name, batches, float64(b.Inserts+b.Duplicates-a.Inserts-a.Duplicates)/float64(batches),
		float64((b.CommitTime-a.CommitTime)/time.Duration(batches))/1e3, float64(b.MaxCommit)/1e6, syncs, float64(syncMean)/1e6)
}

// cacheBound returns the bytes the gossipsub message caches of nodes hold
// by protocol at r's rate and wire size: each keeps HistoryLength
// heartbeats of messages (6 of 1 s, relay.NwakuGossipSubParams), or every
// message of a run of total messages when that is fewer.
func cacheBound(r Row, nodes, total int) float64 {
	p := relay.NwakuGossipSubParams()
	held := float64(p.HistoryLength) * p.HeartbeatInterval.Seconds() * r.MsgPerS
	return float64(nodes) * min(held, float64(total)) * r.WireBytesPerMsg
}

// drive publishes the workload with the window and pacing of cfg: the
// warm-up, then begin, then the measured messages. publish returns the
// bytes the harness allocated to make message i. With cfg.steady the
// warm-up ends early, once the live heap has reached its plateau (see
// plateau), and the messages sent are counted in p.sent either way.
func drive(ctx context.Context, cfg Config, w *Workload, t *tracker, p *phase,
	publish func(i int) (int64, error), losses func() string, begin func()) error {
	// /gc/heap/live is the live heap as of the last GC: collect now, so
	// that neither it nor the GC's pacing still reflects the previous
	// scenario's heap.
	runtime.GC()
	p.rate = cfg.Rate
	var warm *plateau
	if cfg.steady {
		warm = newPlateau()
	}
	run := func(from, to int, measured bool) (sent int, err error) {
		start := time.Now()
		for i := from; i < to; i++ {
			if warm != nil && !measured && warm.reached(time.Now(), readMem) {
				return i - from, nil
			}
			if cfg.Rate > 0 {
				due := start.Add(time.Duration(float64(i-from) / cfg.Rate * float64(time.Second)))
				if err := sleepUntil(ctx, due); err != nil {
					return i - from, err
				}
			}
			if err := t.acquire(ctx, i); err != nil {
				return i - from, err
			}
			n, err := publish(i)
			if err != nil {
				return i - from, fmt.Errorf("bench: publish message %d: %w", i, err)
			}
			if measured {
				p.harnessBytes += n
			}
		}
		return to - from, nil
	}
	warmed, err := run(0, w.Warmup, false)
	p.sent = warmed
	if err != nil {
		return err
	}
	if err := t.wait(ctx, warmed, losses); err != nil {
		return err
	}
	if warm != nil {
		p.warmup = warm.summary(warmed)
	}
	begin()
	t.startMeasuring() // after begin's GC: the live heap metric is current
	measured, err := run(w.Warmup, w.Total(), true)
	p.sent += measured
	if err != nil {
		return err
	}
	return t.wait(ctx, p.sent, losses)
}

// Steady-state warm-up (Config.Steady): the gossipsub message cache of a
// node keeps HistoryLength heartbeats of messages (6 s in nwaku's
// parameters) and the seen-message cache their ids, so the live heap of a
// macro run grows for the first seconds of traffic whatever the warm-up
// count. The live heap is only known at the end of a GC cycle; a steady
// warm-up lasts at least that history and one more heartbeat, then until
// two consecutive GC cycles ended after the history find live heaps within
// plateauSlack of each other, at most maxSteadyWarmup.
const (
	plateauSlack    = 1.05
	maxSteadyWarmup = 60 * time.Second
	// steadyWarmupMessages bounds the messages a steady warm-up may send:
	// a minute at 2,000 msg/s.
	steadyWarmupMessages = 120_000
)

// plateau watches the live heap during a steady-state warm-up.
type plateau struct {
	start, last time.Time
	history     time.Duration // the gossipsub message history
	cycles      uint64        // GC cycles at the last sample
	lives       []uint64      // live heap at the end of each GC cycle after history
	capped      bool
}

func newPlateau() *plateau {
	p := relay.NwakuGossipSubParams()
	return &plateau{start: time.Now(), history: time.Duration(p.HistoryLength) * p.HeartbeatInterval, cycles: readMem().gcCycles}
}

// reached samples the runtime's metrics with read every 50 ms and reports
// whether the warm-up is over at now.
func (p *plateau) reached(now time.Time, read func() memSample) bool {
	if now.Sub(p.last) < 50*time.Millisecond {
		return false
	}
	p.last = now
	elapsed := now.Sub(p.start)
	if m := read(); m.gcCycles != p.cycles {
		p.cycles = m.gcCycles
		if elapsed >= p.history {
			p.lives = append(p.lives, m.live)
		}
	}
	if elapsed >= maxSteadyWarmup {
		p.capped = true
		return true
	}
	n := len(p.lives)
	return elapsed >= p.history+time.Second && n >= 2 && float64(p.lives[n-1]) <= plateauSlack*float64(p.lives[n-2])
}

// summary describes the warm-up that sent n messages.
func (p *plateau) summary(n int) string {
	how := "the live heap reached its plateau"
	if p.capped {
		how = fmt.Sprintf("no plateau within %v", maxSteadyWarmup)
	}
	live := uint64(0)
	if len(p.lives) > 0 {
		live = p.lives[len(p.lives)-1]
	}
	return fmt.Sprintf("warmed up %.1f s, %d messages: %s at %.1f MB live", time.Since(p.start).Seconds(), n, how, float64(live)/1e6)
}

// connectMesh connects a to b and waits until each sees the other on topic
// (peersA and peersB list the peers each side knows on a topic) and a
// heartbeat has had time to graft the mesh.
func connectMesh(ctx context.Context, a, b host.Host, peersA, peersB func(topic string) []peer.ID, topic string) error {
	if err := a.Connect(ctx, peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		return fmt.Errorf("bench: connect nodes: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !(contains(peersA(topic), b.ID()) && contains(peersB(topic), a.ID())) {
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: nodes did not see each other on %s within 15 s", topic)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond) // one gossipsub heartbeat grafts the mesh
	return nil
}

func contains(ids []peer.ID, id peer.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// runMacroBare runs the same two-node workload on gossipsub alone: no Waku
// validator, no decode, no consumers; done when B's subscription delivers.
func runMacroBare(ctx context.Context, cfg Config, w *Workload, name string) (Row, error) {
	// gossipsub runs until its context ends: end it with the scenario, or
	// its router and message cache outlive it and weigh on the next rows.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	row := NewRow(name, cfg.Profile, w.N)
	var msgIDs atomic.Uint64
	// The same hosts as the nodes' (node.New with relay off: TCP, TLS or
	// Noise, Yamux, identify, ping, metadata), with plain gossipsub on top.
	mk := func(label string) (n *node.Node, ps *pubsub.PubSub, err error) {
		asNode(ctx, label, func() {
			if n, err = node.New(node.Config{ListenAddress: "127.0.0.1", Muxers: cfg.muxers(), Logger: quietLogger}); err != nil {
				return
			}
			ps, err = pubsub.NewGossipSub(ctx, n.Host(),
				pubsub.WithGossipSubParams(relay.NwakuGossipSubParams()),
				pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(),
				pubsub.WithMessageIdFn(func(m *pb.Message) string { return bareMessageID(&msgIDs, m) }),
				pubsub.WithValidateQueueSize(1024), pubsub.WithPeerOutboundQueueSize(1024),
				pubsub.WithMaxMessageSize(message.MaxSize+64*1024))
			if err != nil {
				n.Stop(ctx)
			}
		})
		return n, ps, err
	}
	na, psa, err := mk("A")
	if err != nil {
		return row, err
	}
	defer na.Stop(context.Background())
	nb, psb, err := mk("B")
	if err != nil {
		return row, err
	}
	defer nb.Stop(context.Background())
	ta, err := psa.Join(cfg.PubsubTopic)
	if err != nil {
		return row, err
	}
	tb, err := psb.Join(cfg.PubsubTopic)
	if err != nil {
		return row, err
	}
	if _, err := ta.Subscribe(); err != nil {
		return row, err
	}
	sub, err := tb.Subscribe(pubsub.WithBufferSize(1024))
	if err != nil {
		return row, err
	}
	t := newTracker(w.Total(), w.Warmup, 1, cfg.Inflight)
	asNode(ctx, "B", func() {
		go func() {
			for {
				m, err := sub.Next(ctx)
				if err != nil {
					return
				}
				i := wireIndex(m.Data)
				t.arrival(i)
				t.event(i)
			}
		}()
	})
	defer sub.Cancel()
	asNode(ctx, "A", func() { err = connectMesh(ctx, na.Host(), nb.Host(), psa.ListPeers, psb.ListPeers, cfg.PubsubTopic) })
	if err != nil {
		return row, err
	}
	p := cfg.newPhase(name)
	var none message.CounterSnapshot
	var wireBytes int64 // of the measured messages
	publish := func(i int) (int64, error) {
		wire := w.Wire(i, time.Now().UnixNano())
		if i >= w.Warmup {
			wireBytes += int64(len(wire))
		}
		return int64(cap(wire)), ta.Publish(ctx, wire)
	}
	stop := startProgress(cfg.Progress, name, t)
	asNode(ctx, "publisher", func() {
		err = drive(ctx, cfg, w, t, &p, publish, func() string { return "gossipsub delivered too few" }, func() { p.begin(none, none, msgIDs.Load()) })
	})
	p.end(none, none, msgIDs.Load())
	stop()
	noteWarmup(cfg, name, &p)
	p.fill(&row, w, t)
	row.DecodesPerMsg, row.HashesPerMsg, row.EncodesPerMsg = 0, 0, 0
	row.RecvDecodesPerMsg, row.RecvHashesPerMsg = 0, 0
	row.WireBytesPerMsg = float64(wireBytes) / float64(w.N)
	row.Trace.CacheBoundBytes = cacheBound(row, 2, p.sent)
	return row, err
}

// bareMessageID is macro-bare's gossipsub message id, sha256(data) as the
// relay's, counted in n.
func bareMessageID(n *atomic.Uint64, m *pb.Message) string {
	n.Add(1)
	s := sha256.Sum256(m.Data)
	return string(s[:])
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
