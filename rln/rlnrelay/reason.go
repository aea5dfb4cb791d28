package rlnrelay

import (
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
)

// Reason is the outcome of the validator's check of one message: Valid, or
// why it is dropped. Its String is the label of courier's own metric
// (courier_rln_messages_total's reason), and Result the gossipsub result.
// The reasons are listed in the order the checks run.
type Reason uint8

// Reasons. nwaku Rejects every message it does not find valid
// (rln_relay.nim generateRlnValidator: Invalid and Spam both Reject);
// the validator does too, except for the three Ignored reasons, which
// drop the message without penalising the peer that forwarded it.
const (
	// Valid: every check passed and the nullifier was logged (Accept).
	Valid Reason = iota
	// ReasonMalformed: the RateLimitProof bytes are not a protobuf message
	// (rln.ErrMalformed; nwaku's RateLimitProof.init fails). Reject.
	ReasonMalformed
	// ReasonClockGap: the timestamp is 21 s or more from local time (see
	// MaxClockGap; nwaku invalid_timestamp). Reject.
	ReasonClockGap
	// ReasonNoProof: the message carries no RateLimitProof. nwaku reads an
	// absent proof as all zeros and fails it on its epoch (its
	// timestamp_mismatch). Reject.
	ReasonNoProof
	// ReasonEpoch: the proof's epoch is not the epoch of the message's
	// timestamp (nwaku timestamp_mismatch). nwaku v0.38.1 allows no gap of
	// epochs here: its rlnMaxEpochGap, max(20 s / epoch length, 1), only
	// bounds the nullifier log. Reject.
	ReasonEpoch
	// ReasonRoot: the proof's root is not in the window of acceptable
	// roots (nwaku invalid_root). Reject.
	ReasonRoot
	// ReasonProof: the zkSNARK does not verify, or share_x is not the
	// hash of the message's signal (rln.ErrInvalidProof; nwaku
	// invalid_proof). Reject.
	ReasonProof
	// ReasonDuplicate: a valid proof whose nullifier and shares were
	// logged before in its epoch: the same message id and signal again,
	// in a message gossipsub did not find seen (other bytes). nwaku finds
	// the nullifier logged and counts it as spam. Reject.
	ReasonDuplicate
	// ReasonSpam: a valid proof whose nullifier was logged before in its
	// epoch with other shares: a member sent two messages with one
	// message id; its secret is recovered (Config.OnSpam). nwaku
	// waku_rln_spam_messages_total. Reject.
	ReasonSpam
	// ReasonNonCanonical: an encoding nwaku reads but normalises
	// (rln.ErrNonCanonical) whose normalised proof passes the clock,
	// epoch, root and proof checks: an honest nwaku relays it, so its
	// forwarder is not penalised, but this node neither relays nor logs
	// it (nwaku logs the nullifier as sent, so nullifier + r passes its
	// duplicate check). One that fails a check gets that check's reason,
	// a Reject. Ignore.
	ReasonNonCanonical
	// ReasonRLNIdentifier: a valid proof for another RLN application
	// (rln.ErrRLNIdentifier), which nwaku relays without looking. Ignore.
	ReasonRLNIdentifier
	// ReasonLogFull: a valid proof with a new nullifier when the
	// nullifier log holds Config.MaxLogEntries: not relayed unchecked.
	// Ignore.
	ReasonLogFull
	numReasons
)

var reasonNames = [numReasons]string{
	Valid:               "valid",
	ReasonMalformed:     "malformed_proof",
	ReasonClockGap:      "invalid_timestamp",
	ReasonNoProof:       "no_proof",
	ReasonEpoch:         "timestamp_mismatch",
	ReasonRoot:          "invalid_root",
	ReasonProof:         "invalid_proof",
	ReasonDuplicate:     "duplicate",
	ReasonSpam:          "spam",
	ReasonNonCanonical:  "non_canonical",
	ReasonRLNIdentifier: "rln_identifier",
	ReasonLogFull:       "nullifier_log_full",
}

// Reasons returns every reason, Valid first, in the order of the checks.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// String returns the reason's label, e.g. "invalid_root", or "Reason(n)"
// for a value out of range.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Result returns gossipsub's validation result for r: Accept for Valid,
// Ignore for ReasonNonCanonical, ReasonRLNIdentifier and ReasonLogFull,
// Reject for the others.
func (r Reason) Result() pubsub.ValidationResult {
	switch r {
	case Valid:
		return pubsub.ValidationAccept
	case ReasonNonCanonical, ReasonRLNIdentifier, ReasonLogFull:
		return pubsub.ValidationIgnore
	}
	return pubsub.ValidationReject
}

// nwakuInvalidType returns the type label under which nwaku counts r in
// waku_rln_invalid_messages_total, or "" when nwaku does not count it
// there.
func (r Reason) nwakuInvalidType() string {
	switch r {
	case ReasonClockGap:
		return "invalid_timestamp"
	case ReasonNoProof, ReasonEpoch:
		return "timestamp_mismatch"
	case ReasonRoot:
		return "invalid_root"
	case ReasonProof:
		return "invalid_proof"
	}
	return ""
}
