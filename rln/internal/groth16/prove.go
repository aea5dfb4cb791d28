package groth16

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"runtime"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr/fft"
)

// ErrWitness: the witness does not fit the key.
var ErrWitness = errors.New("groth16: witness does not fit the proving key")

// Prover makes proofs with one proving key. It is immutable and safe for
// concurrent use.
type Prover struct {
	pk     *ProvingKey
	domain *fft.Domain
}

// NewProver prepares the FFT domain of pk, which is kept (not copied) and
// must not be modified afterwards. The domain's coset shift is the
// primitive root of unity of order 2·DomainSize: snarkjs' H query is the
// Lagrange basis of the odd points of the doubled domain.
func NewProver(pk *ProvingKey) (*Prover, error) {
	n := uint64(pk.DomainSize)
	if n == 0 || n&(n-1) != 0 || len(pk.A) != pk.NVars || len(pk.B1) != pk.NVars || len(pk.B2) != pk.NVars ||
		len(pk.C) != pk.NVars-pk.NPublic-1 || len(pk.H) != pk.DomainSize {
		return nil, fmt.Errorf("%w: inconsistent key sizes", ErrWitness)
	}
	shift, err := fft.Generator(2 * n)
	if err != nil {
		return nil, err
	}
	return &Prover{pk: pk, domain: fft.NewDomain(n, fft.WithShift(shift))}, nil
}

// Prove makes a proof for the full witness w (NVars elements, w[0] = 1,
// the public signals next), with the blinding r and s drawn from rnd (nil
// means crypto/rand). tasks bounds the goroutines of the FFTs and
// multi-scalar multiplications (0 means GOMAXPROCS). It does not check
// that w satisfies the constraints: a witness that does not gives a proof
// that does not verify.
func (pv *Prover) Prove(w []fr.Element, rnd io.Reader, tasks int) (*Proof, error) {
	pk := pv.pk
	if len(w) != pk.NVars {
		return nil, fmt.Errorf("%w: %d values, the key has %d signals", ErrWitness, len(w), pk.NVars)
	}
	if !w[0].IsOne() {
		return nil, fmt.Errorf("%w: signal 0 is not 1", ErrWitness)
	}
	if tasks <= 0 {
		tasks = runtime.GOMAXPROCS(0)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	var r, s fr.Element
	if err := randScalar(rnd, &r); err != nil {
		return nil, err
	}
	if err := randScalar(rnd, &s); err != nil {
		return nil, err
	}
	h := pv.quotient(w, tasks)
	cfg := ecc.MultiExpConfig{NbTasks: tasks}

	var a, b1, c, hc bn254.G1Jac
	var b bn254.G2Jac
	if _, err := a.MultiExp(pk.A, w, cfg); err != nil {
		return nil, err
	}
	if _, err := b1.MultiExp(pk.B1, w, cfg); err != nil {
		return nil, err
	}
	if _, err := b.MultiExp(pk.B2, w, cfg); err != nil {
		return nil, err
	}
	if _, err := c.MultiExp(pk.C, w[pk.NPublic+1:], cfg); err != nil {
		return nil, err
	}
	if _, err := hc.MultiExp(pk.H, h, cfg); err != nil {
		return nil, err
	}
	rb, sb := r.BigInt(new(big.Int)), s.BigInt(new(big.Int))
	var t bn254.G1Jac
	var t2 bn254.G2Jac

	// A = alpha + sum w_i·A_i + r·delta
	a.AddMixed(&pk.Alpha)
	t.FromAffine(&pk.Delta1)
	a.AddAssign(t.ScalarMultiplication(&t, rb))
	// B = beta + sum w_i·B_i + s·delta (in G2, and in G1 for C)
	b.AddMixed(&pk.Beta)
	t2.FromAffine(&pk.Delta)
	b.AddAssign(t2.ScalarMultiplication(&t2, sb))
	b1.AddMixed(&pk.Beta1)
	t.FromAffine(&pk.Delta1)
	b1.AddAssign(t.ScalarMultiplication(&t, sb))
	// C = sum_private w_i·C_i + sum h_i·H_i + s·A + r·B1 - r·s·delta
	c.AddAssign(&hc)
	t.Set(&a)
	c.AddAssign(t.ScalarMultiplication(&t, sb))
	t.Set(&b1)
	c.AddAssign(t.ScalarMultiplication(&t, rb))
	var rs fr.Element
	rs.Mul(&r, &s)
	t.FromAffine(&pk.Delta1)
	t.ScalarMultiplication(&t, rs.BigInt(new(big.Int)))
	c.SubAssign(&t)

	p := new(Proof)
	p.A.FromJacobian(&a)
	p.B.FromJacobian(&b)
	p.C.FromJacobian(&c)
	return p, nil
}

// quotient returns the evaluations of (A·B - C)(X) on the odd coset
// (omega_2n · omega_n^i), where A, B are the constraint matrices applied
// to w and C = A∘B on the domain, as snarkjs' prover computes them.
func (pv *Prover) quotient(w []fr.Element, tasks int) []fr.Element {
	n := pv.pk.DomainSize
	a := make([]fr.Element, n)
	b := make([]fr.Element, n)
	c := make([]fr.Element, n)
	var t fr.Element
	for i := range pv.pk.Coefficients {
		co := &pv.pk.Coefficients[i]
		t.Mul(&co.Value, &w[co.Signal])
		if co.Matrix == 0 {
			a[co.Constraint].Add(&a[co.Constraint], &t)
		} else {
			b[co.Constraint].Add(&b[co.Constraint], &t)
		}
	}
	for i := range c {
		c[i].Mul(&a[i], &b[i])
	}
	nt := fft.WithNbTasks(tasks)
	for _, v := range [][]fr.Element{a, b, c} {
		pv.domain.FFTInverse(v, fft.DIF, nt)
		pv.domain.FFT(v, fft.DIT, fft.OnCoset(), nt)
	}
	for i := range a {
		a[i].Mul(&a[i], &b[i]).Sub(&a[i], &c[i])
	}
	return a
}

// randScalar draws a uniform non-zero scalar from 48 random bytes.
func randScalar(rnd io.Reader, z *fr.Element) error {
	var buf [48]byte
	for {
		if _, err := io.ReadFull(rnd, buf[:]); err != nil {
			return fmt.Errorf("groth16: randomness: %w", err)
		}
		z.SetBytes(buf[:])
		if !z.IsZero() {
			return nil
		}
	}
}
