package relay

import (
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// PubsubStats are gossipsub's own figures, counted as nim-libp2p counts
// its libp2p_pubsub_* metrics (libp2p/protocols/pubsub/pubsub.nim), so
// that dashboards built for nwaku read them.
type PubsubStats struct {
	// Peers is the number of peers gossipsub has a stream to: nim's
	// libp2p_pubsub_peers, the PubSubPeer instances, one per connected
	// peer that speaks a pubsub protocol.
	Peers int
	// Topics is the number of pubsub topics the node is subscribed to
	// (libp2p_pubsub_topics).
	Topics int
	// Subscriptions and Unsubscriptions count the times the node
	// subscribed to a topic it was not subscribed to and left one
	// (libp2p_pubsub_subscriptions, libp2p_pubsub_unsubscriptions: the
	// first subscription and the last unsubscription of a topic).
	Subscriptions, Unsubscriptions uint64
	// ValidationSuccess, ValidationFailure and ValidationIgnore count the
	// messages received from peers that the topic validator Accepted,
	// Rejected and Ignored (libp2p_pubsub_validation_success, _failure,
	// _ignore). As in nim-libp2p, the node's own publishes are not
	// counted, nor the messages dropped before validation (duplicates,
	// a full validation queue, a throttled validator).
	ValidationSuccess, ValidationFailure, ValidationIgnore uint64
}

// pubsubCounts follows gossipsub's events for PubsubStats; it implements
// pubsub.RawTracer. gossipsub calls the stream and topic events from its
// event loop and the message events from its validation workers.
type pubsubCounts struct {
	noTrace

	mu    sync.Mutex
	peers map[peer.ID]struct{}

	topics                                         atomic.Int64
	subs, unsubs, valSuccess, valFailure, valIgnor atomic.Uint64
}

var _ pubsub.RawTracer = (*pubsubCounts)(nil)

func newPubsubCounts() *pubsubCounts { return &pubsubCounts{peers: map[peer.ID]struct{}{}} }

func (c *pubsubCounts) OnNewOutboundStream(p peer.ID, _ protocol.ID) {
	c.mu.Lock()
	c.peers[p] = struct{}{}
	c.mu.Unlock()
}

func (c *pubsubCounts) OnClosedOutboundStream(p peer.ID) {
	c.mu.Lock()
	delete(c.peers, p)
	c.mu.Unlock()
}

func (c *pubsubCounts) Join(string) {
	c.topics.Add(1)
	c.subs.Add(1)
}

func (c *pubsubCounts) Leave(string) {
	c.topics.Add(-1)
	c.unsubs.Add(1)
}

func (c *pubsubCounts) DeliverMessage(msg *pubsub.Message) {
	if !msg.Local {
		c.valSuccess.Add(1)
	}
}

func (c *pubsubCounts) RejectMessage(msg *pubsub.Message, reason string) {
	if msg.Local {
		return
	}
	switch reason {
	case pubsub.RejectValidationFailed:
		c.valFailure.Add(1)
	case pubsub.RejectValidationIgnored:
		c.valIgnor.Add(1)
	}
}

func (c *pubsubCounts) snapshot() PubsubStats {
	c.mu.Lock()
	peers := len(c.peers)
	c.mu.Unlock()
	return PubsubStats{
		Peers:             peers,
		Topics:            int(c.topics.Load()),
		Subscriptions:     c.subs.Load(),
		Unsubscriptions:   c.unsubs.Load(),
		ValidationSuccess: c.valSuccess.Load(),
		ValidationFailure: c.valFailure.Load(),
		ValidationIgnore:  c.valIgnor.Load(),
	}
}
