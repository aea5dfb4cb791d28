package groth16

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
)

// Sizes of arkworks' compressed encodings (ark-serialize, Compress::Yes).
const (
	G1CompressedSize    = fp.Bytes
	G2CompressedSize    = 2 * fp.Bytes
	ProofCompressedSize = 2*G1CompressedSize + G2CompressedSize
)

// Flag bits of arkworks' SWFlags, in the top bits of the last byte of a
// compressed point: bit 7 says y is the larger of y and -y, bit 6 says the
// point is at infinity. Both set is not an encoding.
const (
	flagLargest  = 0x80
	flagInfinity = 0x40
	flagMask     = flagLargest | flagInfinity
)

// ErrPoint is wrapped by every error of the point decoders: bad flags, a
// coordinate not below the base field modulus, x with no point on the
// curve, or a point outside the prime-order subgroup.
var ErrPoint = errors.New("groth16: invalid curve point")

// readFp reads a canonical little-endian base field element.
func readFp(b []byte) (fp.Element, error) {
	var z fp.Element
	var le [fp.Bytes]byte
	copy(le[:], b)
	z, err := fp.LittleEndian.Element(&le)
	if err != nil {
		return z, fmt.Errorf("%w: coordinate not below the field modulus", ErrPoint)
	}
	return z, nil
}

// DecodeG1 decodes a compressed G1 point as arkworks writes it: x in 32
// little-endian bytes with the flags in the top two bits of byte 31. It
// checks the curve equation (G1 of BN254 has cofactor 1).
func DecodeG1(b *[G1CompressedSize]byte) (bn254.G1Affine, error) {
	var p bn254.G1Affine
	flags := b[G1CompressedSize-1] & flagMask
	if flags == flagMask {
		return p, fmt.Errorf("%w: both flags set", ErrPoint)
	}
	raw := *b
	raw[G1CompressedSize-1] &^= flagMask
	x, err := readFp(raw[:])
	if err != nil {
		return p, err
	}
	if flags == flagInfinity {
		return p, nil // (0, 0) is gnark's point at infinity
	}
	var y fp.Element
	y.Square(&x).Mul(&y, &x).Add(&y, &g1B)
	if y.Sqrt(&y) == nil {
		return p, fmt.Errorf("%w: x is not on G1", ErrPoint)
	}
	if y.LexicographicallyLargest() != (flags == flagLargest) {
		y.Neg(&y)
	}
	p.X, p.Y = x, y
	return p, nil
}

// DecodeG2 decodes a compressed G2 point as arkworks writes it: x.c0 and
// x.c1 in 32 little-endian bytes each, the flags in the top two bits of
// byte 63, y chosen by arkworks' order of Fp2 (c1 first, then c0). It
// checks the twist equation and membership in the r-torsion subgroup.
func DecodeG2(b *[G2CompressedSize]byte) (bn254.G2Affine, error) {
	var p bn254.G2Affine
	flags := b[G2CompressedSize-1] & flagMask
	if flags == flagMask {
		return p, fmt.Errorf("%w: both flags set", ErrPoint)
	}
	raw := *b
	raw[G2CompressedSize-1] &^= flagMask
	x0, err := readFp(raw[:fp.Bytes])
	if err != nil {
		return p, err
	}
	x1, err := readFp(raw[fp.Bytes:])
	if err != nil {
		return p, err
	}
	if flags == flagInfinity {
		return p, nil
	}
	p.X.A0, p.X.A1 = x0, x1
	var y bn254.E2
	y.Square(&p.X).Mul(&y, &p.X).Add(&y, &g2B)
	if y.Legendre() == -1 {
		return p, fmt.Errorf("%w: x is not on G2", ErrPoint)
	}
	y.Sqrt(&y)
	if y.LexicographicallyLargest() != (flags == flagLargest) {
		y.Neg(&y)
	}
	p.Y = y
	if !p.IsOnCurve() || !p.IsInSubGroup() {
		return p, fmt.Errorf("%w: not in the G2 subgroup", ErrPoint)
	}
	return p, nil
}

// EncodeG1 writes p compressed as arkworks does (the inverse of DecodeG1).
func EncodeG1(p *bn254.G1Affine) (b [G1CompressedSize]byte) {
	if p.IsInfinity() {
		b[G1CompressedSize-1] = flagInfinity
		return b
	}
	putFp(b[:], &p.X)
	if p.Y.LexicographicallyLargest() {
		b[G1CompressedSize-1] |= flagLargest
	}
	return b
}

// EncodeG2 writes p compressed as arkworks does (the inverse of DecodeG2).
func EncodeG2(p *bn254.G2Affine) (b [G2CompressedSize]byte) {
	if p.IsInfinity() {
		b[G2CompressedSize-1] = flagInfinity
		return b
	}
	putFp(b[:fp.Bytes], &p.X.A0)
	putFp(b[fp.Bytes:], &p.X.A1)
	if p.Y.LexicographicallyLargest() {
		b[G2CompressedSize-1] |= flagLargest
	}
	return b
}

func putFp(b []byte, z *fp.Element) {
	v := z.Bits() // regular (non-Montgomery) limbs
	for i, limb := range v {
		binary.LittleEndian.PutUint64(b[8*i:], limb)
	}
}

// DecodeProof decodes arkworks' compressed Groth16 proof: A (G1, 32 bytes)
// ‖ B (G2, 64 bytes) ‖ C (G1, 32 bytes), each point checked as DecodeG1
// and DecodeG2 do. Errors wrap ErrPoint and name the point.
func DecodeProof(b *[ProofCompressedSize]byte) (Proof, error) {
	var p Proof
	var err error
	if p.A, err = DecodeG1((*[G1CompressedSize]byte)(b[:G1CompressedSize])); err != nil {
		return p, fmt.Errorf("proof point A: %w", err)
	}
	if p.B, err = DecodeG2((*[G2CompressedSize]byte)(b[G1CompressedSize : G1CompressedSize+G2CompressedSize])); err != nil {
		return p, fmt.Errorf("proof point B: %w", err)
	}
	if p.C, err = DecodeG1((*[G1CompressedSize]byte)(b[G1CompressedSize+G2CompressedSize:])); err != nil {
		return p, fmt.Errorf("proof point C: %w", err)
	}
	return p, nil
}

// Encode writes p in arkworks' compressed form (the inverse of DecodeProof).
func (p *Proof) Encode() (b [ProofCompressedSize]byte) {
	a, bb, c := EncodeG1(&p.A), EncodeG2(&p.B), EncodeG1(&p.C)
	copy(b[:], a[:])
	copy(b[G1CompressedSize:], bb[:])
	copy(b[G1CompressedSize+G2CompressedSize:], c[:])
	return b
}
