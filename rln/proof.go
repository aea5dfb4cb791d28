package rln

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
)

// ProofSize is the length of the zkSNARK in a RateLimitProof: a Groth16
// proof in arkworks' compressed form, A (G1, 32 bytes) ‖ B (G2, 64 bytes) ‖
// C (G1, 32 bytes), each point's flags in the top two bits of its last
// byte (nwaku ZKSNARK, protocol_types.nim).
const ProofSize = 128

// EncodedProofSize is the length of a RateLimitProof's encoding: seven
// bytes fields, 3+128 bytes for the proof (tag and a two-byte length) and
// 2+32 for each of the others: 335 bytes.
const EncodedProofSize = 3 + ProofSize + 6*(2+FieldSize)

// Field numbers of RateLimitProof (nwaku protocol_types.nim).
const (
	fieldProof         protowire.Number = 1
	fieldMerkleRoot    protowire.Number = 2
	fieldEpoch         protowire.Number = 3
	fieldShareX        protowire.Number = 4
	fieldShareY        protowire.Number = 5
	fieldNullifier     protowire.Number = 6
	fieldRLNIdentifier protowire.Number = 7
)

// ErrMalformed is wrapped by DecodeRateLimitProof's errors for bytes that
// are not a protobuf message (truncated, a bad varint or tag, a group):
// nwaku fails RateLimitProof.init on them and Rejects the message.
var ErrMalformed = errors.New("rln: malformed RateLimitProof")

// RateLimitProof is 17/WAKU2-RLN-RELAY's proof, WakuMessage field 21 (nwaku
// RateLimitProof, protocol_types.nim): the zkSNARK and its public values.
// Field elements are canonical little-endian (see Field). The external
// nullifier is not sent: it is ExternalNullifier(Epoch, RLNIdentifier).
// A RateLimitProof is a value of fixed size: it holds no reference to the
// bytes it was decoded from and may be copied and compared with ==. Once a
// relay has verified one and attached it to a message's envelope, it is
// immutable.
type RateLimitProof struct {
	Proof         [ProofSize]byte // field 1
	MerkleRoot    Field           // field 2: the tree root the proof is for
	Epoch         Epoch           // field 3
	ShareX        Field           // field 4: x, the signal's hash (Signal.Hash)
	ShareY        Field           // field 5: y = secret + x·a1
	Nullifier     Field           // field 6: Poseidon(a1), one per message id and epoch
	RLNIdentifier RLNIdentifier   // field 7
}

// DecodeRateLimitProof parses a RateLimitProof (message.Message's
// RateLimitProof bytes). It reads b in place and copies the 352 bytes of
// the fields into the result, keeping no reference to b.
//
// The canonical encoding has every field present with bytes wire type and
// its exact length (128 or 32 bytes), and the root, shares and nullifier
// below r. As protobuf does and nwaku does, unknown fields are skipped and
// a repeated field takes its last value.
//
// Errors wrap ErrMalformed, with a nil proof, for bytes nwaku cannot parse
// either: it Rejects them. Errors wrap ErrNonCanonical for an encoding
// nwaku parses but normalises, and then the proof returned is nwaku's
// reading of it (RateLimitProof.init, protocol_types.nim; zerokit's
// bytes_le_to_fr): a missing field is zero, a field of another length is
// zero padded or cut, a known field with another wire type is skipped,
// and ShareX, ShareY and Nullifier are reduced mod r (the root and epoch,
// which nwaku compares byte for byte, are kept as sent). A relay checks
// that proof as it checks any other; when it passes, nwaku would have
// relayed the message, so the relay drops it with Ignore rather than
// Reject. Each error names the first such field.
func DecodeRateLimitProof(b []byte) (*RateLimitProof, error) {
	p := new(RateLimitProof)
	var seen, bad uint8 // bit n: field n+1 read with the right length / wrong
	r := protowalk.NewReader(b)
	for r.Next() {
		num, typ := r.Num(), r.Type()
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return nil, fmt.Errorf("%w: field %d has a group wire type", ErrMalformed, num)
		}
		known := num >= fieldProof && num <= fieldRLNIdentifier
		if !known || typ != protowire.BytesType {
			if known {
				bad |= 1 << (num - 1)
			}
			continue // skipped; a value that does not parse stops the next Next
		}
		v := r.Bytes()
		if v == nil {
			break // truncated: r.Err says where
		}
		dst := p.field(num)
		bit := uint8(1) << (num - 1)
		clear(dst)
		copy(dst, v) // nwaku's copyFrom: zero padded or cut
		if len(v) == len(dst) {
			seen |= bit
		} else {
			bad |= bit
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var err error
	for num := fieldProof; num <= fieldRLNIdentifier && err == nil; num++ {
		bit := uint8(1) << (num - 1)
		switch {
		case bad&bit != 0:
			err = fmt.Errorf("%w: field %d (%s) is not one of %d bytes with wire type bytes", ErrNonCanonical, num, fieldName(num), len(p.field(num)))
		case seen&bit == 0:
			err = fmt.Errorf("%w: field %d (%s) is missing", ErrNonCanonical, num, fieldName(num))
		}
	}
	if err == nil && !p.MerkleRoot.IsCanonical() {
		err = fmt.Errorf("%w: field %d (%s) is not below the field modulus", ErrNonCanonical, fieldMerkleRoot, fieldName(fieldMerkleRoot))
	}
	for _, f := range []struct {
		num protowire.Number
		v   *Field
	}{{fieldShareX, &p.ShareX}, {fieldShareY, &p.ShareY}, {fieldNullifier, &p.Nullifier}} {
		if !f.v.IsCanonical() {
			if err == nil {
				err = fmt.Errorf("%w: field %d (%s) is not below the field modulus", ErrNonCanonical, f.num, fieldName(f.num))
			}
			*f.v = reduceDigest((*[32]byte)(f.v))
		}
	}
	return p, err
}

// field returns the storage of field num (1 to 7).
func (p *RateLimitProof) field(num protowire.Number) []byte {
	switch num {
	case fieldProof:
		return p.Proof[:]
	case fieldMerkleRoot:
		return p.MerkleRoot[:]
	case fieldEpoch:
		return p.Epoch[:]
	case fieldShareX:
		return p.ShareX[:]
	case fieldShareY:
		return p.ShareY[:]
	case fieldNullifier:
		return p.Nullifier[:]
	}
	return p.RLNIdentifier[:]
}

func fieldName(num protowire.Number) string {
	return [...]string{"proof", "merkle_root", "epoch", "share_x", "share_y", "nullifier", "rln_identifier"}[num-1]
}

// Append appends p's encoding to dst and returns the extended slice: the
// seven fields in order, each written even when zero, as nwaku's encode
// (protocol_types.nim) writes them; EncodedProofSize bytes.
func (p *RateLimitProof) Append(dst []byte) []byte {
	for num := fieldProof; num <= fieldRLNIdentifier; num++ {
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		dst = protowire.AppendBytes(dst, p.field(num))
	}
	return dst
}

// Marshal returns p's encoding in a new slice that the caller owns (for
// message.Message's RateLimitProof).
func (p *RateLimitProof) Marshal() []byte {
	return p.Append(make([]byte, 0, EncodedProofSize))
}
