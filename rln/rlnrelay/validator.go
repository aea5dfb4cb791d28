package rlnrelay

import (
	"errors"
	"fmt"
	"math"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// MaxClockGap is the largest difference between a message's timestamp and
// local time the validator accepts, in whole seconds: 20 (nwaku
// MaxClockGapSeconds, constants.nim). nwaku truncates the difference to
// whole seconds before comparing (uint64(abs(now − timestamp)) > 20 is
// invalid, rln_relay.nim validateMessage), so a message is accepted when
// it is less than 21 s away.
const MaxClockGap = 20 * time.Second

// DefaultMaxLogEntries is the default bound of the nullifier log: 524288
// valid messages in the epochs the clock gap admits, about 100 MiB at
// some 200 bytes an entry. That is 12,000 messages a second with epochs of
// 1 s (the log then holds 43 epochs), more than the cores of a small
// machine verify, and 2,600 members sending their 100 messages with The
// Waku Network's epochs of 600 s (the log then holds 2).
const DefaultMaxLogEntries = 1 << 19

// Roots is the part of the membership the validator needs: the window of
// acceptable Merkle roots (nwaku validateRoot; rln/membership.Manager's
// AcceptableRoot). AcceptableRoot must be safe for concurrent use and
// quick (it runs once per message); root is the proof's 32-byte
// little-endian merkle_root, which it must not keep or modify.
type Roots interface {
	AcceptableRoot(root []byte) bool
}

// StaticRoots is a fixed set of acceptable roots, for tools and tests.
type StaticRoots []rln.Field

// AcceptableRoot reports whether root is one of s.
func (s StaticRoots) AcceptableRoot(root []byte) bool {
	for i := range s {
		if string(s[i][:]) == string(root) {
			return true
		}
	}
	return false
}

// Config configures a Validator.
type Config struct {
	// Verifier checks the proofs (required). One per node: it is shared by
	// all validation workers.
	Verifier *rln.Verifier
	// Roots is the window of acceptable roots (required).
	Roots Roots
	// EpochSec is the epoch length in seconds (required, at least 1):
	// nwaku's --rln-relay-epoch-sec (its default is 1; The Waku Network
	// uses 600).
	EpochSec uint64
	// MaxLogEntries bounds the nullifier log. Zero means
	// DefaultMaxLogEntries.
	MaxLogEntries int
	// Now is the clock of the clock-gap check and of the log's pruning.
	// Nil means time.Now.
	Now func() time.Time
	// OnSpam, when set, is called with the evidence of every spam message
	// (two messages with one nullifier in an epoch), after the message has
	// been counted and before its result is returned. It runs on the
	// validating goroutine: it must be quick and must not block.
	OnSpam func(Spam)
}

// ErrConfig is wrapped by the errors of New.
var ErrConfig = errors.New("rlnrelay: invalid config")

// Spam is the evidence of a member who sent two messages with one message
// id in one epoch: both share the nullifier, and their shares reveal the
// member's identity secret (rln.RecoverSecret), from which anyone can
// compute its commitment and so its membership.
type Spam struct {
	PubsubTopic string
	Epoch       rln.Epoch
	Nullifier   rln.Field
	// SecretHash is the member's identity secret, recovered; Commitment
	// is Poseidon(SecretHash), the id commitment registered on chain.
	SecretHash, Commitment rln.Field
}

// Validator is RLN relay's gossipsub validator (17/WAKU2-RLN-RELAY), in
// nwaku v0.38.1's order and with its results (waku_rln_relay/rln_relay.nim
// generateRlnValidator, validateMessageAndUpdateLog, validateMessage),
// except where Reason says otherwise. It is safe for concurrent use: the
// verification, the costly step, takes no lock, and the nullifier log is
// checked and updated in one short critical section.
type Validator struct {
	verifier *rln.Verifier
	roots    Roots
	epochSec uint64
	now      func() time.Time
	onSpam   func(Spam)
	log      *nullifierLog
	c        counters
}

// New returns a Validator. Errors wrap ErrConfig.
func New(cfg Config) (*Validator, error) {
	switch {
	case cfg.Verifier == nil:
		return nil, fmt.Errorf("%w: no Verifier", ErrConfig)
	case cfg.Roots == nil:
		return nil, fmt.Errorf("%w: no Roots", ErrConfig)
	case cfg.EpochSec == 0:
		return nil, fmt.Errorf("%w: EpochSec is 0", ErrConfig)
	case cfg.MaxLogEntries < 0:
		return nil, fmt.Errorf("%w: MaxLogEntries %d is negative", ErrConfig, cfg.MaxLogEntries)
	}
	if cfg.MaxLogEntries == 0 {
		cfg.MaxLogEntries = DefaultMaxLogEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Validator{verifier: cfg.Verifier, roots: cfg.Roots, epochSec: cfg.EpochSec, now: cfg.Now,
		onSpam: cfg.OnSpam, log: newNullifierLog(cfg.MaxLogEntries)}, nil
}

// Result is the outcome of one message's check.
type Result struct {
	Reason Reason
	// Proof is the message's RateLimitProof as decoded (nwaku's reading of
	// it for ReasonNonCanonical); nil for ReasonNoProof and
	// ReasonMalformed. It has been verified when Reason is Valid,
	// ReasonDuplicate, ReasonSpam, ReasonLogFull or ReasonRLNIdentifier.
	Proof *rln.RateLimitProof
	// Err says what failed, for logs; nil when Reason is Valid.
	Err error
}

// Validate checks m as the relay validator does, with the clock of
// Config.Now, logs its nullifier when it is valid, and counts the result
// under its reason (Stats). m is only read; the result's Proof is newly
// allocated and does not refer to m.
func (v *Validator) Validate(m *message.Message) Result { return v.validate("", m) }

// ValidateMessage is Validate as relay.Config.RLN calls it for a message
// received on pubsubTopic: it returns the verified proof (nil unless the
// result is Accept) and gossipsub's result, Reason.Result, and counts a
// valid message under its pubsub topic (nwaku's
// waku_rln_valid_messages_total, labelled shard).
func (v *Validator) ValidateMessage(pubsubTopic string, m *message.Message) (*rln.RateLimitProof, pubsub.ValidationResult) {
	r := v.validate(pubsubTopic, m)
	if r.Reason != Valid {
		return nil, r.Reason.Result()
	}
	v.c.validOn(pubsubTopic)
	return r.Proof, pubsub.ValidationAccept
}

func (v *Validator) validate(pubsubTopic string, m *message.Message) Result {
	now := v.now()
	r := v.check(m, now, true, &v.c)
	if r.Reason == Valid {
		r = v.logProof(pubsubTopic, now, r.Proof)
	}
	v.c.count(r.Reason)
	return r
}

// Check applies the validator's checks to m that need no memory of other
// messages, in the validator's order: decode, clock gap (only when now is
// not the zero time), epoch, root, proof. It neither logs nor counts;
// Valid means the message would pass unless the nullifier log finds it a
// duplicate or spam. This is what `courier message verify-rln` runs.
func (v *Validator) Check(m *message.Message, now time.Time) Result {
	return v.check(m, now, !now.IsZero(), new(counters))
}

// check runs the checks, counting into c.
func (v *Validator) check(m *message.Message, now time.Time, clock bool, c *counters) Result {
	var p *rln.RateLimitProof
	var nonCanonical error
	if len(m.RateLimitProof) > 0 {
		var err error
		p, err = rln.DecodeRateLimitProof(m.RateLimitProof)
		switch {
		case errors.Is(err, rln.ErrNonCanonical):
			nonCanonical = err
		case err != nil:
			return Result{Reason: ReasonMalformed, Err: err}
		}
	}
	c.messages.Add(1)
	if clock && clockGapExceeded(now, m.Timestamp) {
		return Result{Reason: ReasonClockGap, Proof: p, Err: fmt.Errorf("timestamp %d ns is %.3f s from local time %d ns: more than %.0f whole seconds",
			m.Timestamp, math.Abs(float64(now.UnixNano())-float64(m.Timestamp))/1e9, now.UnixNano(), MaxClockGap.Seconds())}
	}
	if p == nil {
		return Result{Reason: ReasonNoProof, Err: errors.New("the message carries no RateLimitProof")}
	}
	if want := rln.EpochAt(m.Timestamp, v.epochSec); p.Epoch != want {
		return Result{Reason: ReasonEpoch, Proof: p, Err: fmt.Errorf("proof epoch %d, the timestamp's is %d (epochs of %d s)",
			p.Epoch.Uint64(), want.Uint64(), v.epochSec)}
	}
	if !v.roots.AcceptableRoot(p.MerkleRoot[:]) {
		return Result{Reason: ReasonRoot, Proof: p, Err: fmt.Errorf("root %x (nwaku logs it as %s) is not in the window of acceptable roots", p.MerkleRoot[:], p.MerkleRoot)}
	}
	if err := v.verify(m, p, c); err != nil {
		reason := ReasonProof
		switch {
		case errors.Is(err, rln.ErrRLNIdentifier):
			reason = ReasonRLNIdentifier
		case errors.Is(err, rln.ErrNonCanonical):
			reason = ReasonNonCanonical
		}
		if nonCanonical != nil && reason != ReasonProof {
			reason, err = ReasonNonCanonical, nonCanonical
		}
		return Result{Reason: reason, Proof: p, Err: err}
	}
	if nonCanonical != nil {
		return Result{Reason: ReasonNonCanonical, Proof: p, Err: nonCanonical}
	}
	return Result{Reason: Valid, Proof: p}
}

// verify runs the one verification of the message, timed.
func (v *Validator) verify(m *message.Message, p *rln.RateLimitProof, c *counters) error {
	start := time.Now()
	err := v.verifier.Verify(rln.Signal{Payload: m.Payload, ContentTopic: m.ContentTopic, Timestamp: m.Timestamp}, p)
	c.verified(time.Since(start))
	return err
}

// logProof checks p, valid, against the nullifier log and logs it; it
// hands the evidence of spam to Config.OnSpam.
func (v *Validator) logProof(pubsubTopic string, now time.Time, p *rln.RateLimitProof) Result {
	lo := rln.EpochAt(now.Add(-maxAcceptedGap).UnixNano(), v.epochSec).Uint64()
	hi := rln.EpochAt(now.Add(maxAcceptedGap).UnixNano(), v.epochSec).Uint64()
	outcome, first := v.log.insert(lo, hi, p.Epoch.Uint64(), p.Nullifier, shares{p.ShareX, p.ShareY})
	switch outcome {
	case logDuplicate:
		return Result{Reason: ReasonDuplicate, Proof: p, Err: fmt.Errorf("nullifier %s already seen in epoch %d with the same shares", p.Nullifier, p.Epoch.Uint64())}
	case logSpam:
		if v.onSpam != nil {
			v.reportSpam(pubsubTopic, p, first)
		}
		return Result{Reason: ReasonSpam, Proof: p, Err: fmt.Errorf("nullifier %s already seen in epoch %d with other shares: one message id used twice", p.Nullifier, p.Epoch.Uint64())}
	case logFull:
		return Result{Reason: ReasonLogFull, Proof: p, Err: fmt.Errorf("nullifier log full (%d entries)", v.log.max)}
	}
	return Result{Reason: Valid, Proof: p}
}

// reportSpam recovers the spammer's secret from the shares of its two
// messages and hands the evidence to Config.OnSpam.
func (v *Validator) reportSpam(pubsubTopic string, p *rln.RateLimitProof, first shares) {
	secret, err := rln.RecoverSecret(first.x, first.y, p.ShareX, p.ShareY)
	if err != nil {
		return // equal x with other y: no valid proof pair gives that
	}
	commitment, err := rln.IdentityCommitment(secret)
	if err != nil {
		return
	}
	v.onSpam(Spam{PubsubTopic: pubsubTopic, Epoch: p.Epoch, Nullifier: p.Nullifier, SecretHash: secret, Commitment: commitment})
}

// maxAcceptedGap is the largest clock gap clockGapExceeded lets through
// (less than MaxClockGap + 1 s): the nullifier log keeps the epochs it
// spans on either side of now.
const maxAcceptedGap = MaxClockGap + time.Second

// clockGapExceeded is nwaku's timestamp check: the difference between
// now and the timestamp, in float64 seconds as nwaku computes it
// (getTime().toUnixFloat() and msg.timestamp.float64 / 1e9), truncated to
// whole seconds, over 20.
func clockGapExceeded(now time.Time, timestampNs int64) bool {
	current := float64(now.Unix()) + float64(now.Nanosecond())/1e9
	gap := math.Abs(current - float64(timestampNs)/1e9)
	return gap >= MaxClockGap.Seconds()+1 // uint64(gap) > 20, without converting what may not fit
}

// Stats returns a snapshot of the validator's counts.
func (v *Validator) Stats() Stats {
	s := v.c.snapshot()
	s.LogEpochs, s.LogEntries = v.log.size()
	return s
}
