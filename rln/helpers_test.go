package rln

import (
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// poseidonFields hashes canonical fields with the package's Poseidon.
func poseidonFields(t testing.TB, in ...Field) Field {
	t.Helper()
	es := make([]fr.Element, len(in))
	for i := range in {
		e, ok := in[i].element()
		if !ok {
			t.Fatalf("poseidon input %d not canonical", i)
		}
		es[i] = e
	}
	h := poseidonHash(es...)
	return fieldOf(&h)
}

// shares computes a proof's y and nullifier from the secret, the external
// nullifier, x and the message id (the circuit's a1 = Poseidon(secret,
// external nullifier, message id), y = secret + x·a1, nullifier =
// Poseidon(a1)), independently of the circuit.
func shares(t testing.TB, secret, ext, x Field, messageID uint64) (y, nullifier Field) {
	t.Helper()
	a1 := poseidonFields(t, secret, ext, FieldFromUint64(messageID))
	s, _ := secret.element()
	xe, _ := x.element()
	a, _ := a1.element()
	var ye fr.Element
	ye.Mul(&xe, &a).Add(&ye, &s)
	return fieldOf(&ye), poseidonFields(t, a1)
}

// signalBytes is nwaku's toRLNSignal as one slice.
func signalBytes(m Signal) []byte {
	b := append([]byte(nil), m.Payload...)
	b = append(b, m.ContentTopic...)
	return binary.LittleEndian.AppendUint64(b, uint64(m.Timestamp))
}

// zeroPath returns the path of a leaf in an otherwise empty tree: the
// siblings are the roots of empty subtrees.
func zeroPath(t testing.TB, index uint64) MerklePath {
	p := MerklePath{Index: index}
	var z Field
	for i := range p.Siblings {
		p.Siblings[i] = z
		z = poseidonFields(t, z, z)
	}
	return p
}

func frModulus() *big.Int { return fr.Modulus() }

func bigFromString(s string) (*big.Int, bool) { return new(big.Int).SetString(s, 10) }

// wakuID is DefaultRLNIdentifier(), addressable for slicing.
var wakuID = DefaultRLNIdentifier()
