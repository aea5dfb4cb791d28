package witness

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// Calculate evaluates the graph for the named inputs, each exactly as long
// as the graph's signal of that name (see Inputs), and returns the witness:
// WitnessSize elements, the constant 1 first, in the R1CS's wire order.
// Every input of the graph must be given. Errors wrap ErrInput. The result
// is newly allocated; inputs are not kept.
func (g *Graph) Calculate(inputs map[string][]fr.Element) ([]fr.Element, error) {
	buf := make([]fr.Element, g.nInputs)
	buf[0].SetOne()
	for name, s := range g.inputs {
		v, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("%w: %q missing", ErrInput, name)
		}
		if len(v) != s.Len {
			return nil, fmt.Errorf("%w: %q has %d values, the circuit takes %d", ErrInput, name, len(v), s.Len)
		}
		copy(buf[s.Offset:], v)
	}
	for name := range inputs {
		if _, ok := g.inputs[name]; !ok {
			return nil, fmt.Errorf("%w: the circuit has no input %q", ErrInput, name)
		}
	}
	values := make([]fr.Element, len(g.nodes))
	for i, nd := range g.nodes {
		v := &values[i]
		switch nd.op {
		case opInput:
			*v = buf[nd.a]
			continue
		case opConstant:
			*v = g.constants[nd.a]
			continue
		}
		// operands are earlier nodes (checked by Parse)
		a, b := &values[nd.a], &values[nd.b]
		switch nd.op {
		case opMul:
			v.Mul(a, b)
		case opAdd:
			v.Add(a, b)
		case opSub:
			v.Sub(a, b)
		case opNeg:
			v.Neg(a)
		case opDiv:
			if !b.IsZero() { // circom-witnesscalc: x/0 is 0
				v.Div(a, b)
			}
		case opTernary:
			if a.IsZero() {
				*v = values[nd.c]
			} else {
				*v = *b
			}
		default:
			r, err := integerOp(nd.op, a, b)
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", i, err)
			}
			*v = r
		}
	}
	out := make([]fr.Element, len(g.witness))
	for i, w := range g.witness {
		out[i] = values[w]
	}
	return out, nil
}

var (
	modulus = fr.Modulus()
	halfMod = new(big.Int).Rsh(modulus, 1) // (r-1)/2: larger values are negative
)

// integerOp evaluates the operators that act on the canonical integer
// representatives, with circom-witnesscalc's semantics (graph.rs eval_fr):
// comparisons read values above (r-1)/2 as negative, shifts of 254 bits or
// more give 0, and integer division or modulo by 0 gives 0.
func integerOp(op opcode, a, b *fr.Element) (fr.Element, error) {
	var r fr.Element
	switch op {
	case opEq, opNeq:
		if a.Equal(b) == (op == opEq) {
			r.SetOne()
		}
		return r, nil
	case opLand, opLor:
		az, bz := a.IsZero(), b.IsZero()
		if (op == opLand && !az && !bz) || (op == opLor && (!az || !bz)) {
			r.SetOne()
		}
		return r, nil
	}
	x, y := a.Bits(), b.Bits()
	switch op {
	case opLt, opGt, opLeq, opGeq:
		c := signedCmp(a, b)
		if (op == opLt && c < 0) || (op == opGt && c > 0) || (op == opLeq && c <= 0) || (op == opGeq && c >= 0) {
			r.SetOne()
		}
		return r, nil
	case opShl, opShr:
		if b.IsZero() {
			return *a, nil
		}
		if !b.IsUint64() || b.Uint64() >= 254 {
			return r, nil
		}
		n := uint(b.Uint64())
		bi := new(big.Int)
		a.BigInt(bi)
		if op == opShr {
			bi.Rsh(bi, n)
		} else {
			bi.Lsh(bi, n)
			if bi.BitLen() > 256 || bi.Cmp(modulus) >= 0 {
				// zerokit panics here; the value is not a field element
				return r, fmt.Errorf("%w: left shift leaves the field", ErrInput)
			}
		}
		r.SetBigInt(bi)
		return r, nil
	case opBand, opBor, opBxor:
		var z [4]uint64
		for i := range z {
			switch op {
			case opBand:
				z[i] = x[i] & y[i]
			case opBor:
				z[i] = x[i] | y[i]
			default:
				z[i] = x[i] ^ y[i]
			}
		}
		return fromLimbs(z), nil
	case opIdiv, opMod:
		if b.IsZero() {
			return r, nil
		}
		ab, bb := new(big.Int), new(big.Int)
		a.BigInt(ab)
		b.BigInt(bb)
		if op == opIdiv {
			ab.Quo(ab, bb)
		} else {
			ab.Rem(ab, bb)
		}
		r.SetBigInt(ab)
		return r, nil
	}
	return r, fmt.Errorf("%w: operator %d", ErrFormat, op)
}

// signedCmp compares a and b as circom does: values above (r-1)/2 are
// negative.
func signedCmp(a, b *fr.Element) int {
	ab, bb := new(big.Int), new(big.Int)
	a.BigInt(ab)
	b.BigInt(bb)
	an, bn := ab.Cmp(halfMod) > 0, bb.Cmp(halfMod) > 0
	switch {
	case an && !bn:
		return -1
	case !an && bn:
		return 1
	}
	return ab.Cmp(bb)
}

// fromLimbs reduces a 256-bit little-endian limb value below 2^254 (the
// result of a bitwise operator on two field elements) into the field with
// one subtraction, as circom-witnesscalc does.
func fromLimbs(z [4]uint64) fr.Element {
	var borrow uint64
	var d [4]uint64
	for i := range d {
		d[i], borrow = bits.Sub64(z[i], modLimbs[i], borrow)
	}
	if borrow == 0 {
		z = d
	}
	var le [fr.Bytes]byte
	for i, l := range z {
		binary.LittleEndian.PutUint64(le[8*i:], l)
	}
	r, _ := fr.LittleEndian.Element(&le) // below r by construction
	return r
}

var modLimbs = func() (l [4]uint64) {
	be := modulus.FillBytes(make([]byte, fr.Bytes))
	for i := range l {
		l[i] = binary.BigEndian.Uint64(be[fr.Bytes-8*(i+1):])
	}
	return l
}()
