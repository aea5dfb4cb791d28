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
// It also keeps, for the relay's next score inspection, the peers whose
// RPCs were refused (refused) and how many of their messages: a refused
// RPC means its sender's score was below the threshold when it arrived,
// even if a score decay lifts it back above before the inspection sees
// it. RecvRPC does not name the sender; gossipsub's RPC inspector
// (inspectRPC), called on the event loop just before RecvRPC with the same
// RPC, does.
//
// inspectRPC, RecvRPC, Join and Leave run on gossipsub's event loop;
// RejectMessage and the message id function (seen) also run on validation
// goroutines and callers of Publish, so first and handled are atomic;
// takeRefused runs on the score inspector's goroutine.
type graylistCounter struct {
	noTrace
	c *counters

	mu       sync.Mutex
	joined   map[string]struct{} // topics the router has joined
	pending  uint64              // messages of the last RPC on joined topics
	from     peer.ID             // the last RPC's sender, "" if not known
	next     *pubsub.RPC         // the RPC inspectRPC saw last, from nextFrom
	nextFrom peer.ID
	refused  map[peer.ID]uint64 // senders of refused RPCs since takeRefused: their messages
	first    atomic.Pointer[pb.Message]
	handled  atomic.Bool // first was rejected or had its id computed
}

var _ pubsub.RawTracer = (*graylistCounter)(nil)

func newGraylistCounter(c *counters) *graylistCounter {
	return &graylistCounter{c: c, joined: map[string]struct{}{}, refused: map[peer.ID]uint64{}}
}

// inspectRPC is gossipsub's application RPC inspector
// (pubsub.WithAppSpecificRpcInspector): it notes the sender of the RPC
// that RecvRPC is told of next, and lets every RPC through.
func (g *graylistCounter) inspectRPC(from peer.ID, rpc *pubsub.RPC) error {
	g.mu.Lock()
	g.next, g.nextFrom = rpc, from
	g.mu.Unlock()
	return nil
}

// takeRefused returns the senders of the RPCs found refused since the
// last call, each with the number of its messages on joined topics, and
// starts a new set. The caller owns the map.
func (g *graylistCounter) takeRefused() map[peer.ID]uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.refused
	g.refused = map[peer.ID]uint64{}
	return out
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
		if g.from != "" {
			g.refused[g.from] += g.pending
		}
	}
	g.from = ""
	if g.next == rpc {
		g.from = g.nextFrom
	}
	g.next, g.nextFrom = nil, ""
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
