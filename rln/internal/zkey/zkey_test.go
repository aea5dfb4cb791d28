package zkey

import (
	"encoding/binary"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/rln/internal/groth16"
)

// tinyKey is a small key of the right shapes: nVars 4, nPublic 1, domain 4.
func tinyKey() *groth16.ProvingKey {
	_, _, g1, g2 := bn254.Generators()
	mul1 := func(k int64) bn254.G1Affine {
		var p bn254.G1Affine
		p.ScalarMultiplication(&g1, big.NewInt(k))
		return p
	}
	mul2 := func(k int64) bn254.G2Affine {
		var p bn254.G2Affine
		p.ScalarMultiplication(&g2, big.NewInt(k))
		return p
	}
	pk := &groth16.ProvingKey{NVars: 4, NPublic: 1, DomainSize: 4}
	pk.Alpha, pk.Beta1, pk.Delta1 = mul1(2), mul1(3), mul1(5)
	pk.Beta, pk.Gamma, pk.Delta = mul2(3), mul2(7), mul2(5)
	pk.IC = []bn254.G1Affine{mul1(11), mul1(13)}
	for i := range 4 {
		pk.A = append(pk.A, mul1(int64(20+i)))
		pk.B1 = append(pk.B1, mul1(int64(30+i)))
		pk.B2 = append(pk.B2, mul2(int64(40+i)))
		pk.H = append(pk.H, mul1(int64(50+i)))
	}
	pk.A[3] = bn254.G1Affine{} // infinity, as zkeys hold for unused signals
	pk.C = []bn254.G1Affine{mul1(60), mul1(61)}
	for i, c := range []struct {
		m      uint8
		c, sig uint32
		v      int64
	}{{0, 0, 1, 1}, {1, 0, 2, 3}, {0, 1, 3, -1}, {0, 2, 0, 1}} {
		pk.Coefficients = append(pk.Coefficients, groth16.Coefficient{Matrix: c.m, Constraint: c.c, Signal: c.sig})
		pk.Coefficients[i].Value.SetInt64(c.v)
	}
	return pk
}

func montBytes(b []byte, z *fp.Element) []byte {
	for _, l := range z { // gnark's limbs are the Montgomery form
		b = binary.LittleEndian.AppendUint64(b, l)
	}
	return b
}

func g1Bytes(b []byte, p *bn254.G1Affine) []byte { return montBytes(montBytes(b, &p.X), &p.Y) }

func g2Bytes(b []byte, p *bn254.G2Affine) []byte {
	for _, z := range []*fp.Element{&p.X.A0, &p.X.A1, &p.Y.A0, &p.Y.A1} {
		b = montBytes(b, z)
	}
	return b
}

func leBytes(n *big.Int) []byte {
	be := n.FillBytes(make([]byte, 32))
	for i, j := 0, 31; i < j; i, j = i+1, j-1 {
		be[i], be[j] = be[j], be[i]
	}
	return be
}

