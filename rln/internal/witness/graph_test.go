package witness

import (
	"encoding/binary"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/testcircuit"
)

// graphWriter builds a witness graph file as circom-witnesscalc writes it.
type graphWriter struct {
	nodes   [][]byte
	witness []uint32
	inputs  map[string]Signal
}

func msg(fields ...func([]byte) []byte) []byte {
	var b []byte
	for _, f := range fields {
		b = f(b)
	}
	return b
}

func varint(num protowire.Number, v uint64) func([]byte) []byte {
	return func(b []byte) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
	}
}

func sub(num protowire.Number, v []byte) func([]byte) []byte {
	return func(b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
}

func (g *graphWriter) input(i uint32) uint32 {
	g.nodes = append(g.nodes, msg(sub(1, msg(varint(1, uint64(i))))))
	return uint32(len(g.nodes) - 1)
}

func (g *graphWriter) constant(v *big.Int) uint32 {
	le := v.Bytes()
	for i, j := 0, len(le)-1; i < j; i, j = i+1, j-1 {
		le[i], le[j] = le[j], le[i]
	}
	g.nodes = append(g.nodes, msg(sub(2, msg(sub(1, msg(sub(1, le)))))))
	return uint32(len(g.nodes) - 1)
}

// op adds an operator node: kind 3 (unary), 4 (binary) or 5 (ternary).
func (g *graphWriter) op(kind protowire.Number, op uint64, args ...uint32) uint32 {
	fs := []func([]byte) []byte{varint(1, op)}
	for i, a := range args {
		fs = append(fs, varint(protowire.Number(2+i), uint64(a)))
	}
	g.nodes = append(g.nodes, msg(sub(kind, msg(fs...))))
	return uint32(len(g.nodes) - 1)
}

func (g *graphWriter) bytes() []byte {
	out := append([]byte(magic), make([]byte, 8)...)
	binary.LittleEndian.PutUint64(out[len(magic):], uint64(len(g.nodes)))
	for _, n := range g.nodes {
		out = protowire.AppendBytes(out, n)
	}
	var packed []byte
	for _, w := range g.witness {
		packed = protowire.AppendVarint(packed, uint64(w))
	}
	// the packed witness signals, then one map entry per input
	md := msg(sub(1, packed))
	for name, s := range g.inputs {
		md = sub(2, msg(sub(1, []byte(name)), sub(2, msg(varint(1, uint64(s.Offset)), varint(2, uint64(s.Len))))))(md)
	}
	out = protowire.AppendBytes(out, md)
	return binary.LittleEndian.AppendUint64(out, 0)
}

func el(v int64) fr.Element { var e fr.Element; e.SetInt64(v); return e }

// TestCalculateOperators evaluates one node of each operator on inputs a
// and b, with circom-witnesscalc's semantics.
func TestCalculateOperators(t *testing.T) {
	minus1 := el(-1)
	for _, tc := range []struct {
		name string
		op   opcode
		a, b fr.Element
		want fr.Element
	}{
		{"mul", opMul, el(6), el(7), el(42)},
		{"div", opDiv, el(42), el(7), el(6)},
		{"div by 0", opDiv, el(42), el(0), el(0)},
		{"add", opAdd, el(2), el(3), el(5)},
		{"sub", opSub, el(2), el(3), el(-1)},
		{"idiv", opIdiv, el(7), el(2), el(3)},
		{"idiv by 0", opIdiv, el(7), el(0), el(0)},
		{"mod", opMod, el(7), el(2), el(1)},
		{"eq", opEq, el(7), el(7), el(1)},
		{"neq", opNeq, el(7), el(7), el(0)},
		{"lt", opLt, el(2), el(3), el(1)},
		{"lt of a negative", opLt, minus1, el(3), el(1)},
		{"gt of a negative", opGt, minus1, el(3), el(0)},
		{"leq", opLeq, el(3), el(3), el(1)},
		{"geq", opGeq, el(2), el(3), el(0)},
		{"land", opLand, el(2), el(0), el(0)},
		{"lor", opLor, el(2), el(0), el(1)},
		{"shl", opShl, el(3), el(4), el(48)},
		{"shr", opShr, el(48), el(4), el(3)},
		{"shr by 254", opShr, minus1, el(254), el(0)},
		{"band", opBand, el(12), el(10), el(8)},
		{"bor", opBor, el(12), el(10), el(14)},
		{"bxor", opBxor, el(12), el(10), el(6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &graphWriter{inputs: map[string]Signal{"a": {1, 1}, "b": {2, 1}}}
			one, a, b := g.input(0), g.input(1), g.input(2)
			r := g.op(4, uint64(tc.op), a, b)
			g.witness = []uint32{one, r}
			graph, err := Parse(g.bytes())
			if err != nil {
				t.Fatal(err)
			}
			w, err := graph.Calculate(map[string][]fr.Element{"a": {tc.a}, "b": {tc.b}})
			if err != nil {
				t.Fatal(err)
			}
			if !w[0].IsOne() || !w[1].Equal(&tc.want) {
				t.Fatalf("witness %s %s, want 1 %s", w[0].String(), w[1].String(), tc.want.String())
			}
		})
	}
}

func TestCalculateNodes(t *testing.T) {
	g := &graphWriter{inputs: map[string]Signal{"v": {1, 2}}}
	one, v0, v1 := g.input(0), g.input(1), g.input(2)
	c := g.constant(big.NewInt(1000))
	neg := g.op(3, 0, v0)
	tern := g.op(5, 0, v1, c, neg) // v1 != 0 ? 1000 : -v0
	g.witness = []uint32{one, tern, neg, c}
	graph, err := Parse(g.bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v1   int64
		want int64
	}{{0, -5}, {9, 1000}} {
		w, err := graph.Calculate(map[string][]fr.Element{"v": {el(5), el(tc.v1)}})
		if err != nil {
			t.Fatal(err)
		}
		if want := el(tc.want); !w[1].Equal(&want) {
			t.Fatalf("ternary with %d: %s", tc.v1, w[1].String())
		}
	}
	for name, in := range map[string]map[string][]fr.Element{
		"missing":      {},
		"wrong length": {"v": {el(1)}},
		"unknown":      {"v": {el(1), el(2)}, "w": {el(1)}},
	} {
		if _, err := graph.Calculate(in); !errors.Is(err, ErrInput) {
			t.Errorf("%s input: %v, want ErrInput", name, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	base := func() *graphWriter {
		g := &graphWriter{inputs: map[string]Signal{"v": {1, 1}}}
		g.input(0)
		g.input(1)
		g.witness = []uint32{0, 1}
		return g
	}
	for name, f := range map[string]func(g *graphWriter) []byte{
		"magic":           func(g *graphWriter) []byte { b := g.bytes(); b[0] = 'x'; return b },
		"forward operand": func(g *graphWriter) []byte { g.op(4, uint64(opAdd), 0, 5); return g.bytes() },
		"pow":             func(g *graphWriter) []byte { g.op(4, uint64(opPow), 0, 1); return g.bytes() },
		"unknown binary":  func(g *graphWriter) []byte { g.op(4, 20, 0, 1); return g.bytes() },
		"id":              func(g *graphWriter) []byte { g.op(3, 1, 0); return g.bytes() },
		"witness past the nodes": func(g *graphWriter) []byte {
			g.witness = append(g.witness, 9)
			return g.bytes()
		},
		"input outside the buffer": func(g *graphWriter) []byte { g.inputs["w"] = Signal{1, 5}; return g.bytes() },
		"node count too large": func(g *graphWriter) []byte {
			b := g.bytes()
			binary.LittleEndian.PutUint64(b[len(magic):], 1<<40)
			return b
		},
		"truncated": func(g *graphWriter) []byte { b := g.bytes(); return b[:len(b)-20] },
	} {
		if _, err := Parse(f(base())); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}

func TestParseRLNGraph(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testcircuit.Dir(t), "graph.bin"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if g.WitnessSize() != 5844 || len(g.Inputs()) != 7 || g.Inputs()["pathElements"].Len != 20 {
		t.Fatalf("witness %d, inputs %v", g.WitnessSize(), g.Inputs())
	}
}

func FuzzParse(f *testing.F) {
	g := &graphWriter{inputs: map[string]Signal{"a": {1, 1}, "b": {2, 1}}}
	one, a, b := g.input(0), g.input(1), g.input(2)
	s := g.op(4, uint64(opShr), a, b)
	c := g.constant(big.NewInt(7))
	g.witness = []uint32{one, g.op(4, uint64(opBand), s, c), g.op(5, 0, a, b, c)}
	f.Add(g.bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		graph, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		in := map[string][]fr.Element{}
		for name, s := range graph.Inputs() {
			v := make([]fr.Element, s.Len)
			for i := range v {
				v[i].SetUint64(uint64(i + 3))
			}
			in[name] = v
		}
		w, err := graph.Calculate(in)
		if err == nil && len(w) != graph.WitnessSize() {
			t.Fatalf("%d wires, want %d", len(w), graph.WitnessSize())
		}
	})
}
