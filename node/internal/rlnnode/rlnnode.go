// Package rlnnode is RLN relay (17/WAKU2-RLN-RELAY) as a node runs it,
// nwaku v0.38.1's waku_rln_relay mounted (rln_relay.nim mount): one
// proof verifier, the relay validator over the membership's window of
// acceptable roots, the on-chain membership, and, for a node with a
// membership in its keystore, the prover and the Publisher that attach
// proofs to the messages the node publishes (REST relay publish, the
// lightpush service).
//
// New makes what needs no network (the verifier, the validator, the prover
// with its circuit files); Start reads the keystore and connects to the
// chain, as nwaku's OnchainGroupManager.init does; the validator refuses
// every root until then. Close the Publisher before the relay and the
// Manager after it (ClosePublisher, CloseMembership).
package rlnnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/keystore"
	"github.com/couriernet/courier/rln/membership"
	"github.com/couriernet/courier/rln/rlnrelay"
)

// Config configures an RLN.
type Config struct {
	// EpochSec is the epoch length in seconds (--rln-relay-epoch-sec), at
	// least 1.
	EpochSec uint64
	// Membership reaches the chain: Endpoints, Contract, ChainID (nil or 0:
	// the first endpoint's) and the tunables. Its MembershipIndex is set
	// from the keystore at Start.
	Membership membership.Config
	// ContractAddress is the contract address as the operator wrote it,
	// which nwaku files keystore credentials under.
	ContractAddress string
	// CredPath and CredPassword are the keystore (--rln-relay-cred-path,
	// --rln-relay-cred-password). Empty CredPath: a node without a
	// membership, which validates and makes no proofs.
	CredPath, CredPassword string
	// MembershipIndex selects the keystore's credential
	// (--rln-relay-membership-index); nil means nwaku's default, 0.
	MembershipIndex *uint64
	// UserMessageLimit, when not 0, caps the message ids the node spends
	// per epoch below the membership's registered limit.
	UserMessageLimit uint64
	// CircuitDir holds the circuit files the prover loads (only with
	// CredPath). Empty means rln.DefaultCircuitDir().
	CircuitDir string
	// CounterDir is where the Publisher keeps its message id counter, one
	// file per membership and epoch length.
	CounterDir string
	// Logger receives the records. Nil means slog.Default().
	Logger *slog.Logger
}

// Errors of Prepare.
var (
	// ErrInvalid: the validator did not Accept a message to publish,
	// nwaku's validator message (waku/node/kernel_api/relay.nim
	// addValidator(..., "RLN validation failed")).
	ErrInvalid = errors.New("RLN validation failed")
)

// ProofError is Prepare's error when no proof could be made for a message
// without one. Its text is nwaku's REST answer after "Failed to publish: "
// (rest_api/endpoint/relay/handlers.nim); Err alone is the lightpush
// answer's (waku_lightpush/callbacks.nim, OUT_OF_RLN_PROOF).
type ProofError struct{ Err error }

func (e *ProofError) Error() string { return "error appending RLN proof to message: " + e.Err.Error() }

// Unwrap returns Err.
func (e *ProofError) Unwrap() error { return e.Err }

// RLN is a node's RLN relay.
type RLN struct {
	cfg       Config
	log       *slog.Logger
	validator *rlnrelay.Validator
	prover    *rln.Prover // nil without a keystore
	manager   atomic.Pointer[membership.Manager]
	publisher atomic.Pointer[rlnrelay.Publisher]
	// imported is how long reading the keystore's credential took, in
	// nanoseconds; 0 until it was read.
	imported atomic.Int64
}

