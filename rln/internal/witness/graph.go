// Package witness computes the witness of a circom circuit from its
// witness graph, the "wtns.graph.001" file of iden3's circom-witnesscalc
// that zerokit ships as graph.bin and evaluates in
// rln/src/circuit/iden3calc (graph.rs, storage.rs).
//
// The file is: the magic "wtns.graph.001"; the node count (u64
// little-endian); that many nodes, each a protobuf Node prefixed by its
// varint length; a protobuf GraphMetadata, also length-prefixed (the
// witness signals, one node index per wire of the R1CS, and the offset and
// length of every named input signal); and the offset of the metadata
// (u64 little-endian). A node refers only to nodes before it, so one pass
// in file order evaluates the graph.
package witness

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"google.golang.org/protobuf/encoding/protowire"
)

// ErrFormat is wrapped by every error of Parse; ErrInput by the errors of
// Calculate about its inputs.
var (
	ErrFormat = errors.New("witness: malformed witness graph")
	ErrInput  = errors.New("witness: bad input")
)

const magic = "wtns.graph.001"

// maxNodes bounds the node count a file may announce.
const maxNodes = 1 << 24

type opcode uint8

// Node kinds and operators, numbered as circom-witnesscalc's
// protos/messages.proto numbers DuoOp (kinds past opBxor are ours).
const (
	opMul opcode = iota
	opDiv
	opAdd
	opSub
	opPow
	opIdiv
	opMod
	opEq
	opNeq
	opLt
	opGt
	opLeq
	opGeq
	opLand
	opLor
	opShl
	opShr
	opBor
	opBand
	opBxor
	opInput
	opConstant
	opNeg
	opTernary
)

type node struct {
	op      opcode
	a, b, c uint32 // operand node indices; for opInput, a is the input index
}

// Signal is a named input of the circuit: Len consecutive slots from
// Offset in the input buffer (slot 0 holds the constant 1).
type Signal struct {
	Offset, Len int
}

// Graph is a parsed witness graph. It is immutable and safe for concurrent
// use.
type Graph struct {
	nodes     []node
	constants []fr.Element // values of the opConstant nodes, by node.a
	witness   []uint32     // node index of each witness wire
	inputs    map[string]Signal
	nInputs   int
}

// Parse reads a witness graph. It checks that every operand refers to an
// earlier node, every witness wire to a node and every input to the input
// buffer, and that each operator is one the evaluator implements (as
// zerokit's: Pow and Id never appear in a graph in Montgomery form).
func Parse(data []byte) (*Graph, error) {
	if len(data) < len(magic)+8 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: no magic", ErrFormat)
	}
	off := len(magic)
	count := binary.LittleEndian.Uint64(data[off:])
	off += 8
	if count > maxNodes || count > uint64(len(data)) {
		return nil, fmt.Errorf("%w: %d nodes announced", ErrFormat, count)
	}
	g := &Graph{nodes: make([]node, 0, count)}
	for i := uint64(0); i < count; i++ {
		msg, n := protowire.ConsumeBytes(data[off:])
		if n < 0 {
			return nil, fmt.Errorf("%w: node %d at offset %d: %v", ErrFormat, i, off, protowire.ParseError(n))
		}
		off += n
		nd, err := g.parseNode(msg, uint32(i))
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		g.nodes = append(g.nodes, nd)
	}
	msg, n := protowire.ConsumeBytes(data[off:])
	if n < 0 {
		return nil, fmt.Errorf("%w: metadata at offset %d: %v", ErrFormat, off, protowire.ParseError(n))
	}
	if err := g.parseMetadata(msg); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Graph) parseNode(b []byte, idx uint32) (node, error) {
	var nd node
	kinds := 0
	err := fields(b, func(num protowire.Number, v []byte, _ uint64) error {
		kinds++
		switch num {
		case 1: // InputNode{idx}
			nd.op = opInput
			return fields(v, func(num protowire.Number, _ []byte, x uint64) error {
				if num == 1 {
					nd.a = uint32(x)
				}
				return nil
			})
		case 2: // ConstantNode{BigUInt{value_le}}
			nd.op = opConstant
			var c fr.Element
			err := fields(v, func(num protowire.Number, big []byte, _ uint64) error {
				if num != 1 {
					return nil
				}
				return fields(big, func(num protowire.Number, le []byte, _ uint64) error {
					if num == 1 {
						return setLE(&c, le)
					}
					return nil
				})
			})
			nd.a = uint32(len(g.constants))
			g.constants = append(g.constants, c)
			return err
		case 3, 4, 5: // UnoOpNode, DuoOpNode, TresOpNode {op, a, b, c}
			var op uint64
			var operands [3]uint32
			err := fields(v, func(num protowire.Number, _ []byte, x uint64) error {
				switch {
				case num == 1:
					op = x
				case num >= 2 && num <= 4:
					operands[num-2] = uint32(x)
				}
				return nil
			})
			if err != nil {
				return err
			}
			arity := int(num) - 2
			clear(operands[arity:]) // fields past the arity are not operands
			nd.a, nd.b, nd.c = operands[0], operands[1], operands[2]
			switch {
			case num == 3 && op == 0:
				nd.op = opNeg
			case num == 4 && op <= uint64(opBxor) && opcode(op) != opPow:
				nd.op = opcode(op)
			case num == 5 && op == 0:
				nd.op = opTernary
			default:
				return fmt.Errorf("%w: operator %d of arity %d not supported", ErrFormat, op, arity)
			}
			for _, o := range operands[:arity] {
				if o >= idx {
					return fmt.Errorf("%w: operand %d is not an earlier node", ErrFormat, o)
				}
			}
			return nil
		}
		kinds--
		return nil
	})
	if err != nil {
		return nd, err
	}
	if kinds != 1 {
		return nd, fmt.Errorf("%w: node has %d kinds", ErrFormat, kinds)
	}
	return nd, nil
}

