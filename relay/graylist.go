package relay

import (
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// graylistCounter counts, as DropGraylisted, the messages gossipsub ignores
// because their sender is graylisted: below the graylist threshold,
// gossipsub's AcceptFrom answers AcceptNone and the whole RPC is dropped
// with no tracer event (go-libp2p-pubsub v0.19 pubsub.go
// handleIncomingRPC). It tells that case apart by the order in which
// gossipsub's event loop works through one RPC: RecvRPC is traced first;
// then, for an accepted RPC, the first message on a joined topic is
// either rejected with a tracer event (blacklist, signing policy, self
// origin) or has its message id computed (shouldPush, Preprocess), before
// the loop takes the next RPC. A message on a topic not joined is ignored
// by gossipsub as well but is no drop: it is left out. So when the next
// RPC is traced and neither happened to the last RPC's first message,
// the last RPC was refused, and its messages on joined topics are counted;
// the count lands when the next RPC (from any peer) arrives.
//
// RecvRPC, Join and Leave run on gossipsub's event loop; RejectMessage and
// the message id function (seen) also run on validation goroutines and
// callers of Publish, so first and handled are atomic.
type graylistCounter struct {
	noTrace
	c *counters

	mu      sync.Mutex
	joined  map[string]struct{} // topics the router has joined
	pending uint64              // messages of the last RPC on joined topics
	first   atomic.Pointer[pb.Message]
	handled atomic.Bool // first was rejected or had its id computed
}

var _ pubsub.RawTracer = (*graylistCounter)(nil)

func newGraylistCounter(c *counters) *graylistCounter {
	return &graylistCounter{c: c, joined: map[string]struct{}{}}
}

func (g *graylistCounter) Join(topic string) {
	g.mu.Lock()
	g.joined[topic] = struct{}{}
	g.mu.Unlock()
}

func (g *graylistCounter) Leave(topic string) {
	g.mu.Lock()
	delete(g.joined, topic)
	g.mu.Unlock()
}

// RecvRPC settles the previous RPC and starts following rpc.
func (g *graylistCounter) RecvRPC(rpc *pubsub.RPC) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.first.Load() != nil && !g.handled.Load() {
		g.c.drops[DropGraylisted].Add(g.pending)
	}
	var first *pb.Message
	var n uint64
	for _, m := range rpc.GetPublish() {
		if _, ok := g.joined[m.GetTopic()]; ok {
			if first == nil {
				first = m
			}
			n++
		}
	}
	g.pending = n
	g.handled.Store(false)
	g.first.Store(first)
}

// seen is told of every message whose id gossipsub computes.
func (g *graylistCounter) seen(m *pb.Message) {
	if m == g.first.Load() {
		g.handled.Store(true)
	}
}

func (g *graylistCounter) RejectMessage(msg *pubsub.Message, _ string) { g.seen(msg.Message) }

// ThrottlePeer: gossipsub accepted the RPC's control messages only (its
// peer gater, which the relay does not configure): not a graylist drop.
func (g *graylistCounter) ThrottlePeer(peer.ID) { g.handled.Store(true) }