// New makes the verifier and the validator, and with a keystore the
// prover, whose circuit files must be in CircuitDir (errors wrap
// rln.ErrCircuitFiles and say where to get them). A keystore that is
// missing or not an RLN keystore is refused first (keystore.ErrNotExist,
// ErrMalformed, ErrAppMismatch, ErrUnknownVersion); its password is
// checked at Start. Errors other than the circuit files' begin with
// "rln-relay: ".
func New(cfg Config) (*RLN, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &RLN{cfg: cfg, log: cfg.Logger.With("protocol", "rln-relay")}
	verifier, err := rln.NewVerifier(rln.VerifierConfig{})
	if err != nil {
		return nil, fmt.Errorf("rln-relay: %w", err)
	}
	r.validator, err = rlnrelay.New(rlnrelay.Config{Verifier: verifier, Roots: (*roots)(r), EpochSec: cfg.EpochSec, OnSpam: r.onSpam})
	if err != nil {
		return nil, fmt.Errorf("rln-relay: %w", err)
	}
	if cfg.CredPath != "" {
		// The keystore is read (not yet decrypted) before the circuit
		// files are looked for, so that a wrong path is named as such.
		if _, err := keystore.Load(cfg.CredPath, keystore.RLN()); err != nil {
			return nil, fmt.Errorf("rln-relay: --rln-relay-cred-path %s: %w", cfg.CredPath, err)
		}
		if r.prover, err = rln.NewProver(rln.ProverConfig{Dir: cfg.CircuitDir}); err != nil {
			return nil, circuitHint(cfg.CircuitDir, err)
		}
	}
	return r, nil
}

// circuitHint adds to a prover's error where the circuit files come from.
func circuitHint(dir string, err error) error {
	if !errors.Is(err, rln.ErrCircuitFiles) {
		return err
	}
	if dir == "" {
		dir = rln.DefaultCircuitDir()
	}
	return fmt.Errorf("%w; a node with a membership (--rln-relay-cred-path) makes proofs and needs zerokit's depth-20 RLN circuit in %s "+
		"(--rln-relay-circuit-dir or $%s): %s from zerokit v0.8.0 rln/resources/tree_height_20/ and %s from zerokit v0.9.0 rln/resources/tree_depth_20/ "+
		"(sha256 %s and %s)", err, dir, rln.CircuitDirEnv, rln.ZkeyFile, rln.GraphFile, rln.ZkeySHA256, rln.GraphSHA256)
}

// Validator returns the relay validator (relay.Config.RLN).
func (r *RLN) Validator() *rlnrelay.Validator { return r.validator }

// roots is the validator's view of the membership: no root is acceptable
// before Start has connected the Manager.
type roots RLN

func (r *roots) AcceptableRoot(root []byte) bool {
	m := r.manager.Load()
	return m != nil && m.AcceptableRoot(root)
}

// onSpam logs the evidence of a member who sent two messages with one
// message id in an epoch. The recovered secret is not logged: whoever
// holds it can take the member's deposit.
func (r *RLN) onSpam(s rlnrelay.Spam) {
	r.log.Warn("RLN spam: two messages with one nullifier in an epoch; the member's secret is recovered",
		"pubsub_topic", s.PubsubTopic, "epoch", s.Epoch.Uint64(), "nullifier", s.Nullifier.String(), "id_commitment", s.Commitment.String())
}

// Start reads the keystore's credential (with CredPath), connects to the
// chain and follows the membership (membership.Start), and makes the
// Publisher for the credential. ctx bounds the connection's retries.
func (r *RLN) Start(ctx context.Context) error {
	mc := r.cfg.Membership
	if mc.Logger == nil {
		mc.Logger = r.log
	}
	var cred *keystore.Membership
	if r.cfg.CredPath != "" {
		chainID, err := r.chainID(ctx, mc)
		if err != nil {
			return err
		}
		m, err := r.credential(chainID)
		if err != nil {
			return err
		}
		cred = &m
		index := uint32(m.TreeIndex)
		mc.MembershipIndex, mc.ChainID = &index, chainID
	}
	mgr, err := membership.Start(ctx, mc)
	if err != nil {
		return fmt.Errorf("rln-relay: membership contract: %w", err)
	}
	r.manager.Store(mgr)
	h := mgr.Health()
	r.log.Info("RLN relay: following the membership contract", "contract", mc.Contract.Hex(), "chain_id", h.ChainID, "endpoint", h.Endpoint,
		"members", h.Members, "roots", h.Roots, "epoch_sec", r.cfg.EpochSec)
	if cred == nil {
		return nil
	}
	return r.startPublisher(ctx, mgr, cred)
}

