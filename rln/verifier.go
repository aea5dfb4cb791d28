package rln

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/rln/internal/groth16"
)

// Errors of verification. Every error Verify returns wraps exactly one of
// ErrRLNIdentifier, ErrNonCanonical or ErrInvalidProof (ErrSignalMismatch
// wraps ErrInvalidProof).
var (
	// ErrInvalidProof: the zkSNARK does not verify for the proof's public
	// values, or its bytes are not three valid compressed points (not on
	// the curve, outside the subgroup, bad flags). zerokit's
	// verify_with_roots fails the same proofs and nwaku Rejects them.
	ErrInvalidProof = errors.New("rln: invalid proof")
	// ErrSignalMismatch: ShareX is not the Hash of the message's Signal, so
	// the proof was made for other content (zerokit verify_with_roots
	// compares them after the pairing; nwaku counts it as invalid_proof).
	ErrSignalMismatch = fmt.Errorf("%w: share_x is not the hash of the message's signal", ErrInvalidProof)
	// ErrRLNIdentifier: the proof is valid but for another RLN
	// application. nwaku never compares the identifier and relays such
	// proofs, which lets a member multiply its rate by choosing
	// identifiers; a relay drops them without penalising the forwarder
	// (Ignore). An invalid proof for another application is
	// ErrInvalidProof, as in nwaku.
	ErrRLNIdentifier = errors.New("rln: proof is for another rln_identifier")
)

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// RLNIdentifier is the application proofs must be for. The zero value
	// means DefaultRLNIdentifier() (Waku's).
	RLNIdentifier RLNIdentifier
	// Rand supplies the random coefficients of batch verification. nil
	// means crypto/rand; tests may make batches deterministic. Another
	// reader must be safe for concurrent use when VerifyBatch is called
	// from several goroutines.
	Rand io.Reader
}

// Verifier checks RateLimitProofs against the RLN circuit's verifying key,
// which is compiled into the package (derived from zerokit's
// rln_final.zkey): a relay needs no circuit files. It is safe for
// concurrent use and holds no lock on the verification path, so
// verifications run on as many goroutines as call it.
type Verifier struct {
	g   *groth16.Verifier
	id  RLNIdentifier
	rnd io.Reader
	ext [extSlots]atomic.Pointer[extNullifier] // by epoch number mod extSlots
}

// extSlots is the number of epochs whose external nullifier a Verifier
// keeps: more than the 41 epochs of 1 s that a 20 s clock gap admits on
// either side of now.
const extSlots = 64

type extNullifier struct {
	epoch Epoch
	value fr.Element
}

// NewVerifier prepares the compiled-in verifying key: e(alpha, beta), the
// Miller loop lines of beta, gamma and delta, and tables of the five IC
// points for the public inputs (tens of milliseconds, 2.5 MiB). Make one
// per node and share it.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	vk, err := verifyingKey()
	if err != nil {
		return nil, err
	}
	g, err := groth16.NewVerifier(vk)
	if err != nil {
		return nil, err
	}
	v := &Verifier{g: g, id: cfg.RLNIdentifier, rnd: cfg.Rand}
	if v.id == (RLNIdentifier{}) {
		v.id = DefaultRLNIdentifier()
	}
	if v.rnd == nil {
		v.rnd = rand.Reader
	}
	return v, nil
}

// PublicInputs are the circuit's public signals in its order (zerokit
// verify_proof, rln/src/protocol.rs): the outputs y, root and nullifier,
// then the inputs x and external nullifier.
type PublicInputs struct {
	Y, Root, Nullifier, X, ExternalNullifier Field
}

// PublicInputs returns the public signals p proves, with the external
// nullifier computed from p's epoch and identifier.
func (p *RateLimitProof) PublicInputs() PublicInputs {
	return PublicInputs{Y: p.ShareY, Root: p.MerkleRoot, Nullifier: p.Nullifier, X: p.ShareX,
		ExternalNullifier: ExternalNullifier(p.Epoch, p.RLNIdentifier)}
}

