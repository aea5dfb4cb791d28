package rlnrelay

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a Validator's counts, each named after the nwaku
// v0.38.1 metric it feeds (waku_rln_relay/protocol_metrics.nim; Collector
// exposes them).
type Stats struct {
	// Messages counts the messages whose proof decoded (absent proofs
	// included, which nwaku reads as zeros): waku_rln_messages_total.
	Messages uint64
	// Reasons counts every message checked by Validate, by outcome;
	// every Reason has an entry. The Rejects with an nwaku type feed
	// waku_rln_invalid_messages_total{type} (see Reason), ReasonDuplicate
	// and ReasonSpam waku_rln_spam_messages_total, and all of them
	// courier_rln_messages_total{result,reason}.
	Reasons map[Reason]uint64
	// ValidByTopic counts the valid messages received per pubsub topic
	// (ValidateMessage): waku_rln_valid_messages_total{shard}, which nwaku
	// labels with the pubsub topic.
	ValidByTopic map[string]uint64
	// Verifications counts the proofs verified, one per message that
	// reached the verification: waku_rln_proof_verification_total.
	Verifications uint64
	// VerificationTime is the wall time spent verifying, in all;
	// LastVerification is the last one's, which nwaku keeps in the gauge
	// waku_rln_proof_verification_duration_seconds.
	VerificationTime, LastVerification time.Duration
	// LogEpochs and LogEntries are the nullifier log's size now: the
	// epochs it holds and their nullifiers in all.
	LogEpochs, LogEntries int
}

// counters are a Validator's counts, updated by every validating
// goroutine without a lock.
type counters struct {
	messages      atomic.Uint64
	reasons       [numReasons]atomic.Uint64
	verifications atomic.Uint64
	verifyNanos   atomic.Int64
	lastNanos     atomic.Int64
	byTopic       sync.Map // pubsub topic -> *atomic.Uint64
}

func (c *counters) count(r Reason) { c.reasons[r].Add(1) }

func (c *counters) verified(d time.Duration) {
	c.verifications.Add(1)
	c.verifyNanos.Add(int64(d))
	c.lastNanos.Store(int64(d))
}

func (c *counters) validOn(pubsubTopic string) {
	n, ok := c.byTopic.Load(pubsubTopic)
	if !ok {
		n, _ = c.byTopic.LoadOrStore(pubsubTopic, new(atomic.Uint64))
	}
	n.(*atomic.Uint64).Add(1)
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Messages:         c.messages.Load(),
		Reasons:          make(map[Reason]uint64, numReasons),
		ValidByTopic:     map[string]uint64{},
		Verifications:    c.verifications.Load(),
		VerificationTime: time.Duration(c.verifyNanos.Load()),
		LastVerification: time.Duration(c.lastNanos.Load()),
	}
	for i := range c.reasons {
		s.Reasons[Reason(i)] = c.reasons[i].Load()
	}
	c.byTopic.Range(func(k, v any) bool {
		s.ValidByTopic[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return s
}