// chainID returns the configured chain id, or asks the first endpoint
// that answers, as nwaku's init fetches it to query the keystore.
func (r *RLN) chainID(ctx context.Context, mc membership.Config) (*big.Int, error) {
	if mc.ChainID != nil && mc.ChainID.Sign() != 0 {
		return mc.ChainID, nil
	}
	c, err := membership.Dial(ctx, mc)
	if err != nil {
		return nil, fmt.Errorf("rln-relay: membership contract: %w", err)
	}
	defer c.Close()
	return c.ChainID(), nil
}

// credential reads the keystore's credential for the contract on chainID,
// as nwaku's getMembershipCredentials, and checks it is for them.
func (r *RLN) credential(chainID *big.Int) (keystore.Membership, error) {
	q := keystore.Query{ChainID: chainID.String(), Address: r.cfg.ContractAddress, TreeIndex: r.cfg.MembershipIndex}
	start := time.Now()
	m, err := keystore.GetMembership(r.cfg.CredPath, r.cfg.CredPassword, q, keystore.RLN())
	r.imported.Store(max(int64(time.Since(start)), 1))
	if err != nil {
		return m, fmt.Errorf("rln-relay: failed to get the keystore credentials from %s: %w", r.cfg.CredPath, err)
	}
	chain, ok := new(big.Int).SetString(m.Contract.ChainID, 0)
	if !ok || chain.Cmp(chainID) != 0 || !strings.EqualFold(m.Contract.Address, r.cfg.Membership.Contract.Hex()) {
		return m, fmt.Errorf("rln-relay: the keystore's credential is for contract %s on chain %s, the node follows %s on chain %s",
			m.Contract.Address, m.Contract.ChainID, r.cfg.Membership.Contract.Hex(), chainID)
	}
	return m, nil
}

// startPublisher makes the Publisher of cred's membership.
func (r *RLN) startPublisher(ctx context.Context, mgr *membership.Manager, cred *keystore.Membership) error {
	id := cred.Identity
	ident := &rln.IdentityCredential{Trapdoor: id.IDTrapdoor, Nullifier: id.IDNullifier, SecretHash: id.IDSecretHash, Commitment: id.IDCommitment}
	limit := cred.UserMessageLimit
	if c := r.cfg.UserMessageLimit; c > 0 && c < limit {
		limit = c
	}
	if member, err := mgr.Client().IsMember(ctx, id.IDCommitment); err == nil && !member {
		r.log.Warn("RLN relay: the keystore's id commitment has no membership on the contract; no proof will verify",
			"index", cred.TreeIndex, "id_commitment", rln.Field(id.IDCommitment).String())
	}
	pub, err := rlnrelay.NewPublisher(rlnrelay.PublisherConfig{Prover: r.prover, Path: pathSource{mgr}, Identity: ident,
		UserMessageLimit: limit, EpochSec: r.cfg.EpochSec, CounterPath: CounterPath(r.cfg.CounterDir, cred.Key(), r.cfg.EpochSec)})
	if err != nil {
		return fmt.Errorf("rln-relay: %w", err)
	}
	r.publisher.Store(pub)
	r.log.Info("RLN relay: publishing with a membership", "index", cred.TreeIndex, "user_message_limit", limit,
		"registered_limit", cred.UserMessageLimit, "have_path", mgr.Health().HavePath)
	return nil
}

// CounterPath is the Publisher's message id counter file in dir for the
// keystore credential key and the epoch length: one file per membership
// and epoch length, as rlnrelay.PublisherConfig asks.
func CounterPath(dir, credentialKey string, epochSec uint64) string {
	return filepath.Join(dir, fmt.Sprintf("rln-message-ids-%s-%ds", credentialKey, epochSec))
}

// pathSource is the Publisher's view of the Manager's Merkle path.
type pathSource struct{ m *membership.Manager }

func (p pathSource) MerklePath() (rln.MerklePath, error) {
	mp, ok := p.m.MerklePath()
	if !ok {
		h := p.m.Health()
		return rln.MerklePath{}, fmt.Errorf("%w: the membership's Merkle path is not known yet (%s)", rln.ErrPath, h.Desc)
	}
	out := rln.MerklePath{Index: uint64(mp.Index)}
	for i, s := range mp.Siblings {
		out.Siblings[i] = rln.Field(s)
	}
	return out, nil
}

