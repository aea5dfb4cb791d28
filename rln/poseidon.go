package rln

import (
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"github.com/iden3/go-iden3-crypto/poseidon"
)

// poseidonHash is circomlib's Poseidon over the BN254 scalar field for 1 to
// 16 inputs (go-iden3-crypto; zerokit's rln/src/hashers.rs poseidon_hash
// has the same round numbers and constants for the arities RLN uses, 1, 2
// and 3, which the package's tests check against zerokit's vectors).
func poseidonHash(in ...fr.Element) fr.Element {
	args := make([]*big.Int, len(in))
	for i := range in {
		args[i] = in[i].BigInt(new(big.Int))
	}
	h, err := poseidon.Hash(args)
	if err != nil {
		// only for an arity outside 1..16 or inputs not below r, which
		// fr.Element rules out
		panic("rln: poseidon: " + err.Error())
	}
	var out fr.Element
	out.SetBigInt(h)
	return out
}
