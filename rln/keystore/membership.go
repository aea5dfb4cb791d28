package keystore

import (
	"encoding/json"
	"fmt"
)

// IdentityCredential is an RLN identity as nwaku's keystore holds it
// (waku_keystore/protocol_types.nim IdentityCredential): four BN254 field
// elements, each 32 bytes little-endian as zerokit serialises them. The
// secret hash is Poseidon(trapdoor, nullifier) and the commitment
// Poseidon(secret hash); this package stores them and does not check.
type IdentityCredential struct {
	// IDTrapdoor is the random identity trapdoor.
	IDTrapdoor [32]byte
	// IDNullifier is the random identity nullifier.
	IDNullifier [32]byte
	// IDSecretHash is the identity secret, the circuit's private input.
	IDSecretHash [32]byte
	// IDCommitment is the public commitment registered on chain.
	IDCommitment [32]byte
}

// MembershipContract names the contract a membership belongs to, as the
// strings nwaku files it with: ChainID in decimal ($chainId of the
// RPC's chain id) and Address as the operator gave
// --rln-relay-eth-contract-address.
type MembershipContract struct {
	// ChainID is the chain id in decimal, e.g. "59141".
	ChainID string
	// Address is the contract address, 0x and 40 hex digits.
	Address string
}

// Membership is one keystore credential (nwaku's KeystoreMembership): the
// contract, the leaf index in its tree, the identity and the user message
// limit (messages per epoch) it was registered with.
type Membership struct {
	// Contract is the membership contract.
	Contract MembershipContract
	// TreeIndex is the membership's leaf index.
	TreeIndex uint64
	// Identity is the RLN identity.
	Identity IdentityCredential
	// UserMessageLimit is the membership's rate limit, messages per epoch.
	UserMessageLimit uint64
}

// Key returns the key m is filed under (see the package function Key).
func (m Membership) Key() string {
	return Key(m.Contract.ChainID, m.Contract.Address, m.TreeIndex)
}

// membershipJSON is the plaintext of a credential, nwaku's
// `%KeystoreMembership` in its field order: byte sequences as JSON arrays
// of numbers.
type membershipJSON struct {
	MembershipContract *contractJSON `json:"membershipContract"`
	TreeIndex          *uint64       `json:"treeIndex"`
	IdentityCredential *identityJSON `json:"identityCredential"`
	UserMessageLimit   *uint64       `json:"userMessageLimit"`
}

type contractJSON struct {
	ChainID *string `json:"chainId"`
	Address *string `json:"address"`
}

type identityJSON struct {
	IDTrapdoor   *[]uint16 `json:"idTrapdoor"`
	IDNullifier  *[]uint16 `json:"idNullifier"`
	IDSecretHash *[]uint16 `json:"idSecretHash"`
	IDCommitment *[]uint16 `json:"idCommitment"`
}

// Encode returns m's plaintext as nwaku writes it (conversion_utils.nim
// encode): compact JSON,
//
//	{"membershipContract":{"chainId":"1337","address":"0x…"},"treeIndex":0,
//	 "identityCredential":{"idTrapdoor":[…32 numbers…],"idNullifier":[…],
//	 "idSecretHash":[…],"idCommitment":[…]},"userMessageLimit":100}
func (m Membership) Encode() ([]byte, error) {
	type identity struct {
		IDTrapdoor   [32]byte `json:"idTrapdoor"`
		IDNullifier  [32]byte `json:"idNullifier"`
		IDSecretHash [32]byte `json:"idSecretHash"`
		IDCommitment [32]byte `json:"idCommitment"`
	}
	type contract struct {
		ChainID string `json:"chainId"`
		Address string `json:"address"`
	}
	return marshal(struct {
		MembershipContract contract `json:"membershipContract"`
		TreeIndex          uint64   `json:"treeIndex"`
		IdentityCredential identity `json:"identityCredential"`
		UserMessageLimit   uint64   `json:"userMessageLimit"`
	}{
		contract{m.Contract.ChainID, m.Contract.Address},
		m.TreeIndex,
		identity(m.Identity),
		m.UserMessageLimit,
	})
}

// DecodeMembership parses a credential's plaintext (conversion_utils.nim
// decode). Like nwaku's, it needs every field; each identity value must be
// 32 numbers from 0 to 255. Errors wrap ErrMalformed. It does not keep
// plain.
func DecodeMembership(plain []byte) (Membership, error) {
	var j membershipJSON
	if err := json.Unmarshal(plain, &j); err != nil {
		return Membership{}, fmt.Errorf("%w: credential: %v", ErrMalformed, err)
	}
	c, id := j.MembershipContract, j.IdentityCredential
	switch {
	case c == nil || c.ChainID == nil || c.Address == nil:
		return Membership{}, fmt.Errorf("%w: credential has no membershipContract.chainId and address", ErrMalformed)
	case j.TreeIndex == nil:
		return Membership{}, fmt.Errorf("%w: credential has no treeIndex", ErrMalformed)
	case id == nil:
		return Membership{}, fmt.Errorf("%w: credential has no identityCredential", ErrMalformed)
	case j.UserMessageLimit == nil:
		return Membership{}, fmt.Errorf("%w: credential has no userMessageLimit (a keystore older than version 0.2?)", ErrMalformed)
	}
	m := Membership{
		Contract:         MembershipContract{ChainID: *c.ChainID, Address: *c.Address},
		TreeIndex:        *j.TreeIndex,
		UserMessageLimit: *j.UserMessageLimit,
	}
	for _, f := range []struct {
		name string
		in   *[]uint16
		out  *[32]byte
	}{
		{"idTrapdoor", id.IDTrapdoor, &m.Identity.IDTrapdoor},
		{"idNullifier", id.IDNullifier, &m.Identity.IDNullifier},
		{"idSecretHash", id.IDSecretHash, &m.Identity.IDSecretHash},
		{"idCommitment", id.IDCommitment, &m.Identity.IDCommitment},
	} {
		if f.in == nil || len(*f.in) != 32 {
			return Membership{}, fmt.Errorf("%w: credential %s is not 32 bytes", ErrMalformed, f.name)
		}
		for i, v := range *f.in {
			if v > 255 {
				return Membership{}, fmt.Errorf("%w: credential %s has %d, not a byte", ErrMalformed, f.name, v)
			}
			f.out[i] = byte(v)
		}
	}
	return m, nil
}