// Prepare returns the message to publish on pubsubTopic with its decoded
// proof: m with a proof the Publisher made when m carries none and the
// node has a membership (a *ProofError when none could be made), else m as
// the validator Accepted it (ErrInvalid otherwise, as nwaku's relay
// validateMessage fails on any result but Accept). m must carry its final
// timestamp and is not modified; the message returned is m or a copy
// aliasing m's slices with a new RateLimitProof.
func (r *RLN) Prepare(pubsubTopic string, m *message.Message) (*message.Message, *rln.RateLimitProof, error) {
	if pub := r.publisher.Load(); pub != nil && len(m.RateLimitProof) == 0 {
		out, proof, err := pub.Attach(m)
		if err != nil {
			return nil, nil, &ProofError{err}
		}
		return out, proof, nil
	}
	proof, res := r.validator.ValidateMessage(pubsubTopic, m)
	if res != pubsub.ValidationAccept {
		return nil, nil, ErrInvalid
	}
	return m, proof, nil
}

// Lightpush returns the lightpush service's RLN step
// (lightpush.Config.RLN): Prepare, with its *ProofError as lightpush's
// *OutOfRLNProofError (OUT_OF_RLN_PROOF) and its other errors as they are.
func (r *RLN) Lightpush() lightpush.RLN { return lightpushRLN{r} }

// lightpushRLN is the lightpush.RLN of RLN.Lightpush.
type lightpushRLN struct{ r *RLN }

func (l lightpushRLN) Prepare(topic string, m *message.Message) (*message.Message, *rln.RateLimitProof, error) {
	out, proof, err := l.r.Prepare(topic, m)
	var pe *ProofError
	if errors.As(err, &pe) {
		return nil, nil, &lightpush.OutOfRLNProofError{Err: pe.Err}
	}
	return out, proof, err
}

// Health is the "Rln Relay" entry of /health, as nwaku's getRlnRelayHealth
// (waku/node/health_monitor/node_health_monitor.nim): SYNCHRONIZING
// before the Manager runs and while it has not read the first root, READY
// while it reads the contract, NOT_READY with the reason when its polls
// fail.
func (r *RLN) Health() (state.HealthStatus, string) {
	m := r.manager.Load()
	if m == nil {
		return state.Synchronizing, ""
	}
	h := m.Health()
	switch h.State {
	case membership.StateReady:
		return state.Ready, ""
	case membership.StateSynchronizing:
		return state.Synchronizing, ""
	}
	return state.NotReady, h.Desc
}

// Collector returns the RLN metrics: the validator's and the Publisher's
// (rlnrelay.Collector), the membership's
// waku_rln_number_registered_memberships and, once a keystore was read,
// waku_rln_membership_credentials_import_duration_seconds (the seconds
// reading it took, as nwaku's group manager times getMembershipCredentials
// in waku_rln_relay/group_manager/on_chain/group_manager.nim). Call it
// after Start, once the Publisher exists.
func (r *RLN) Collector() prometheus.Collector {
	return collector{inner: rlnrelay.Collector(r.validator, r.publisher.Load()), r: r}
}

var (
	descMembers = prometheus.NewDesc("waku_rln_number_registered_memberships", "number of registered and active rln memberships", nil, nil)
	descImport  = prometheus.NewDesc("waku_rln_membership_credentials_import_duration_seconds", "time taken to import membership credentials", nil, nil)
)

type collector struct {
	inner prometheus.Collector
	r     *RLN
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	c.inner.Describe(ch)
	ch <- descMembers
	ch <- descImport
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.inner.Collect(ch)
	if m := c.r.manager.Load(); m != nil {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(m.Members()))
	}
	if ns := c.r.imported.Load(); ns > 0 {
		ch <- prometheus.MustNewConstMetric(descImport, prometheus.GaugeValue, time.Duration(ns).Seconds())
	}
}

// ClosePublisher closes the Publisher's counter file; proofs are refused
// after it. Call it once the REST API and lightpush have stopped.
func (r *RLN) ClosePublisher() error {
	if p := r.publisher.Load(); p != nil {
		return p.Close()
	}
	return nil
}

// CloseMembership stops following the chain. Call it after the relay has
// closed: the validator needs the roots until then.
func (r *RLN) CloseMembership() {
	if m := r.manager.Load(); m != nil {
		m.Close()
	}
}
