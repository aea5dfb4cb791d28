// Package zkey reads a Groth16 key in snarkjs' zkey format (the "zkey"
// binary file of snarkjs src/zkey_utils.js, as ark-circom and zerokit v0.8.0
// rln/src/circuit/zkey.rs read it) into a groth16.ProvingKey.
//
// Layout: magic "zkey", version (u32), section count (u32), then sections
// of (id u32, size u64, bytes). Section 1 names the protocol (1 = Groth16);
// 2 is the header (field sizes and moduli, nVars, nPublic, domain size, and
// alpha1, beta1, beta2, gamma2, delta1, delta2); 3 the IC points; 4 the
// coefficients of A and B; 5, 6, 7 the A, B1 and B2 queries; 8 the C query of
// the private signals; 9 the H query. Integers are little-endian; field
// elements are 32-byte little-endian Montgomery forms (x·2^256 mod p), a
// point is x ‖ y (G2: x.c0 ‖ x.c1 ‖ y.c0 ‖ y.c1) and (0, 0) is infinity;
// coefficients are stored as c·2^512 mod r.
package zkey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/rln/internal/groth16"
)

// ErrFormat is wrapped by every error of Parse.
var ErrFormat = errors.New("zkey: malformed file")

const (
	secHeader       = 1
	secGroth16      = 2
	secIC           = 3
	secCoefficients = 4
	secA            = 5
	secB1           = 6
	secB2           = 7
	secC            = 8
	secH            = 9

	protocolGroth16 = 1
	fieldSize       = 32
	g1Size          = 2 * fieldSize
	g2Size          = 4 * fieldSize
	coefSize        = 12 + fieldSize

	// maxSignals bounds the counts a header may announce, so that a corrupt
	// file cannot make Parse allocate without limit.
	maxSignals = 1 << 24
)

// Parse reads a Groth16 zkey for BN254. It checks the field moduli, that
// every count fits the section it reads, that every coordinate is below
// the base field modulus and every point is on its curve; the points of
// the verifying key are also checked for subgroup membership. The result
// does not alias data.
func Parse(data []byte) (*groth16.ProvingKey, error) {
	secs, err := sections(data)
	if err != nil {
		return nil, err
	}
	h, err := secs.get(secHeader, 4)
	if err != nil {
		return nil, err
	}
	if p := binary.LittleEndian.Uint32(h); p != protocolGroth16 {
		return nil, fmt.Errorf("%w: protocol %d, want Groth16 (1)", ErrFormat, p)
	}
	pk := new(groth16.ProvingKey)
	if err := readHeader(secs, pk); err != nil {
		return nil, err
	}
	nPriv := pk.NVars - pk.NPublic - 1
	if pk.VerifyingKey.IC, err = g1Section(secs, secIC, pk.NPublic+1, true); err != nil {
		return nil, err
	}
	if pk.Coefficients, err = coefficients(secs, pk); err != nil {
		return nil, err
	}
	if pk.A, err = g1Section(secs, secA, pk.NVars, false); err != nil {
		return nil, err
	}
	if pk.B1, err = g1Section(secs, secB1, pk.NVars, false); err != nil {
		return nil, err
	}
	if pk.B2, err = g2Section(secs, secB2, pk.NVars); err != nil {
		return nil, err
	}
	if pk.C, err = g1Section(secs, secC, nPriv, false); err != nil {
		return nil, err
	}
	if pk.H, err = g1Section(secs, secH, pk.DomainSize, false); err != nil {
		return nil, err
	}
	return pk, nil
}

type sectionMap map[uint32][]byte