// encode writes pk in snarkjs' zkey format.
func encode(pk *groth16.ProvingKey) []byte {
	sec := func(out []byte, id uint32, body []byte) []byte {
		out = binary.LittleEndian.AppendUint32(out, id)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(body)))
		return append(out, body...)
	}
	out := append([]byte("zkey"), 1, 0, 0, 0, 10, 0, 0, 0)
	out = sec(out, 1, []byte{1, 0, 0, 0})
	h := binary.LittleEndian.AppendUint32(nil, 32)
	h = append(h, leBytes(fp.Modulus())...)
	h = binary.LittleEndian.AppendUint32(h, 32)
	h = append(h, leBytes(fr.Modulus())...)
	h = binary.LittleEndian.AppendUint32(h, uint32(pk.NVars))
	h = binary.LittleEndian.AppendUint32(h, uint32(pk.NPublic))
	h = binary.LittleEndian.AppendUint32(h, uint32(pk.DomainSize))
	h = g1Bytes(h, &pk.Alpha)
	h = g1Bytes(h, &pk.Beta1)
	h = g2Bytes(h, &pk.Beta)
	h = g2Bytes(h, &pk.Gamma)
	h = g1Bytes(h, &pk.Delta1)
	h = g2Bytes(h, &pk.Delta)
	out = sec(out, 2, h)
	g1s := func(ps []bn254.G1Affine) (b []byte) {
		for i := range ps {
			b = g1Bytes(b, &ps[i])
		}
		return b
	}
	out = sec(out, 3, g1s(pk.IC))
	c := binary.LittleEndian.AppendUint32(nil, uint32(len(pk.Coefficients)))
	for _, co := range pk.Coefficients {
		c = binary.LittleEndian.AppendUint32(c, uint32(co.Matrix))
		c = binary.LittleEndian.AppendUint32(c, co.Constraint)
		c = binary.LittleEndian.AppendUint32(c, co.Signal)
		// stored as value·R²: gnark's limbs of value·R
		var vr fr.Element
		vr.Mul(&co.Value, &rElem)
		for _, l := range vr {
			c = binary.LittleEndian.AppendUint64(c, l)
		}
	}
	out = sec(out, 4, c)
	out = sec(out, 5, g1s(pk.A))
	out = sec(out, 6, g1s(pk.B1))
	var b2 []byte
	for i := range pk.B2 {
		b2 = g2Bytes(b2, &pk.B2[i])
	}
	out = sec(out, 7, b2)
	out = sec(out, 8, g1s(pk.C))
	out = sec(out, 9, g1s(pk.H))
	out = sec(out, 10, nil)
	return out
}

// rElem is R = 2^256 mod r as a field element.
var rElem = func() fr.Element {
	var e fr.Element
	e.SetBigInt(new(big.Int).Lsh(big.NewInt(1), 256))
	return e
}()

func TestParseTiny(t *testing.T) {
	pk := tinyKey()
	got, err := Parse(encode(pk))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, pk) {
		t.Fatalf("parsed key differs:\n got %+v\nwant %+v", got, pk)
	}
}

func TestParseErrors(t *testing.T) {
	good := encode(tinyKey())
	at := func(off int, b ...byte) []byte {
		c := append([]byte(nil), good...)
		copy(c[off:], b)
		return c
	}
	// offsets: 12-byte file header, section 1 (12+4), section 2 header (12), then its body
	h2 := 12 + 16 + 12
	alpha := h2 + 4 + 32 + 4 + 32 + 12
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"magic", at(0, 'z', 'k', 'e', 'x')},
		{"truncated", good[:len(good)-100]},
		{"section overruns", at(12+4, 0xff, 0xff, 0xff)},
		{"protocol 2", at(12+12, 2)},
		{"other base field", at(h2+4, 0)},
		{"other scalar field", at(h2+4+32+4, 0)},
		{"nPublic not below nVars", at(h2+4+32+4+32+4, 9)},
		{"domain not a power of two", at(h2+4+32+4+32+8, 3)},
		{"alpha x above the modulus", at(alpha, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
		{"alpha off the curve", at(alpha, 1)},
		{"no section 9", good[:len(good)-12-4*64-12]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.b); !errors.Is(err, ErrFormat) {
				t.Fatalf("got %v, want ErrFormat", err)
			}
		})
	}
}

func TestParseRLN(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testcircuit.Dir(t), "rln_final.zkey"))
	if err != nil {
		t.Fatal(err)
	}
	pk, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	// zerokit's depth-20 circuit (see ../../../shared/specs/rln.md)
	if pk.NVars != 5844 || pk.NPublic != 5 || pk.DomainSize != 8192 || len(pk.IC) != 6 || len(pk.C) != 5844-6 {
		t.Fatalf("nVars %d nPublic %d domain %d IC %d C %d", pk.NVars, pk.NPublic, pk.DomainSize, len(pk.IC), len(pk.C))
	}
	if _, err := Parse(encode(pk)); err != nil {
		t.Fatalf("re-encoded: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(encode(tinyKey()))
	f.Add([]byte("zkey\x01\x00\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pk, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if len(pk.A) != pk.NVars || len(pk.H) != pk.DomainSize || len(pk.IC) != pk.NPublic+1 {
			t.Fatal("parsed key of inconsistent sizes")
		}
		if _, err := groth16.NewProver(pk); err != nil {
			t.Fatalf("parsed key rejected by the prover: %v", err)
		}
	})
}
