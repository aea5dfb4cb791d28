package rlnrelay

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// Prover makes RLN proofs: *rln.Prover.
type Prover interface {
	Prove(s rln.Signal, member *rln.Member, messageID uint64, epoch rln.Epoch) (*rln.RateLimitProof, error)
}

// PathSource gives the node's own membership path for the current root:
// rln/membership.Manager's MerklePath, converted to rln.MerklePath. It must
// be safe for concurrent use.
type PathSource interface {
	MerklePath() (rln.MerklePath, error)
}

// Errors of Attach. Every error Attach returns wraps ErrNoProof.
var (
	// ErrNoProof is wrapped by every error of Attach: no proof was made.
	ErrNoProof = errors.New("rlnrelay: no proof made")
	// ErrHasProof: the message already carries a RateLimitProof; check it
	// with Validator.Validate instead.
	ErrHasProof = fmt.Errorf("%w: the message already has a proof", ErrNoProof)
	// ErrLimit is wrapped by *LimitError: the membership's message ids of
	// the epoch are spent.
	ErrLimit = fmt.Errorf("%w: user message limit reached in this epoch", ErrNoProof)
	// ErrTimestamp: the message's timestamp is 21 s or more from local
	// time (see MaxClockGap), so every relay would reject it
	// (ReasonClockGap); no id is spent on it.
	ErrTimestamp = fmt.Errorf("%w: timestamp outside the clock gap", ErrNoProof)
)

// LimitError is Attach's error when the membership has used every message
// id of the epoch. Its text is nwaku's (rln_relay.nim createRlnProof around
// nonce_manager.nim getNonce), which nwaku's lightpush service returns with
// status OUT_OF_RLN_PROOF (504) and its REST API after "Failed to publish:
// error appending RLN proof to message: " with status 500.
type LimitError struct {
	Epoch uint64
	// Requested is the id asked for: the limit on the first refusal of
	// the epoch, one more on each after, as nwaku counts.
	Requested, Limit uint64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: %d & nonceLimit: %d", e.Requested, e.Limit)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// PublisherConfig configures a Publisher. All fields but Now are required.
type PublisherConfig struct {
	// Prover makes the proofs (*rln.Prover).
	Prover Prover
	// Path gives the membership's current Merkle path.
	Path PathSource
	// Identity is the membership's credential (from the keystore); its
	// SecretHash proves and its Commitment names the counter file's
	// membership. It is only read.
	Identity *rln.IdentityCredential
	// UserMessageLimit is the membership's limit, 1 to
	// rln.MaxUserMessageLimit: message ids 0 to limit−1 per epoch.
	UserMessageLimit uint64
	// EpochSec is the epoch length in seconds, as the Validator's.
	EpochSec uint64
	// CounterPath is the file that keeps the message ids used per epoch
	// across restarts. Use one file per membership and epoch length (for
	// example named by the keystore's credential key), on a local disk,
	// and never share a membership between two running nodes: each
	// counts only its own ids.
	CounterPath string
	// Now is the clock of the epochs. Nil means time.Now.
	Now func() time.Time
}

// Publisher attaches RLN proofs to the messages a node publishes for its
// own membership (17/WAKU2-RLN-RELAY; nwaku's appendRLNProof), with a
// per-epoch message id counter that never hands out one id twice in an
// epoch: two messages with one id reveal the member's secret, and then
// anyone can remove the membership. nwaku's NonceManager can: it restarts
// its count when an epoch's length of time has passed since it last did,
// not at epoch boundaries, and from zero after a restart. The Publisher
// counts per epoch of the message's timestamp and writes each id to disk
// (PublisherConfig.CounterPath, fsync) before the proof that uses it
// exists. It is safe for concurrent use: proofs are made in parallel.
type Publisher struct {
	prover   Prover
	path     PathSource
	secret   rln.Field
	limit    uint64
	epochSec uint64
	now      func() time.Time
	ids      *idCounter

	generated  atomic.Uint64
	failed     atomic.Uint64
	refused    atomic.Uint64
	proveNanos atomic.Int64
	lastNanos  atomic.Int64
}

// NewPublisher opens (or creates) the counter file and returns a
// Publisher. Errors wrap ErrConfig or ErrCounterFile.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	switch {
	case cfg.Prover == nil, cfg.Path == nil, cfg.Identity == nil:
		return nil, fmt.Errorf("%w: Prover, Path and Identity are required", ErrConfig)
	case cfg.UserMessageLimit == 0 || cfg.UserMessageLimit > rln.MaxUserMessageLimit:
		return nil, fmt.Errorf("%w: UserMessageLimit %d is not in 1..%d", ErrConfig, cfg.UserMessageLimit, rln.MaxUserMessageLimit)
	case cfg.EpochSec == 0:
		return nil, fmt.Errorf("%w: EpochSec is 0", ErrConfig)
	case cfg.CounterPath == "":
		return nil, fmt.Errorf("%w: no CounterPath", ErrConfig)
	}
	if err := cfg.Identity.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ids, err := openCounter(cfg.CounterPath, cfg.Identity.Commitment, cfg.EpochSec, rln.EpochAt(cfg.Now().UnixNano(), cfg.EpochSec).Uint64())
	if err != nil {
		return nil, err
	}
	return &Publisher{prover: cfg.Prover, path: cfg.Path, secret: cfg.Identity.SecretHash, limit: cfg.UserMessageLimit,
		epochSec: cfg.EpochSec, now: cfg.Now, ids: ids}, nil
}

