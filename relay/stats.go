package relay

import (
	"fmt"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// DropReason says why the relay lost a message; its String is the key in
// metrics. Every message the relay loses is counted under exactly one
// reason.
type DropReason uint8

// Drop reasons. gossipsub's reject reasons (go-libp2p-pubsub tracer.go)
// each have their own, except the validator's own results, which the
// validator counts as DropInvalid, DropContentTopic, DropTimestamp or
// DropRLN; a reason a later gossipsub adds is counted as DropOtherReject
// until it gets its own.
const (
	DropInvalid             DropReason = iota // validator Rejected: does not decode or breaks a limit
	DropTimestamp                             // validator Ignored: outside MaxTimestampSkew
	DropContentTopic                          // validator Ignored: content topic empty, white space or over 1024 bytes
	DropRLN                                   // Config.RLN Rejected or Ignored it (its own counts say why)
	DropValidationQueueFull                   // gossipsub's validation queue was full
	DropValidationThrottled                   // gossipsub's validation throttle was reached
	DropUndeliverable                         // our subscription buffer was full
	DropRPCQueueFull                          // an outbound RPC to a peer was dropped
	DropHandlerQueueFull                      // a Handler's queue was full
	DropArchive                               // the archive refused or failed the envelope
	DropUnexpectedSignature                   // signed, where 11/WAKU2-RELAY requires StrictNoSign
	DropUnexpectedAuthor                      // from, seqno or key set, which StrictNoSign forbids
	DropBlacklistedPeer                       // received from a blacklisted peer
	DropBlacklistedSource                     // authored by a blacklisted peer
	DropSelfOrigin                            // claims to come from this node but was received from a peer
	DropOtherReject                           // a gossipsub reject reason not listed above
	numDropReasons
)

var dropNames = [numDropReasons]string{
	DropInvalid:             "invalid",
	DropTimestamp:           "timestamp_skew",
	DropContentTopic:        "invalid_content_topic",
	DropRLN:                 "rln",
	DropValidationQueueFull: "validation_queue_full",
	DropValidationThrottled: "validation_throttled",
	DropUndeliverable:       "subscription_full",
	DropRPCQueueFull:        "peer_queue_full",
	DropHandlerQueueFull:    "handler_queue_full",
	DropArchive:             "archive_error",
	DropUnexpectedSignature: "unexpected_signature",
	DropUnexpectedAuthor:    "unexpected_author",
	DropBlacklistedPeer:     "blacklisted_peer",
	DropBlacklistedSource:   "blacklisted_source",
	DropSelfOrigin:          "self_origin",
	DropOtherReject:         "gossipsub_other",
}

// DropReasons returns every drop reason, in order.
func DropReasons() []DropReason {
	out := make([]DropReason, numDropReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// String returns the reason's name, e.g. "subscription_full", or
// "DropReason(n)" for a value out of range.
func (d DropReason) String() string {
	if d < numDropReasons {
		return dropNames[d]
	}
	return fmt.Sprintf("DropReason(%d)", uint8(d))
}

type counters struct {
	msgIDHashes atomic.Uint64
	delivered   atomic.Uint64
	drops       [numDropReasons]atomic.Uint64
}

func (c *counters) drop(reason DropReason) { c.drops[reason].Add(1) }

// rejectReason maps a gossipsub reject reason to ours. counted is false
// for the validator's own results, which the validator has counted.
func rejectReason(reason string) (d DropReason, counted bool) {
	switch reason {
	case pubsub.RejectValidationFailed, pubsub.RejectValidationIgnored:
		return 0, false
	case pubsub.RejectValidationQueueFull:
		return DropValidationQueueFull, true
	case pubsub.RejectValidationThrottled:
		return DropValidationThrottled, true
	case pubsub.RejectUnexpectedSignature:
		return DropUnexpectedSignature, true
	case pubsub.RejectUnexpectedAuthInfo:
		return DropUnexpectedAuthor, true
	case pubsub.RejectBlacklstedPeer:
		return DropBlacklistedPeer, true
	case pubsub.RejectBlacklistedSource:
		return DropBlacklistedSource, true
	case pubsub.RejectSelfOrigin:
		return DropSelfOrigin, true
	default: // missing or invalid signature (impossible under StrictNoSign), or a new reason
		return DropOtherReject, true
	}
}

// Stats is a snapshot of a relay's counters.
type Stats struct {
	// MsgIDHashes counts gossipsub message-id SHA-256 passes over the wire
	// bytes (the protocol's own hash, not the deterministic message hash).
	MsgIDHashes uint64
	// Delivered counts envelopes handed to the dispatcher.
	Delivered uint64
	// Drops counts lost messages by reason; every reason of DropReasons is
	// present, zero or not.
	Drops map[DropReason]uint64
	// Topics holds messages and encoded bytes received per pubsub topic.
	Topics map[string]TopicStats
}

// TopicStats counts the traffic of one pubsub topic. The fields after
// Bytes are nwaku's figures (waku_relay/protocol.nim); "topic bytes" there
// are a message's data (the encoded WakuMessage) plus the pubsub topic's
// length, as nwaku counts them.
type TopicStats struct {
	Messages uint64 // envelopes dispatched: received from peers or published here
	Bytes    uint64 // encoded WakuMessage bytes dispatched
	// GrossInBytes counts the topic bytes of every message in the RPCs
	// received from peers, before de-duplication and validation
	// (waku_relay_network_bytes type "gross", direction "in").
	GrossInBytes uint64
	// NetOutBytes counts the topic bytes of every message queued for a
	// peer, once per peer (type "net", direction "out").
	NetOutBytes uint64
	// Sizes, SizeSum and SizeMax are the count, sum and largest of the
	// payload lengths nwaku's per-shard figures fold in: every message
	// validated from a peer and every message sent to a peer, once per
	// peer (waku_relay_{total,avg,max}_msg_bytes_per_shard).
	Sizes, SizeSum, SizeMax uint64
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
type tracer struct {
	noTrace
	c *counters
}

var _ pubsub.RawTracer = tracer{}

func (t tracer) RejectMessage(_ *pubsub.Message, reason string) {
	if d, counted := rejectReason(reason); counted {
		t.c.drop(d)
	}
}
func (t tracer) UndeliverableMessage(*pubsub.Message) { t.c.drop(DropUndeliverable) }
func (t tracer) DropRPC(*pubsub.RPC, peer.ID)         { t.c.drop(DropRPCQueueFull) }

// noTrace is a pubsub.RawTracer that ignores every event; tracers embed it
// and override the events they follow.
type noTrace struct{}

func (noTrace) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (noTrace) OnClosedOutboundStream(peer.ID)                       {}
func (noTrace) Join(string)                                          {}
func (noTrace) Leave(string)                                         {}
func (noTrace) Graft(peer.ID, string)                                {}
func (noTrace) Prune(peer.ID, string)                                {}
func (noTrace) ValidateMessage(*pubsub.Message)                      {}
func (noTrace) DeliverMessage(*pubsub.Message)                       {}
func (noTrace) RejectMessage(*pubsub.Message, string)                {}
func (noTrace) DuplicateMessage(*pubsub.Message)                     {}
func (noTrace) ThrottlePeer(peer.ID)                                 {}
func (noTrace) RecvRPC(*pubsub.RPC)                                  {}
func (noTrace) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (noTrace) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (noTrace) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (noTrace) UndeliverableMessage(*pubsub.Message)                 {}
