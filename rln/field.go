package rln

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// FieldSize is the length in bytes of a field element on the wire.
const FieldSize = 32

// Field is an element of the BN254 scalar field (the field r of the
// circuit) in RLN's wire form: 32 bytes, little-endian (zerokit
// rln/src/utils.rs fr_to_bytes_le). It is canonical when the integer is
// below r. A Field is a value: it may be copied, compared with == and used
// as a map key.
//
// zerokit reads any 32 bytes and reduces them mod r (bytes_le_to_fr), so
// up to five byte strings stand for one element; this package accepts only
// the canonical one and reports the others as ErrNonCanonical.
type Field [FieldSize]byte

// ErrNonCanonical is wrapped by the errors about encodings that zerokit and
// nwaku accept but normalise (a field element not below r, a proof field
// of the wrong length, missing, or sent with a non-bytes wire type): they
// may stand for a valid proof, just not in its one canonical form, and a
// nullifier plus r slips past nwaku's duplicate check. An honest nwaku
// forwards such a message when the normalised proof verifies, so a relay
// drops it without penalising the forwarder (gossipsub Ignore, not
// Reject) and without spending a verification on it.
var ErrNonCanonical = errors.New("rln: non-canonical encoding")

// FieldFromUint64 returns v as a field element (little-endian, zero padded),
// as nwaku's uint64ToField (conversion_utils.nim) does.
func FieldFromUint64(v uint64) Field {
	var f Field
	binary.LittleEndian.PutUint64(f[:], v)
	return f
}

// FieldFromBigEndian converts a 32-byte big-endian integer (a uint256 as
// the membership contract returns it) to a Field, with ErrNonCanonical when
// it is not below r. nwaku reverses the bytes of getMerkleProof's results
// the same way (group_manager/on_chain/group_manager.nim, generateProof).
func FieldFromBigEndian(be [FieldSize]byte) (Field, error) {
	var f Field
	for i := range be {
		f[i] = be[FieldSize-1-i]
	}
	if !f.IsCanonical() {
		return f, fmt.Errorf("%w: %x is not below the field modulus", ErrNonCanonical, be)
	}
	return f, nil
}

// BigEndian returns f as a 32-byte big-endian integer (a contract's
// uint256).
func (f Field) BigEndian() [FieldSize]byte {
	var be [FieldSize]byte
	for i := range f {
		be[i] = f[FieldSize-1-i]
	}
	return be
}

// IsCanonical reports whether f, read little-endian, is below r.
func (f Field) IsCanonical() bool {
	_, err := fr.LittleEndian.Element((*[fr.Bytes]byte)(&f))
	return err == nil
}

// Big returns f as an integer (not reduced).
func (f Field) Big() *big.Int {
	be := f.BigEndian()
	return new(big.Int).SetBytes(be[:])
}

// String returns f as 64 lowercase hex digits, most significant first, as
// nwaku logs field elements (inHex, conversion_utils.nim).
func (f Field) String() string {
	be := f.BigEndian()
	return hex.EncodeToString(be[:])
}

// element returns f as a field element; ok is false when f is not
// canonical.
func (f *Field) element() (e fr.Element, ok bool) {
	e, err := fr.LittleEndian.Element((*[fr.Bytes]byte)(f))
	return e, err == nil
}

// fieldOf returns e in wire form.
func fieldOf(e *fr.Element) Field {
	var f Field
	fr.LittleEndian.PutElement((*[fr.Bytes]byte)(&f), *e)
	return f
}