func sections(data []byte) (sectionMap, error) {
	if len(data) < 12 || string(data[:4]) != "zkey" {
		return nil, fmt.Errorf("%w: no zkey magic", ErrFormat)
	}
	n := binary.LittleEndian.Uint32(data[8:])
	secs := make(sectionMap)
	off := 12
	for i := uint32(0); i < n; i++ {
		if len(data)-off < 12 {
			return nil, fmt.Errorf("%w: section %d header truncated at offset %d", ErrFormat, i, off)
		}
		id := binary.LittleEndian.Uint32(data[off:])
		size := binary.LittleEndian.Uint64(data[off+4:])
		off += 12
		if size > uint64(len(data)-off) {
			return nil, fmt.Errorf("%w: section %d (id %d) of %d bytes overruns the file", ErrFormat, i, id, size)
		}
		if _, dup := secs[id]; !dup { // the first of a repeated id, as ark-circom reads
			secs[id] = data[off : off+int(size)]
		}
		off += int(size)
	}
	return secs, nil
}

// get returns section id, which must hold at least min bytes.
func (s sectionMap) get(id uint32, min int) ([]byte, error) {
	b, ok := s[id]
	if !ok {
		return nil, fmt.Errorf("%w: section %d missing", ErrFormat, id)
	}
	if len(b) < min {
		return nil, fmt.Errorf("%w: section %d has %d bytes, needs %d", ErrFormat, id, len(b), min)
	}
	return b, nil
}

func readHeader(secs sectionMap, pk *groth16.ProvingKey) error {
	const fixed = 4 + fieldSize + 4 + fieldSize + 12
	h, err := secs.get(secGroth16, fixed+3*g1Size+3*g2Size)
	if err != nil {
		return err
	}
	if n8q := binary.LittleEndian.Uint32(h); n8q != fieldSize || !isModulus(h[4:4+fieldSize], fp.Modulus().Bytes()) {
		return fmt.Errorf("%w: base field is not BN254's", ErrFormat)
	}
	h = h[4+fieldSize:]
	if n8r := binary.LittleEndian.Uint32(h); n8r != fieldSize || !isModulus(h[4:4+fieldSize], fr.Modulus().Bytes()) {
		return fmt.Errorf("%w: scalar field is not BN254's", ErrFormat)
	}
	h = h[4+fieldSize:]
	nVars, nPublic, domain := binary.LittleEndian.Uint32(h), binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
	if nVars > maxSignals || domain > maxSignals || nPublic+1 > nVars || domain == 0 || domain&(domain-1) != 0 {
		return fmt.Errorf("%w: header counts nVars %d, nPublic %d, domain %d", ErrFormat, nVars, nPublic, domain)
	}
	pk.NVars, pk.NPublic, pk.DomainSize = int(nVars), int(nPublic), int(domain)
	h = h[12:]
	vk := &pk.VerifyingKey
	for _, f := range []func() error{
		func() (err error) { vk.Alpha, err = g1(&h, true); return },
		func() (err error) { pk.Beta1, err = g1(&h, true); return },
		func() (err error) { vk.Beta, err = g2(&h, true); return },
		func() (err error) { vk.Gamma, err = g2(&h, true); return },
		func() (err error) { pk.Delta1, err = g1(&h, true); return },
		func() (err error) { vk.Delta, err = g2(&h, true); return },
	} {
		if err := f(); err != nil {
			return fmt.Errorf("header key point: %w", err)
		}
	}
	return nil
}

// isModulus reports whether le (little-endian) is the modulus given
// big-endian.
func isModulus(le, be []byte) bool {
	if len(be) != len(le) {
		return false
	}
	for i := range le {
		if le[i] != be[len(be)-1-i] {
			return false
		}
	}
	return true
}

