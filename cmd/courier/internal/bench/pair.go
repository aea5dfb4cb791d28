package bench

import (
	"context"
	"fmt"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
)

// nodePair is the two nodes of the macro scenarios over real libp2p TCP on
// 127.0.0.1: A publishes; B relays, archives in a directory of its own and
// runs cfg.Handlers handlers, each message done in t once all of them and
// the archive have seen it.
type nodePair struct {
	a, b   *node.Node
	ca, cb message.Counters // A's and B's codec counters
	fails  archiveFailures  // B's archive's failures
	t      *tracker
	dir    string // B's data directory
}

// pairConfig says how startPair makes the nodes.
type pairConfig struct {
	// dirName names B's temporary data directory (tempDir).
	dirName string
	// window is the most messages in flight (the tracker's).
	window int
	// ackLatency has B's archive report each insert's latency to the
	// tracker (ackLatency).
	ackLatency bool
	// configure, when set, changes A's and B's configurations once the
	// common settings are in.
	configure func(a, b *node.Config)
}

// startPair makes, starts and connects A and B and waits until each sees
// the other on cfg.PubsubTopic with the mesh grafted; every goroutine a
// node starts carries its name in the CPU profile (asNode). The caller
// calls close once done, also after an error.
func startPair(ctx context.Context, cfg Config, w *Workload, pc pairConfig) (p *nodePair, err error) {
	p = &nodePair{}
	if p.dir, err = tempDir(cfg.Dir, pc.dirName); err != nil {
		return p, err
	}
	base := node.Config{ListenAddress: "127.0.0.1", Relay: true, PubsubTopics: []string{cfg.PubsubTopic}, Muxers: cfg.muxers(), Logger: quietLogger}
	acfg, bcfg := base, base
	acfg.Counters = &p.ca
	bcfg.Counters, bcfg.Store, bcfg.DataDir, bcfg.OnArchived = &p.cb, true, p.dir, p.fails.onArchived(&p.t)
	if pc.ackLatency {
		bcfg.ArchiveConfig.OnInsert = ackLatency(&p.t)
	}
	if pc.configure != nil {
		pc.configure(&acfg, &bcfg)
	}
	if asNode(ctx, "A", func() { p.a, err = node.New(acfg) }); err != nil {
		return p, err
	}
	if asNode(ctx, "B", func() { p.b, err = node.New(bcfg) }); err != nil {
		return p, err
	}
	p.t = newTracker(w.Total(), w.Warmup, 1+cfg.Handlers, pc.window)
	asNode(ctx, "B", func() { addHandlers(p.b.Relay(), cfg.Handlers, &p.t) })
	for _, n := range []struct {
		name string
		n    *node.Node
	}{{"A", p.a}, {"B", p.b}} {
		if asNode(ctx, n.name, func() { err = n.n.Start(ctx) }); err != nil {
			return p, err
		}
	}
	asNode(ctx, "A", func() { // A dials: its side of the connection is A's
		err = connectMesh(ctx, p.a.Host(), p.b.Host(), p.a.Relay().TopicPeers, p.b.Relay().TopicPeers, cfg.PubsubTopic)
	})
	return p, err
}

// close stops B, then A, and removes B's directory.
func (p *nodePair) close() {
	if p.b != nil {
		p.b.Stop(context.Background())
	}
	if p.a != nil {
		p.a.Stop(context.Background())
	}
	if p.dir != "" {
		removeAll(p.dir)
	}
}

// msgIDs is the message ids both relays computed.
func (p *nodePair) msgIDs() uint64 {
	return p.a.Relay().Stats().MsgIDHashes + p.b.Relay().Stats().MsgIDHashes
}

// proc is both nodes' codec counters.
func (p *nodePair) proc() message.CounterSnapshot { return p.ca.Snapshot().Add(p.cb.Snapshot()) }

// losses describes what each relay dropped, for a run that came up short.
func (p *nodePair) losses() string {
	return fmt.Sprintf("sender: %s; receiver: %s", dropSummary(p.a.Relay(), &archiveFailures{}), dropSummary(p.b.Relay(), &p.fails))
}

// checkDrops returns an error when either relay dropped messages of the
// run name.
func (p *nodePair) checkDrops(name string) error {
	if err := checkDrops(name+" sender", p.a.Relay(), &archiveFailures{}); err != nil {
		return err
	}
	return checkDrops(name+" receiver", p.b.Relay(), &p.fails)
}
