package groth16_test

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/rln/internal/groth16"
	"github.com/couriernet/courier/rln/internal/witness"
	"github.com/couriernet/courier/rln/internal/zkey"
)

func randomPoints(rnd *rand.Rand) (bn254.G1Affine, bn254.G2Affine) {
	_, _, g1, g2 := bn254.Generators()
	s := new(big.Int).SetUint64(rnd.Uint64())
	s.Lsh(s, 64).Add(s, new(big.Int).SetUint64(rnd.Uint64()))
	var a bn254.G1Affine
	var b bn254.G2Affine
	a.ScalarMultiplication(&g1, s)
	b.ScalarMultiplication(&g2, s)
	return a, b
}

func TestCompressedRoundTrip(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 64 {
		a, b := randomPoints(rnd)
		if i%2 == 1 {
			a.Neg(&a)
			b.Neg(&b)
		}
		p := groth16.Proof{A: a, B: b, C: a}
		enc := p.Encode()
		got, err := groth16.DecodeProof(&enc)
		if err != nil {
			t.Fatal(err)
		}
		if got != p {
			t.Fatalf("round trip %d differs", i)
		}
		// the flag of A says whether y is the larger root
		if (enc[31]&0x80 != 0) != a.Y.LexicographicallyLargest() {
			t.Fatal("flag of A")
		}
	}
	var inf groth16.Proof
	enc := inf.Encode()
	if enc[31] != 0x40 || enc[95] != 0x40 || enc[127] != 0x40 {
		t.Fatalf("infinity flags % x", enc)
	}
	if got, err := groth16.DecodeProof(&enc); err != nil || got != inf {
		t.Fatalf("infinity: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	a, b := randomPoints(rnd)
	good := groth16.Proof{A: a, B: b, C: a}
	enc := good.Encode()
	q := fp.Modulus()
	qLE := make([]byte, 32)
	qBE := q.FillBytes(make([]byte, 32))
	for i := range qBE {
		qLE[i] = qBE[31-i]
	}
	// an x on the twist whose point lies outside the r-torsion subgroup
	offSubgroup := func() [64]byte {
		var x, y bn254.E2
		for k := uint64(1); ; k++ {
			x.A0.SetUint64(k)
			y.Square(&x).Mul(&y, &x).Add(&y, twistB())
			if y.Legendre() == 1 {
				y.Sqrt(&y)
				p := bn254.G2Affine{X: x, Y: y}
				if !p.IsInSubGroup() {
					return groth16.EncodeG2(&p)
				}
			}
		}
	}()
	// an x with no G1 point: x^3+3 not a square
	noY := func() [32]byte {
		for k := uint64(1); ; k++ {
			var x, y fp.Element
			x.SetUint64(k)
			y.Square(&x).Mul(&y, &x).Add(&y, new(fp.Element).SetUint64(3))
			if y.Legendre() == -1 {
				var b [32]byte
				b[0] = byte(k)
				return b
			}
		}
	}()
	for _, tc := range []struct {
		name string
		f    func(b *[128]byte)
	}{
		{"A both flags", func(b *[128]byte) { b[31] |= 0xc0 }},
		{"A x = q", func(b *[128]byte) { copy(b[:32], qLE) }},
		{"A x has no point", func(b *[128]byte) { copy(b[:32], noY[:]) }},
		{"B both flags", func(b *[128]byte) { b[95] |= 0xc0 }},
		{"B x.c0 = q", func(b *[128]byte) { copy(b[32:64], qLE) }},
		{"B x.c1 = q", func(b *[128]byte) { copy(b[64:96], qLE) }},
		{"B outside the subgroup", func(b *[128]byte) { copy(b[32:96], offSubgroup[:]) }},
		{"C x has no point", func(b *[128]byte) { copy(b[96:], noY[:]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := enc
			tc.f(&b)
			if _, err := groth16.DecodeProof(&b); !errors.Is(err, groth16.ErrPoint) {
				t.Fatalf("got %v, want ErrPoint", err)
			}
		})
	}
}

func twistB() *bn254.E2 {
	var xi, b bn254.E2
	xi.A0.SetUint64(9)
	xi.A1.SetOne()
	xi.Inverse(&xi)
	b.MulByElement(&xi, new(fp.Element).SetUint64(3))
	return &b
}

var (
	keyOnce sync.Once
	pk      *groth16.ProvingKey
	graph   *witness.Graph
	keyErr  error
)

// rlnKey loads the RLN circuit's proving key and witness graph.
func rlnKey(t testing.TB) (*groth16.ProvingKey, *witness.Graph) {
	t.Helper()
	dir := testcircuit.Dir(t)
	keyOnce.Do(func() {
		var zb, gb []byte
		if zb, keyErr = os.ReadFile(filepath.Join(dir, "rln_final.zkey")); keyErr != nil {
			return
		}
		if gb, keyErr = os.ReadFile(filepath.Join(dir, "graph.bin")); keyErr != nil {
			return
		}
		if pk, keyErr = zkey.Parse(zb); keyErr != nil {
			return
		}
		graph, keyErr = witness.Parse(gb)
	})
	if keyErr != nil {
		t.Fatal(keyErr)
	}
	return pk, graph
}

// rlnWitness is a witness of the RLN circuit for a few chosen inputs.
func rlnWitness(t testing.TB, g *witness.Graph, seed uint64) []fr.Element {
	t.Helper()
	one := func(v uint64) []fr.Element { var e fr.Element; e.SetUint64(v); return []fr.Element{e} }
	pe, pi := make([]fr.Element, 20), make([]fr.Element, 20)
	for i := range pe {
		pe[i].SetUint64(seed*100 + uint64(i))
		pi[i].SetUint64((seed >> i) & 1)
	}
	w, err := g.Calculate(map[string][]fr.Element{
		"identitySecret": one(seed + 1), "userMessageLimit": one(10), "messageId": one(seed % 10),
		"pathElements": pe, "identityPathIndex": pi, "x": one(seed + 2), "externalNullifier": one(seed + 3),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestProveVerify(t *testing.T) {
	pk, g := rlnKey(t)
	prover, err := groth16.NewProver(pk)
	if err != nil {
		t.Fatal(err)
	}
	v, err := groth16.NewVerifier(&pk.VerifyingKey)
	if err != nil {
		t.Fatal(err)
	}
	if v.NumPublic() != 5 {
		t.Fatalf("%d public inputs", v.NumPublic())
	}
	var proofs []*groth16.Proof
	var publics [][]fr.Element
	for seed := range uint64(3) {
		w := rlnWitness(t, g, seed)
		p, err := prover.Prove(w, rand.NewChaCha8([32]byte{byte(seed)}), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Verify(p, w[1:6]); err != nil {
			t.Fatalf("proof %d: %v", seed, err)
		}
		enc := p.Encode()
		if d, err := groth16.DecodeProof(&enc); err != nil || d != *p {
			t.Fatalf("proof %d does not round-trip: %v", seed, err)
		}
		proofs, publics = append(proofs, p), append(publics, w[1:6])
	}
	if err := v.VerifyBatch(proofs, publics, nil); err != nil {
		t.Fatal(err)
	}
	bad := append([]fr.Element(nil), publics[1]...)
	bad[2].SetUint64(1)
	if err := v.Verify(proofs[1], bad); !errors.Is(err, groth16.ErrProof) {
		t.Fatalf("wrong input: %v", err)
	}
	if err := v.VerifyBatch(proofs, [][]fr.Element{publics[0], bad, publics[2]}, nil); !errors.Is(err, groth16.ErrProof) {
		t.Fatalf("batch with a wrong input: %v", err)
	}
	if err := v.Verify(proofs[0], publics[0][:4]); !errors.Is(err, groth16.ErrInputs) {
		t.Fatalf("four inputs: %v", err)
	}
	// a witness that does not satisfy the constraints proves nothing
	w := rlnWitness(t, g, 5)
	w[10].SetUint64(12345)
	p, err := prover.Prove(w, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(p, w[1:6]); !errors.Is(err, groth16.ErrProof) {
		t.Fatalf("unsatisfied witness: %v", err)
	}
	if _, err := prover.Prove(w[:10], nil, 1); !errors.Is(err, groth16.ErrWitness) {
		t.Fatalf("short witness: %v", err)
	}
}

func FuzzDecodeProof(f *testing.F) {
	rnd := rand.New(rand.NewPCG(5, 6))
	a, b := randomPoints(rnd)
	p := groth16.Proof{A: a, B: b, C: a}
	enc := p.Encode()
	f.Add(enc[:])
	var inf groth16.Proof
	infEnc := inf.Encode()
	f.Add(infEnc[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		var b [groth16.ProofCompressedSize]byte
		copy(b[:], data)
		p, err := groth16.DecodeProof(&b)
		if err != nil {
			if !errors.Is(err, groth16.ErrPoint) {
				t.Fatalf("error %v does not wrap ErrPoint", err)
			}
			return
		}
		if !p.A.IsOnCurve() || !p.B.IsInSubGroup() || !p.C.IsOnCurve() {
			t.Fatal("decoded points off the curves")
		}
		again := p.Encode()
		if got, err := groth16.DecodeProof(&again); err != nil || got != p {
			t.Fatalf("re-encoding does not decode to the same proof: %v", err)
		}
	})
}
