package rln

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// sampleProof is a RateLimitProof with distinct bytes in every field.
func sampleProof() *RateLimitProof {
	p := &RateLimitProof{Epoch: EpochFromUint64(2833333), RLNIdentifier: DefaultRLNIdentifier()}
	for i := range p.Proof {
		p.Proof[i] = byte(i)
	}
	p.MerkleRoot, p.ShareX, p.ShareY, p.Nullifier = FieldFromUint64(11), FieldFromUint64(12), FieldFromUint64(13), FieldFromUint64(14)
	return p
}

// encodeFields writes the fields given, in order, as nwaku would.
func encodeFields(fields ...struct {
	num protowire.Number
	v   []byte
}) []byte {
	var b []byte
	for _, f := range fields {
		b = protowire.AppendTag(b, f.num, protowire.BytesType)
		b = protowire.AppendBytes(b, f.v)
	}
	return b
}

func TestRateLimitProofRoundTrip(t *testing.T) {
	p := sampleProof()
	b := p.Marshal()
	if len(b) != EncodedProofSize || cap(b) != EncodedProofSize {
		t.Fatalf("encoding of %d bytes (cap %d), want %d", len(b), cap(b), EncodedProofSize)
	}
	// field 1 first: tag 0x0a, length 128 as a two-byte varint
	if !bytes.HasPrefix(b, []byte{0x0a, 0x80, 0x01, 0x00, 0x01}) {
		t.Fatalf("encoding starts % x", b[:5])
	}
	got, err := DecodeRateLimitProof(b)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *p {
		t.Fatalf("round trip: %+v, want %+v", got, p)
	}
	// decoding keeps no reference to the input
	clear(b)
	if *got != *p {
		t.Fatal("decoded proof changed with its input")
	}
	if a := p.Append([]byte{9}); !bytes.Equal(a[1:], p.Marshal()) || a[0] != 9 {
		t.Fatal("Append does not append")
	}
}

func TestDecodeRateLimitProofAllocations(t *testing.T) {
	b := sampleProof().Marshal()
	if n := testing.AllocsPerRun(100, func() { DecodeRateLimitProof(b) }); n != 1 {
		t.Fatalf("%v allocations per decode, want 1 (the result)", n)
	}
}