func (g *Graph) parseMetadata(b []byte) error {
	g.inputs = make(map[string]Signal)
	err := fields(b, func(num protowire.Number, v []byte, x uint64) error {
		switch num {
		case 1: // witness_signals, packed or not
			if v == nil {
				g.witness = append(g.witness, uint32(x))
				return nil
			}
			for len(v) > 0 {
				w, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return fmt.Errorf("%w: witness signals: %v", ErrFormat, protowire.ParseError(n))
				}
				g.witness = append(g.witness, uint32(w))
				v = v[n:]
			}
		case 2: // map<string, SignalDescription>
			var name string
			var sig Signal
			err := fields(v, func(num protowire.Number, e []byte, _ uint64) error {
				switch num {
				case 1:
					name = string(e)
				case 2:
					return fields(e, func(num protowire.Number, _ []byte, x uint64) error {
						switch num {
						case 1:
							sig.Offset = int(uint32(x))
						case 2:
							sig.Len = int(uint32(x))
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				return err
			}
			g.inputs[name] = sig
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, w := range g.witness {
		if int(w) >= len(g.nodes) {
			return fmt.Errorf("%w: witness wire %d refers to node %d of %d", ErrFormat, i, w, len(g.nodes))
		}
	}
	g.nInputs = 1 // slot 0 holds the constant 1
	for _, nd := range g.nodes {
		if nd.op == opInput && int(nd.a) >= g.nInputs {
			g.nInputs = int(nd.a) + 1
		}
	}
	for name, s := range g.inputs {
		if s.Offset < 1 || s.Len < 0 || s.Offset+s.Len > g.nInputs {
			return fmt.Errorf("%w: input %q (offset %d, length %d) outside the %d inputs", ErrFormat, name, s.Offset, s.Len, g.nInputs)
		}
	}
	return nil
}

// fields calls f for every field of the protobuf message b: bytes fields
// with v set, varint fields with x set; other wire types are skipped.
func fields(b []byte, f func(num protowire.Number, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrFormat, protowire.ParseError(n))
		}
		b = b[n:]
		var err error
		switch typ {
		case protowire.BytesType:
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				if v == nil {
					v = []byte{}
				}
				err = f(num, v, 0)
			}
		case protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			if n >= 0 {
				err = f(num, nil, x)
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrFormat, num, protowire.ParseError(n))
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// setLE sets z to the little-endian integer le reduced mod r, as
// circom-witnesscalc reads constants (from_le_bytes_mod_order).
func setLE(z *fr.Element, le []byte) error {
	if len(le) > 64 {
		return fmt.Errorf("%w: constant of %d bytes", ErrFormat, len(le))
	}
	be := slices.Clone(le)
	slices.Reverse(be)
	z.SetBytes(be)
	return nil
}

// Inputs returns the named input signals. The map must not be modified.
func (g *Graph) Inputs() map[string]Signal { return g.inputs }

// WitnessSize is the number of wires, the length of Calculate's result.
func (g *Graph) WitnessSize() int { return len(g.witness) }
