package keystore

import (
	"bytes"
	"math/big"
	"os"
	"slices"
	"testing"

	"github.com/iden3/go-iden3-crypto/poseidon"
)

// The vector: testdata/nwaku-keystore.json, made by
// testdata/make_vector.mjs with nwaku v0.38.1's algorithm on Node.js's
// crypto (see testdata/README.md).
const (
	vectorPassword = "courier vector pässword"
	vectorAddress  = "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6"
	vectorChainID  = "59141"
)

var vectorIdentity = IdentityCredential{
	IDTrapdoor:   [32]byte{217, 134, 79, 97, 128, 248, 213, 6, 44, 252, 137, 165, 34, 200, 190, 168, 15, 46, 82, 198, 140, 189, 35, 60, 200, 77, 126, 242, 142, 4, 109, 17},
	IDNullifier:  [32]byte{45, 184, 222, 61, 10, 72, 14, 34, 123, 155, 220, 195, 49, 132, 219, 195, 204, 67, 138, 224, 53, 2, 134, 222, 61, 211, 192, 48, 184, 45, 198, 1},
	IDSecretHash: [32]byte{78, 236, 40, 254, 212, 71, 86, 113, 202, 146, 31, 21, 171, 167, 113, 187, 1, 254, 129, 100, 253, 236, 67, 156, 135, 67, 111, 191, 178, 247, 65, 48},
	IDCommitment: [32]byte{143, 123, 81, 48, 169, 238, 92, 254, 15, 143, 159, 199, 176, 171, 225, 167, 117, 174, 58, 158, 7, 227, 30, 27, 197, 60, 133, 218, 31, 98, 13, 45},
}

// TestNwakuKeystoreVector reads the vector: its two credentials are filed
// under nwaku's keys; with several credentials the query's key selects
// one, which decrypts (PBKDF2 with nwaku's 1,000,000 iterations: the one
// slow test of the package) to the expected membership, whose plaintext
// Encode reproduces byte for byte; and Marshal writes the file back
// unchanged.
func TestNwakuKeystoreVector(t *testing.T) {
	data, err := os.ReadFile("testdata/nwaku-keystore.json")
	if err != nil {
		t.Fatal(err)
	}
	k, err := Parse(data, RLN())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{Key(vectorChainID, vectorAddress, 7), Key(vectorChainID, vectorAddress, 1234)}
	if !slices.Equal(k.Keys(), want) {
		t.Fatalf("keys %q, want %q", k.Keys(), want)
	}
	if !bytes.Equal(k.Marshal(), data) {
		t.Fatalf("Marshal changed the file:\n%s\nwant\n%s", k.Marshal(), data)
	}

	index := uint64(1234)
	e, err := k.lookup(Query{ChainID: vectorChainID, Address: vectorAddress, TreeIndex: &index})
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseEntry(e.raw)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := s.open(vectorPassword)
	if err != nil {
		t.Fatal(err)
	}
	m, err := DecodeMembership(plain)
	if err != nil {
		t.Fatal(err)
	}
	wantM := Membership{
		Contract:         MembershipContract{ChainID: vectorChainID, Address: vectorAddress},
		TreeIndex:        1234,
		Identity:         vectorIdentity,
		UserMessageLimit: 100,
	}
	if m != wantM {
		t.Fatalf("membership %+v, want %+v", m, wantM)
	}
	enc, err := m.Encode()
	if err != nil || !bytes.Equal(enc, plain) {
		t.Fatalf("Encode = %s, %v; the vector's plaintext is %s", enc, err, plain)
	}

	// The identity is a real one: secret hash and commitment are the
	// circomlib Poseidon hashes zerokit's key generation computes.
	secret, _ := poseidon.Hash([]*big.Int{leInt(m.Identity.IDTrapdoor), leInt(m.Identity.IDNullifier)})
	commitment, _ := poseidon.Hash([]*big.Int{secret})
	if secret.Cmp(leInt(m.Identity.IDSecretHash)) != 0 || commitment.Cmp(leInt(m.Identity.IDCommitment)) != 0 {
		t.Fatal("identity values are not Poseidon-related")
	}
}

func leInt(b [32]byte) *big.Int {
	slices.Reverse(b[:])
	return new(big.Int).SetBytes(b[:])
}