func TestDecodeRateLimitProofRules(t *testing.T) {
	p := sampleProof()
	full := p.Marshal()
	type fv = struct {
		num protowire.Number
		v   []byte
	}
	all := func(change func(num protowire.Number, v []byte) []byte) []fv {
		var fs []fv
		for num := fieldProof; num <= fieldRLNIdentifier; num++ {
			v := append([]byte(nil), p.field(num)...)
			if nv := change(num, v); nv != nil {
				fs = append(fs, fv{num, nv})
			} else if change == nil {
				fs = append(fs, fv{num, v})
			}
		}
		return fs
	}
	same := func(num protowire.Number, v []byte) []byte { return v }
	nonCanonicalR := decimalFieldBytes("21888242871839275222246405745257275088548364400416034343698204186575808495617")
	unknown := protowire.AppendTag(nil, 99, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 5)
	unknown = protowire.AppendTag(unknown, 100, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("future"))

	rootOfR := *p
	rootOfR.MerkleRoot = Field(nonCanonicalR)
	for _, tc := range []struct {
		name string
		b    []byte
		want error           // nil: decodes to p
		norm *RateLimitProof // with ErrNonCanonical: nwaku's reading
	}{
		{"canonical", full, nil, nil},
		{"reordered fields", encodeFields(append(all(same)[3:], all(same)[:3]...)...), nil, nil},
		{"unknown fields skipped", append(append([]byte(nil), unknown...), full...), nil, nil},
		{"repeated field takes the last value", append(encodeFields(fv{fieldNullifier, FieldFromUint64(99).bytes()}), full...), nil, nil},
		{"missing nullifier", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldNullifier {
				return nil
			}
			return v
		})...), ErrNonCanonical, with(p, func(q *RateLimitProof) { q.Nullifier = Field{} })},
		{"short share_y", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldShareY {
				return v[:1]
			}
			return v
		})...), ErrNonCanonical, with(p, func(q *RateLimitProof) { q.ShareY = FieldFromUint64(13) })},
		{"long proof", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldProof {
				return append(v, 7)
			}
			return v
		})...), ErrNonCanonical, p},
		{"nullifier plus r", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldNullifier {
				return addR(v)
			}
			return v
		})...), ErrNonCanonical, p},
		{"root of r", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldMerkleRoot {
				return nonCanonicalR
			}
			return v
		})...), ErrNonCanonical, &rootOfR},
		{"share_x of 2^256-1", encodeFields(all(func(num protowire.Number, v []byte) []byte {
			if num == fieldShareX {
				return bytes.Repeat([]byte{0xff}, 32)
			}
			return v
		})...), ErrNonCanonical, with(p, func(q *RateLimitProof) {
			// (2^256-1) mod r
			q.ShareX = Field(decimalFieldBytes("6350874878119819312338956282401532410528162663560392320966563075034087161850"))
		})},
		{"known field as varint after the bytes", append(append([]byte(nil), full...), 0x30, 0x01), ErrNonCanonical, p},
		{"empty", nil, ErrNonCanonical, &RateLimitProof{}},
		{"truncated", full[:len(full)-1], ErrMalformed, nil},
		{"bad tag", []byte{0x80}, ErrMalformed, nil},
		{"field number 0", []byte{0x02, 0x00}, ErrMalformed, nil},
		{"group", append(append([]byte(nil), full...), 0x0b), ErrMalformed, nil},
		{"length past the end", []byte{0x0a, 0x81, 0x01, 0x00}, ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRateLimitProof(tc.b)
			switch {
			case tc.want == nil:
				if err != nil {
					t.Fatal(err)
				}
				if *got != *p {
					t.Fatalf("decoded %+v, want %+v", got, p)
				}
			case tc.want == ErrNonCanonical:
				if !errors.Is(err, ErrNonCanonical) || errors.Is(err, ErrMalformed) || got == nil {
					t.Fatalf("got %v, %v; want ErrNonCanonical and nwaku's reading", got, err)
				}
				if *got != *tc.norm {
					t.Fatalf("read as %+v, want %+v", got, tc.norm)
				}
			default:
				if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrNonCanonical) || got != nil {
					t.Fatalf("got %v, %v; want ErrMalformed", got, err)
				}
			}
		})
	}
}

func with(p *RateLimitProof, f func(*RateLimitProof)) *RateLimitProof {
	c := *p
	f(&c)
	return &c
}

// addR returns v + r (32 bytes little-endian), or nil when it does not
// fit 32 bytes.
func addR(v []byte) []byte {
	f := Field(v)
	sum := f.Big()
	sum.Add(sum, frModulus())
	if sum.BitLen() > 256 {
		return nil
	}
	be := sum.FillBytes(make([]byte, 32))
	out := make([]byte, 32)
	for i := range be {
		out[i] = be[31-i]
	}
	return out
}

func decimalFieldBytes(s string) []byte {
	n, _ := bigFromString(s)
	be := n.FillBytes(make([]byte, 32))
	out := make([]byte, 32)
	for i := range be {
		out[i] = be[31-i]
	}
	return out
}

func FuzzDecodeRateLimitProof(f *testing.F) {
	f.Add(sampleProof().Marshal())
	for _, pv := range loadVectors(f).Proofs {
		f.Add([]byte(pv.RateLimitProof))
	}
	f.Add([]byte{0x0a, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeRateLimitProof(b)
		if errors.Is(err, ErrMalformed) {
			if errors.Is(err, ErrNonCanonical) || p != nil {
				t.Fatalf("error %v with proof %v", err, p)
			}
			return
		}
		if err != nil && !errors.Is(err, ErrNonCanonical) {
			t.Fatalf("error %v wraps neither sentinel", err)
		}
		for _, v := range []Field{p.ShareX, p.ShareY, p.Nullifier} {
			if !v.IsCanonical() {
				t.Fatal("decoded a non-canonical share or nullifier")
			}
		}
		if err != nil {
			return
		}
		enc := p.Marshal()
		again, err := DecodeRateLimitProof(enc)
		if err != nil || *again != *p {
			t.Fatalf("re-encoding does not decode to the same proof: %v", err)
		}
		if !p.MerkleRoot.IsCanonical() {
			t.Fatal("decoded a non-canonical root without an error")
		}
	})
}
