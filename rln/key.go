package rln

import (
	"fmt"
	"math/big"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"

	"github.com/couriernet/courier/rln/internal/groth16"
)

// keyText is a verifying key with its coordinates as decimal strings, the
// form of snarkjs' verification_key.json: G1 points as [x, y], G2 points as
// [x.c0, x.c1, y.c0, y.c1].
type keyText struct {
	Alpha              [2]string
	Beta, Gamma, Delta [4]string
	IC                 [][2]string
}

// verifyingKey parses the compiled-in key (vk.go), checking every point.
func verifyingKey() (*groth16.VerifyingKey, error) {
	return parseKeyText(&rlnKey)
}

func parseKeyText(t *keyText) (*groth16.VerifyingKey, error) {
	vk := new(groth16.VerifyingKey)
	var err error
	if vk.Alpha, err = g1Text(t.Alpha); err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst *bn254.G2Affine
		src [4]string
	}{{&vk.Beta, t.Beta}, {&vk.Gamma, t.Gamma}, {&vk.Delta, t.Delta}} {
		if *p.dst, err = g2Text(p.src); err != nil {
			return nil, err
		}
	}
	vk.IC = make([]bn254.G1Affine, len(t.IC))
	for i, s := range t.IC {
		if vk.IC[i], err = g1Text(s); err != nil {
			return nil, err
		}
	}
	return vk, nil
}

func fpText(s string) (fp.Element, error) {
	var z fp.Element
	b, ok := new(big.Int).SetString(s, 10)
	if !ok || b.Sign() < 0 || b.Cmp(fp.Modulus()) >= 0 {
		return z, fmt.Errorf("rln: verifying key: bad coordinate %q", s)
	}
	z.SetBigInt(b)
	return z, nil
}

func g1Text(s [2]string) (p bn254.G1Affine, err error) {
	if p.X, err = fpText(s[0]); err != nil {
		return p, err
	}
	if p.Y, err = fpText(s[1]); err != nil {
		return p, err
	}
	if !p.IsOnCurve() || p.IsInfinity() {
		return p, fmt.Errorf("rln: verifying key: G1 point not on the curve")
	}
	return p, nil
}

func g2Text(s [4]string) (p bn254.G2Affine, err error) {
	for i, z := range []*fp.Element{&p.X.A0, &p.X.A1, &p.Y.A0, &p.Y.A1} {
		if *z, err = fpText(s[i]); err != nil {
			return p, err
		}
	}
	if !p.IsInSubGroup() || p.IsInfinity() {
		return p, fmt.Errorf("rln: verifying key: G2 point not in the subgroup")
	}
	return p, nil
}

// keyToText is the inverse of parseKeyText.
func keyToText(vk *groth16.VerifyingKey) keyText {
	g1 := func(p *bn254.G1Affine) [2]string { return [2]string{p.X.String(), p.Y.String()} }
	g2 := func(p *bn254.G2Affine) [4]string {
		return [4]string{p.X.A0.String(), p.X.A1.String(), p.Y.A0.String(), p.Y.A1.String()}
	}
	t := keyText{Alpha: g1(&vk.Alpha), Beta: g2(&vk.Beta), Gamma: g2(&vk.Gamma), Delta: g2(&vk.Delta)}
	for i := range vk.IC {
		t.IC = append(t.IC, g1(&vk.IC[i]))
	}
	return t
}