// mont reads a 32-byte Montgomery form as gnark's internal limbs (gnark
// uses the same R = 2^256), rejecting values not below the modulus.
func mont(b []byte) (fp.Element, error) {
	var z fp.Element
	for i := range z {
		z[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	if !lessThan(z, fpModulus) {
		return z, fmt.Errorf("%w: coordinate not below the base field modulus", ErrFormat)
	}
	return z, nil
}

var (
	fpModulus = limbs(fp.Modulus())
	frModulus = limbs(fr.Modulus())
)

func limbs(m *big.Int) (l [4]uint64) {
	b := m.Bytes() // big-endian, 32 bytes for both BN254 moduli
	for i := range l {
		l[i] = binary.BigEndian.Uint64(b[len(b)-8*(i+1):])
	}
	return l
}

func lessThan(z, m [4]uint64) bool {
	for i := 3; i >= 0; i-- {
		if z[i] != m[i] {
			return z[i] < m[i]
		}
	}
	return false
}

// fromMont divides a scalar given as gnark limbs by R once more.
func fromMont(x fr.Element) fr.Element {
	return fr.Element(x.Bits())
}

func g1(b *[]byte, subgroup bool) (bn254.G1Affine, error) {
	var p bn254.G1Affine
	var err error
	if p.X, err = mont((*b)[:fieldSize]); err != nil {
		return p, err
	}
	if p.Y, err = mont((*b)[fieldSize:g1Size]); err != nil {
		return p, err
	}
	*b = (*b)[g1Size:]
	if !p.IsOnCurve() || (subgroup && !p.IsInSubGroup()) {
		return p, fmt.Errorf("%w: G1 point not on the curve", ErrFormat)
	}
	return p, nil
}

func g2(b *[]byte, subgroup bool) (bn254.G2Affine, error) {
	var p bn254.G2Affine
	var err error
	for i, z := range []*fp.Element{&p.X.A0, &p.X.A1, &p.Y.A0, &p.Y.A1} {
		if *z, err = mont((*b)[i*fieldSize : (i+1)*fieldSize]); err != nil {
			return p, err
		}
	}
	*b = (*b)[g2Size:]
	if !p.IsOnCurve() || (subgroup && !p.IsInSubGroup()) {
		return p, fmt.Errorf("%w: G2 point not on the twist or not in the subgroup", ErrFormat)
	}
	return p, nil
}

func g1Section(secs sectionMap, id uint32, n int, subgroup bool) ([]bn254.G1Affine, error) {
	b, err := secs.get(id, n*g1Size)
	if err != nil {
		return nil, err
	}
	out := make([]bn254.G1Affine, n)
	for i := range out {
		if out[i], err = g1(&b, subgroup); err != nil {
			return nil, fmt.Errorf("section %d point %d: %w", id, i, err)
		}
	}
	return out, nil
}

func g2Section(secs sectionMap, id uint32, n int) ([]bn254.G2Affine, error) {
	b, err := secs.get(id, n*g2Size)
	if err != nil {
		return nil, err
	}
	out := make([]bn254.G2Affine, n)
	for i := range out {
		if out[i], err = g2(&b, false); err != nil {
			return nil, fmt.Errorf("section %d point %d: %w", id, i, err)
		}
	}
	return out, nil
}

func coefficients(secs sectionMap, pk *groth16.ProvingKey) ([]groth16.Coefficient, error) {
	b, err := secs.get(secCoefficients, 4)
	if err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n)*coefSize > uint64(len(b)) {
		return nil, fmt.Errorf("%w: %d coefficients overrun section 4", ErrFormat, n)
	}
	out := make([]groth16.Coefficient, n)
	for i := range out {
		c := &out[i]
		m, con, sig := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
		if m > 1 || con >= uint32(pk.DomainSize) || sig >= uint32(pk.NVars) {
			return nil, fmt.Errorf("%w: coefficient %d (matrix %d, constraint %d, signal %d) out of range", ErrFormat, i, m, con, sig)
		}
		c.Matrix, c.Constraint, c.Signal = uint8(m), con, sig
		for j := range c.Value {
			c.Value[j] = binary.LittleEndian.Uint64(b[12+8*j:])
		}
		if !lessThan(c.Value, frModulus) {
			return nil, fmt.Errorf("%w: coefficient %d not below the scalar field modulus", ErrFormat, i)
		}
		// stored as c·R² and read as gnark's limbs (c·R); one more
		// division by R gives c.
		c.Value = fromMont(c.Value)
		b = b[coefSize:]
	}
	return out, nil
}
