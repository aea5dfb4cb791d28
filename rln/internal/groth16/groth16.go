// Package groth16 verifies and makes Groth16 proofs over BN254 for circuits
// compiled by circom and set up by snarkjs, in the forms zerokit (arkworks)
// uses: proofs compressed as ark-serialize writes them, public inputs as
// scalar field elements, and snarkjs' QAP with H evaluated on the odd coset
// (zerokit rln/src/circuit/qap.rs, snarkjs src/groth16_prove.js).
//
// The pairing, multi-scalar multiplication and FFT come from gnark-crypto;
// the verification equation, batching and the prover's assembly are here.
package groth16

import (
	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// Proof is a Groth16 proof: A and C in G1, B in G2, all affine.
type Proof struct {
	A bn254.G1Affine
	B bn254.G2Affine
	C bn254.G1Affine
}

// VerifyingKey is the verification part of a Groth16 key: alpha in G1, beta,
// gamma and delta in G2, and IC, the len(public inputs)+1 G1 points whose
// combination with the public inputs is paired with gamma.
type VerifyingKey struct {
	Alpha              bn254.G1Affine
	Beta, Gamma, Delta bn254.G2Affine
	IC                 []bn254.G1Affine
}

// Coefficient is one non-zero entry of the constraint matrices A or B as
// a snarkjs zkey lists them (section 4): Matrix 0 is A, 1 is B.
type Coefficient struct {
	Matrix     uint8
	Constraint uint32
	Signal     uint32
	Value      fr.Element
}

// ProvingKey is a Groth16 proving key in snarkjs' layout (zkey sections
// 2 to 9). NVars counts the witness including the constant 1 at index 0;
// the first NPublic+1 signals are the constant and the public signals.
type ProvingKey struct {
	VerifyingKey
	Beta1, Delta1  bn254.G1Affine
	NVars, NPublic int
	DomainSize     int
	Coefficients   []Coefficient
	A, B1          []bn254.G1Affine // NVars points each
	B2             []bn254.G2Affine // NVars points
	C              []bn254.G1Affine // NVars-NPublic-1 points (private signals)
	H              []bn254.G1Affine // DomainSize points
}

var (
	g1B fp.Element // 3, the G1 curve coefficient
	g2B bn254.E2   // 3/(9+u), the coefficient of the twist
)

func init() {
	g1B.SetUint64(3)
	var xi bn254.E2
	xi.A0.SetUint64(9)
	xi.A1.SetOne()
	xi.Inverse(&xi)
	g2B.MulByElement(&xi, &g1B)
}