// Verify checks that p is a valid proof for the message of signal s:
// ShareX is s.Hash()
// (ErrSignalMismatch), the zkSNARK verifies for p's public values
// (ErrInvalidProof), and p is for the verifier's RLN identifier
// (ErrRLNIdentifier, only for a proof that is otherwise valid). It is
// zerokit's verify_with_roots without the root check, which belongs to the
// membership's window of acceptable roots, as the epoch check and the
// nullifier log belong to the relay (nwaku validateMessage order: epoch,
// root, proof, nullifier). p comes from
// DecodeRateLimitProof (also the proof it returns with ErrNonCanonical) or
// Prove; a public value not below r gives ErrNonCanonical. Verify only
// reads s and p.
func (v *Verifier) Verify(s Signal, p *RateLimitProof) error {
	proof, public, err := v.prepare(s, p)
	if err != nil {
		return err
	}
	if err := v.g.Verify(&proof, public[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidProof, err)
	}
	return v.checkID(p)
}

func (v *Verifier) checkID(p *RateLimitProof) error {
	if p.RLNIdentifier != v.id {
		return fmt.Errorf("%w: %x", ErrRLNIdentifier, p.RLNIdentifier[:])
	}
	return nil
}

// prepare runs the checks that need no pairing and decodes the points.
func (v *Verifier) prepare(s Signal, p *RateLimitProof) (groth16.Proof, [5]fr.Element, error) {
	var public [5]fr.Element
	if s.Hash() != p.ShareX {
		return groth16.Proof{}, public, ErrSignalMismatch
	}
	for i, f := range []*Field{&p.ShareY, &p.MerkleRoot, &p.Nullifier, &p.ShareX} {
		e, ok := f.element()
		if !ok {
			return groth16.Proof{}, public, fmt.Errorf("%w: public value %d not below the field modulus", ErrNonCanonical, i)
		}
		public[i] = e
	}
	public[4] = v.externalNullifier(p.Epoch, p.RLNIdentifier)
	proof, err := groth16.DecodeProof(&p.Proof)
	if err != nil {
		return proof, public, fmt.Errorf("%w: %v", ErrInvalidProof, err)
	}
	return proof, public, nil
}

// externalNullifier returns ExternalNullifier(epoch, id), keeping the
// values of recent epochs for the verifier's identifier: messages of one
// epoch share it.
func (v *Verifier) externalNullifier(epoch Epoch, id RLNIdentifier) fr.Element {
	if id != v.id {
		f := ExternalNullifier(epoch, id)
		e, _ := f.element()
		return e
	}
	slot := &v.ext[epoch.Uint64()%extSlots]
	if c := slot.Load(); c != nil && c.epoch == epoch {
		return c.value
	}
	f := ExternalNullifier(epoch, v.id)
	e, _ := f.element()
	slot.Store(&extNullifier{epoch: epoch, value: e})
	return e
}

// BatchItem is one message's signal and its decoded proof for
// VerifyBatch.
type BatchItem struct {
	Signal Signal
	Proof  *RateLimitProof
}

// VerifyBatch verifies items together and returns one error per item, nil
// for each valid one, the same errors Verify would return. The zkSNARKs
// that pass the cheap checks are verified in one multi-pairing with a
// random linear combination (n+3 Miller loops and one final
// exponentiation instead of 3n and n); when that fails, each is verified
// alone to find the invalid ones. The result is newly allocated.
func (v *Verifier) VerifyBatch(items []BatchItem) []error {
	errs := make([]error, len(items))
	proofs := make([]*groth16.Proof, 0, len(items))
	publics := make([][]fr.Element, 0, len(items))
	index := make([]int, 0, len(items))
	for i, it := range items {
		proof, public, err := v.prepare(it.Signal, it.Proof)
		if err != nil {
			errs[i] = err
			continue
		}
		proofs = append(proofs, &proof)
		publics = append(publics, public[:])
		index = append(index, i)
	}
	err := v.g.VerifyBatch(proofs, publics, v.rnd)
	switch {
	case err == nil:
	case len(proofs) == 1:
		errs[index[0]] = fmt.Errorf("%w: %v", ErrInvalidProof, err)
	default:
		for k, i := range index {
			if err := v.g.Verify(proofs[k], publics[k]); err != nil {
				errs[i] = fmt.Errorf("%w: %v", ErrInvalidProof, err)
			}
		}
	}
	for _, i := range index {
		if errs[i] == nil {
			errs[i] = v.checkID(items[i].Proof)
		}
	}
	return errs
}
