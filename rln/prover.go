package rln

import (
	"errors"
	"fmt"
	"io"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/rln/internal/groth16"
	"github.com/couriernet/courier/rln/internal/witness"
	"github.com/couriernet/courier/rln/internal/zkey"
)

// MaxUserMessageLimit is the largest user message limit the circuit
// accepts: its range check of the message id works on 16 bits
// (LIMIT_BIT_SIZE of zerokit's circuit).
const MaxUserMessageLimit = 1<<16 - 1

// ErrProve is wrapped by Prove's errors about its inputs: a message id not
// below the limit, a limit of 0 or over MaxUserMessageLimit, a
// non-canonical secret, or a bad path (which also wraps ErrPath).
var ErrProve = errors.New("rln: cannot prove")

// ProverConfig configures a Prover.
type ProverConfig struct {
	// Dir holds the circuit files (ZkeyFile and GraphFile). Empty means
	// DefaultCircuitDir().
	Dir string
	// Tasks bounds the goroutines one proof uses for its FFTs and
	// multi-scalar multiplications. 0 means GOMAXPROCS.
	Tasks int
	// RLNIdentifier is the application proofs are made for; the zero
	// value means DefaultRLNIdentifier().
	RLNIdentifier RLNIdentifier
	// Rand supplies the proofs' blinding factors. nil means crypto/rand;
	// another reader must be safe for concurrent use when Prove is called
	// from several goroutines.
	Rand io.Reader
}

// Member is what a prover needs of its own membership: the identity
// secret (IdentityCredential.SecretHash), the user message limit it
// registered, and its current path in the tree (from the contract's
// getMerkleProof; refetch it when the root changes).
type Member struct {
	SecretHash       Field
	UserMessageLimit uint64
	Path             MerklePath
}

// Prover makes RLN proofs in pure Go: the witness from zerokit's witness
// graph, the Groth16 proof from the snarkjs proving key, compatible with
// zerokit's verifier (and with Verifier). It is immutable and safe for
// concurrent use; each Prove allocates its own buffers.
type Prover struct {
	graph *witness.Graph
	g     *groth16.Prover
	tasks int
	id    RLNIdentifier
	rnd   io.Reader
}

// circuit input names (zerokit inputs_for_witness_calculation)
const (
	inIdentitySecret    = "identitySecret"
	inUserMessageLimit  = "userMessageLimit"
	inMessageID         = "messageId"
	inPathElements      = "pathElements"
	inIdentityPathIndex = "identityPathIndex"
	inX                 = "x"
	inExternalNullifier = "externalNullifier"
)

// NewProver loads and checks the circuit files (ErrCircuitFiles) and
// parses them (about 25 ms and 12 MB of keys in memory).
func NewProver(cfg ProverConfig) (*Prover, error) {
	dir := cfg.Dir
	if dir == "" {
		dir = DefaultCircuitDir()
	}
	zb, err := readCircuitFile(dir, ZkeyFile, ZkeySHA256)
	if err != nil {
		return nil, err
	}
	gb, err := readCircuitFile(dir, GraphFile, GraphSHA256)
	if err != nil {
		return nil, err
	}
	pk, err := zkey.Parse(zb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCircuitFiles, err)
	}
	graph, err := witness.Parse(gb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCircuitFiles, err)
	}
	if graph.WitnessSize() != pk.NVars || pk.NPublic != 5 {
		return nil, fmt.Errorf("%w: graph has %d wires, key %d signals and %d public", ErrCircuitFiles, graph.WitnessSize(), pk.NVars, pk.NPublic)
	}
	g, err := groth16.NewProver(pk)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCircuitFiles, err)
	}
	p := &Prover{graph: graph, g: g, tasks: cfg.Tasks, id: cfg.RLNIdentifier, rnd: cfg.Rand}
	if p.id == (RLNIdentifier{}) {
		p.id = DefaultRLNIdentifier()
	}
	return p, nil
}

// Prove makes the RateLimitProof of the message of signal s for member in
// epoch with message id messageID, which must be below the member's limit:
// each id may be used once per epoch, since two signals with one id reveal
// the member's secret (RecoverSecret). The proof's root is the root of
// member.Path. s and member are only read. Errors wrap ErrProve.
func (p *Prover) Prove(s Signal, member *Member, messageID uint64, epoch Epoch) (*RateLimitProof, error) {
	x := s.Hash()
	ext := ExternalNullifier(epoch, p.id)
	xe, _ := x.element() // both are hashes, canonical
	exte, _ := ext.element()
	w, err := p.witness(member, messageID, xe, exte)
	if err != nil {
		return nil, err
	}
	proof, err := p.g.Prove(w, p.rnd, p.tasks)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProve, err)
	}
	// wires 1 to 5 are the public signals: y, root, nullifier, x, external nullifier
	return &RateLimitProof{
		Proof:         proof.Encode(),
		MerkleRoot:    fieldOf(&w[2]),
		Epoch:         epoch,
		ShareX:        x,
		ShareY:        fieldOf(&w[1]),
		Nullifier:     fieldOf(&w[3]),
		RLNIdentifier: p.id,
	}, nil
}

// witness checks the member's values and computes the circuit's witness.
func (p *Prover) witness(member *Member, messageID uint64, x, ext fr.Element) ([]fr.Element, error) {
	limit := member.UserMessageLimit
	if limit == 0 || limit > MaxUserMessageLimit {
		return nil, fmt.Errorf("%w: user message limit %d not in 1..%d", ErrProve, limit, MaxUserMessageLimit)
	}
	if messageID >= limit {
		return nil, fmt.Errorf("%w: message id %d not below the user message limit %d", ErrProve, messageID, limit)
	}
	secret, ok := member.SecretHash.element()
	if !ok {
		return nil, fmt.Errorf("%w: secret hash not below the field modulus", ErrProve)
	}
	if member.Path.Index >= 1<<TreeDepth {
		return nil, fmt.Errorf("%w: %w: index %d not below 2^%d", ErrProve, ErrPath, member.Path.Index, TreeDepth)
	}
	siblings := make([]fr.Element, TreeDepth)
	for i := range siblings {
		e, ok := member.Path.Siblings[i].element()
		if !ok {
			return nil, fmt.Errorf("%w: %w: sibling %d not below the field modulus", ErrProve, ErrPath, i)
		}
		siblings[i] = e
	}
	var lim, id fr.Element
	lim.SetUint64(limit)
	id.SetUint64(messageID)
	w, err := p.graph.Calculate(map[string][]fr.Element{
		inIdentitySecret:    {secret},
		inUserMessageLimit:  {lim},
		inMessageID:         {id},
		inPathElements:      siblings,
		inIdentityPathIndex: member.Path.indexBits(),
		inX:                 {x},
		inExternalNullifier: {ext},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: witness: %v", ErrProve, err)
	}
	return w, nil
}