// Attach makes the RateLimitProof of m, for the epoch of m's timestamp
// with the epoch's next message id, and returns a copy of m that carries
// it (field 21, marked present) with the decoded proof, ready for
// message.NewEnvelopeWithProof: the proof is the Publisher's own, so no
// one needs to verify it again. The copy's other slices alias m's; its
// RateLimitProof is new (rln.EncodedProofSize bytes). m is not modified.
//
// m must carry no proof (ErrHasProof) and a timestamp within MaxClockGap
// of local time (ErrTimestamp): fill in a missing timestamp first. The id
// is on disk before the proof is made; a proof that then fails spends it.
// Errors wrap ErrNoProof: also *LimitError (ErrLimit), ErrEpochTooOld,
// ErrCounterFile, and the path's and prover's errors.
func (p *Publisher) Attach(m *message.Message) (*message.Message, *rln.RateLimitProof, error) {
	if len(m.RateLimitProof) > 0 {
		return nil, nil, ErrHasProof
	}
	now := p.now()
	if clockGapExceeded(now, m.Timestamp) {
		return nil, nil, fmt.Errorf("%w: %d ns, local time %d ns", ErrTimestamp, m.Timestamp, now.UnixNano())
	}
	path, err := p.path.MerklePath()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: membership path: %w", ErrNoProof, err)
	}
	epoch := rln.EpochAt(m.Timestamp, p.epochSec)
	id, err := p.ids.reserve(epoch.Uint64(), rln.EpochAt(now.UnixNano(), p.epochSec).Uint64(), p.limit)
	if err != nil {
		if errors.Is(err, ErrLimit) {
			p.refused.Add(1)
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%w: %w", ErrNoProof, err)
	}
	member := rln.Member{SecretHash: p.secret, UserMessageLimit: p.limit, Path: path}
	start := time.Now()
	proof, err := p.prover.Prove(rln.Signal{Payload: m.Payload, ContentTopic: m.ContentTopic, Timestamp: m.Timestamp}, &member, id, epoch)
	d := time.Since(start)
	if err != nil {
		p.failed.Add(1)
		return nil, nil, fmt.Errorf("%w: message id %d of epoch %d spent: %w", ErrNoProof, id, epoch.Uint64(), err)
	}
	p.generated.Add(1)
	p.proveNanos.Add(int64(d))
	p.lastNanos.Store(int64(d))
	out := *m
	out.RateLimitProof = proof.Marshal()
	out.Present |= message.HasRateLimitProof
	return &out, proof, nil
}

// PublisherStats is a snapshot of a Publisher's counts, named after the
// nwaku v0.38.1 metrics they feed (protocol_metrics.nim).
type PublisherStats struct {
	// Generated counts the proofs made: waku_rln_total_generated_proofs.
	Generated uint64
	// Failed counts the proofs the prover failed to make (each spent an
	// id); Refused the messages refused at the limit.
	Failed, Refused uint64
	// Remaining is the number of message ids left in the current epoch:
	// waku_rln_remaining_proofs_per_epoch.
	Remaining uint64
	// ProofTime is the time spent proving, in all; LastProof the last
	// proof's: waku_rln_proof_generation_duration_seconds (nwaku declares
	// that gauge and never sets it).
	ProofTime, LastProof time.Duration
}

// Stats returns a snapshot of the Publisher's counts.
func (p *Publisher) Stats() PublisherStats {
	used := p.ids.used(rln.EpochAt(p.now().UnixNano(), p.epochSec).Uint64())
	return PublisherStats{
		Generated: p.generated.Load(), Failed: p.failed.Load(), Refused: p.refused.Load(),
		Remaining: p.limit - min(used, p.limit),
		ProofTime: time.Duration(p.proveNanos.Load()), LastProof: time.Duration(p.lastNanos.Load()),
	}
}

// Close closes the counter file; later calls of Attach fail.
func (p *Publisher) Close() error { return p.ids.close() }
