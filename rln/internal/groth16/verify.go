package groth16

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// Errors of the verifier.
var (
	// ErrProof: the pairing equation does not hold.
	ErrProof = errors.New("groth16: proof does not verify")
	// ErrInputs: the number of public inputs is not the key's.
	ErrInputs = errors.New("groth16: wrong number of public inputs")
)

type lines = [2][len(bn254.LoopCounter)]bn254.LineEvaluationAff

// Verifier checks proofs against one verifying key. It precomputes
// e(alpha, beta) and the Miller loop lines of beta, gamma and delta. It is
// immutable and safe for concurrent use.
type Verifier struct {
	vk        VerifyingKey
	alphaBeta bn254.GT
	beta      lines
	gamma     lines
	delta     lines
	ic        []fixedBase // IC[1:], for the public inputs
}

// fixedBase holds d·2^(8j)·P for every byte value d > 0 and byte position
// j of a scalar, so that s·P costs one mixed addition per non-zero byte of
// s and no doubling (32 additions instead of a windowed multiplication's
// 254 doublings).
type fixedBase [fr.Bytes][255]bn254.G1Affine

func newFixedBase(p *bn254.G1Affine) *fixedBase {
	t := new(fixedBase)
	jac := make([]bn254.G1Jac, 255)
	var base bn254.G1Jac
	base.FromAffine(p)
	for j := range t {
		jac[0].Set(&base)
		for d := 1; d < 255; d++ {
			jac[d].Set(&jac[d-1]).AddAssign(&base)
		}
		copy(t[j][:], bn254.BatchJacobianToAffineG1(jac))
		for range 8 {
			base.DoubleAssign()
		}
	}
	return t
}

// mulAdd adds s·P to acc.
func (t *fixedBase) mulAdd(acc *bn254.G1Jac, s *fr.Element) {
	b := s.Bits() // regular form, little-endian limbs
	for j := range t {
		if d := byte(b[j/8] >> (8 * (j % 8))); d != 0 {
			acc.AddMixed(&t[j][d-1])
		}
	}
}

// NewVerifier prepares vk, which must have at least one IC point; vk is
// copied. The tables of the IC points take 512 KiB per public input.
func NewVerifier(vk *VerifyingKey) (*Verifier, error) {
	if len(vk.IC) == 0 {
		return nil, fmt.Errorf("%w: key has no IC points", ErrInputs)
	}
	v := &Verifier{vk: *vk}
	v.vk.IC = append([]bn254.G1Affine(nil), vk.IC...)
	ab, err := bn254.Pair([]bn254.G1Affine{vk.Alpha}, []bn254.G2Affine{vk.Beta})
	if err != nil {
		return nil, err
	}
	v.alphaBeta = ab
	v.beta = bn254.PrecomputeLines(vk.Beta)
	v.gamma = bn254.PrecomputeLines(vk.Gamma)
	v.delta = bn254.PrecomputeLines(vk.Delta)
	for i := range v.vk.IC[1:] {
		v.ic = append(v.ic, *newFixedBase(&v.vk.IC[i+1]))
	}
	return v, nil
}

// NumPublic is the number of public inputs the key takes.
func (v *Verifier) NumPublic() int { return len(v.vk.IC) - 1 }

// Key returns the verifying key. It must not be modified.
func (v *Verifier) Key() *VerifyingKey { return &v.vk }

// inputPoint returns IC[0] + sum of public[i]·IC[i+1].
func (v *Verifier) inputPoint(public []fr.Element) (bn254.G1Jac, error) {
	var acc bn254.G1Jac
	if len(public) != len(v.vk.IC)-1 {
		return acc, fmt.Errorf("%w: %d, the key takes %d", ErrInputs, len(public), len(v.vk.IC)-1)
	}
	acc.FromAffine(&v.vk.IC[0])
	for i := range public {
		v.ic[i].mulAdd(&acc, &public[i])
	}
	return acc, nil
}

