package relay

import (
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Drop reasons, the keys of Stats.Drops. Every message the relay loses is
// counted under exactly one of them.
const (
	DropInvalid             = "invalid"               // validator Rejected: does not decode or breaks a limit
	DropTimestamp           = "timestamp_skew"        // validator Ignored: outside MaxTimestampSkew
	DropValidationQueueFull = "validation_queue_full" // gossipsub's validation queue was full
	DropValidationThrottled = "validation_throttled"  // gossipsub's validation throttle was reached
	DropUndeliverable       = "subscription_full"     // our subscription buffer was full
	DropRPCQueueFull        = "peer_queue_full"       // an outbound RPC to a peer was dropped
	DropHandlerQueueFull    = "handler_queue_full"    // a Handler's queue was full
	DropArchive             = "archive_error"         // the archive refused or failed the envelope
)

var dropReasons = []string{
	DropInvalid, DropTimestamp, DropValidationQueueFull, DropValidationThrottled,
	DropUndeliverable, DropRPCQueueFull, DropHandlerQueueFull, DropArchive,
}

type counters struct {
	msgIDHashes atomic.Uint64
	delivered   atomic.Uint64
	drops       [8]atomic.Uint64 // indexed like dropReasons
}

func (c *counters) drop(reason string) {
	for i, r := range dropReasons {
		if r == reason {
			c.drops[i].Add(1)
			return
		}
	}
}

// Stats is a snapshot of a relay's counters.
type Stats struct {
	// MsgIDHashes counts gossipsub message-id SHA-256 passes over the wire
	// bytes (the protocol's own hash, not the deterministic message hash).
	MsgIDHashes uint64
	// Delivered counts envelopes handed to the dispatcher.
	Delivered uint64
	// Drops counts lost messages by reason (the Drop* constants); every
	// reason is present, zero or not.
	Drops map[string]uint64
	// Topics holds messages and encoded bytes received per pubsub topic.
	Topics map[string]TopicStats
}

// TopicStats counts the traffic of one pubsub topic.
type TopicStats struct {
	Messages uint64 // envelopes dispatched
	Bytes    uint64 // encoded WakuMessage bytes dispatched
}

// TotalDrops returns the sum of all drop reasons.
func (s Stats) TotalDrops() uint64 {
	var n uint64
	for _, v := range s.Drops {
		n += v
	}
	return n
}

// tracer counts gossipsub's own drops; it implements pubsub.RawTracer.
type tracer struct{ c *counters }

var _ pubsub.RawTracer = tracer{}

func (t tracer) RejectMessage(_ *pubsub.Message, reason string) {
	switch reason {
	case pubsub.RejectValidationQueueFull:
		t.c.drop(DropValidationQueueFull)
	case pubsub.RejectValidationThrottled:
		t.c.drop(DropValidationThrottled)
	}
}
func (t tracer) UndeliverableMessage(*pubsub.Message)               { t.c.drop(DropUndeliverable) }
func (t tracer) DropRPC(*pubsub.RPC, peer.ID)                       { t.c.drop(DropRPCQueueFull) }
func (tracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (tracer) OnClosedOutboundStream(peer.ID)                       {}
func (tracer) Join(string)                                          {}
func (tracer) Leave(string)                                         {}
func (tracer) Graft(peer.ID, string)                                {}
func (tracer) Prune(peer.ID, string)                                {}
func (tracer) ValidateMessage(*pubsub.Message)                      {}
func (tracer) DeliverMessage(*pubsub.Message)                       {}
func (tracer) DuplicateMessage(*pubsub.Message)                     {}
func (tracer) ThrottlePeer(peer.ID)                                 {}
func (tracer) RecvRPC(*pubsub.RPC)                                  {}
func (tracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (tracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}

type topicCounters struct {
	messages atomic.Uint64
	bytes    atomic.Uint64
}

func (t *topicCounters) add(env interface{ Wire() []byte }) {
	t.messages.Add(1)
	t.bytes.Add(uint64(len(env.Wire())))
}

func (t *topicCounters) snapshot() TopicStats {
	return TopicStats{Messages: t.messages.Load(), Bytes: t.bytes.Load()}
}