// Verify checks e(A, B) = e(alpha, beta)·e(IC(public), gamma)·e(C, delta).
// The proof's points must come from DecodeProof (on the curve and in the
// subgroups). It returns nil, ErrProof or ErrInputs.
func (v *Verifier) Verify(p *Proof, public []fr.Element) error {
	x, err := v.inputPoint(public)
	if err != nil {
		return err
	}
	var negX, negC bn254.G1Affine
	negX.FromJacobian(&x)
	negX.Neg(&negX)
	negC.Neg(&p.C)
	f1, err := bn254.MillerLoop([]bn254.G1Affine{p.A}, []bn254.G2Affine{p.B})
	if err != nil {
		return err
	}
	f2, err := bn254.MillerLoopFixedQ([]bn254.G1Affine{negX, negC}, []lines{v.gamma, v.delta})
	if err != nil {
		return err
	}
	f1.Mul(&f1, &f2)
	if f := bn254.FinalExponentiation(&f1); !f.Equal(&v.alphaBeta) {
		return ErrProof
	}
	return nil
}

// VerifyBatch checks all proofs in one multi-pairing: with random 128-bit
// r_i (r_0 = 1), prod e(r_i·A_i, B_i) · e(-(sum r_i)·alpha, beta) ·
// e(-sum r_i·IC(public_i), gamma) · e(-sum r_i·C_i, delta) = 1. A false
// proof passes with probability at most 2^-128. It returns nil when every
// proof verifies and ErrProof when at least one does not (which one is
// for the caller to find with Verify), or ErrInputs. rnd supplies the
// r_i (nil means crypto/rand).
func (v *Verifier) VerifyBatch(proofs []*Proof, public [][]fr.Element, rnd io.Reader) error {
	n := len(proofs)
	if n != len(public) {
		return fmt.Errorf("%w: %d proofs, %d input lists", ErrInputs, n, len(public))
	}
	if n == 0 {
		return nil
	}
	if n == 1 {
		return v.Verify(proofs[0], public[0])
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	nPub := len(v.vk.IC) - 1
	r := make([]fr.Element, n)
	r[0].SetOne()
	var buf [16]byte
	for i := 1; i < n; i++ {
		if _, err := io.ReadFull(rnd, buf[:]); err != nil {
			return fmt.Errorf("groth16: batch randomness: %w", err)
		}
		r[i].SetBytes(buf[:])
	}
	// scalars of IC: sum r_i for IC[0], sum r_i·public_i[j] for IC[j+1]
	sc := make([]fr.Element, nPub+1)
	as := make([]bn254.G1Affine, n)
	bs := make([]bn254.G2Affine, n)
	cs := make([]bn254.G1Affine, n)
	var t fr.Element
	for i, p := range proofs {
		if len(public[i]) != nPub {
			return fmt.Errorf("%w: proof %d has %d, the key takes %d", ErrInputs, i, len(public[i]), nPub)
		}
		sc[0].Add(&sc[0], &r[i])
		for j := range public[i] {
			t.Mul(&r[i], &public[i][j])
			sc[j+1].Add(&sc[j+1], &t)
		}
		if i == 0 {
			as[i] = p.A
		} else {
			var k bn254.G1Jac
			k.FromAffine(&p.A)
			as[i].FromJacobian(k.ScalarMultiplication(&k, r[i].BigInt(new(big.Int))))
		}
		bs[i], cs[i] = p.B, p.C
	}
	var sumC, sumX bn254.G1Jac
	cfg := ecc.MultiExpConfig{NbTasks: 1}
	if _, err := sumC.MultiExp(cs, r, cfg); err != nil {
		return err
	}
	sumX.FromAffine(&v.vk.IC[0])
	sumX.ScalarMultiplication(&sumX, sc[0].BigInt(new(big.Int)))
	for j := range v.ic {
		v.ic[j].mulAdd(&sumX, &sc[j+1])
	}
	var fixed [3]bn254.G1Affine
	fixed[0].ScalarMultiplication(&v.vk.Alpha, sc[0].BigInt(new(big.Int)))
	fixed[1].FromJacobian(&sumX)
	fixed[2].FromJacobian(&sumC)
	for i := range fixed {
		fixed[i].Neg(&fixed[i])
	}
	f1, err := bn254.MillerLoop(as, bs)
	if err != nil {
		return err
	}
	f2, err := bn254.MillerLoopFixedQ(fixed[:], []lines{v.beta, v.gamma, v.delta})
	if err != nil {
		return err
	}
	f1.Mul(&f1, &f2)
	var one bn254.GT
	one.SetOne()
	if f := bn254.FinalExponentiation(&f1); !f.Equal(&one) {
		return ErrProof
	}
	return nil
}
