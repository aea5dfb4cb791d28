// Package protowalk reads the fields of an encoded protobuf message with
// protowire, in the order they appear: the one field reader of every
// decoder in the module, from the WakuMessage on the relay's hot path to
// the small request/response codecs of the Waku protocols.
//
// A Reader moves from field to field (Next) and hands out the value of the
// current one as the wire type the caller expects (Bytes, Varint); a
// value that is not asked for is skipped, whatever its type, so unknown
// fields are ignored. Asking for a wire type the field does not have
// is an error: decoders that accept a field in more than one form (a
// repeated scalar packed or not) or skip a known field of the wrong type
// look at Type first. Values alias the input and nothing allocates.
//
// The first error stops the Reader (Next returns false) and Err returns
// it: an *Error wrapping ErrMalformed, which says what failed and where,
// so that each codec can name the failure in its own terms (nwaku's
// status texts, its own sentinels).
package protowalk

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is wrapped by every error of a Reader.
var ErrMalformed = errors.New("malformed protobuf")

// Kind says what part of a field failed to read.
type Kind uint8

// Kinds of Error.
const (
	// BadTag: a field's tag did not parse (truncated, an overlong varint,
	// field number 0).
	BadTag Kind = iota + 1
	// BadValue: a field's value did not parse (truncated, an overlong
	// varint, an unmatched group).
	BadValue
	// WrongType: the field's wire type is not the one asked for.
	WrongType
)

// Error is a failure to read one field. It wraps ErrMalformed.
type Error struct {
	Kind Kind
	// Num is the field's number; 0 for BadTag.
	Num protowire.Number
	// Type is the field's wire type as written; 0 for BadTag.
	Type protowire.Type
	// Off is the offset in the input, in bytes, of the tag (BadTag) or of
	// the value (BadValue, WrongType).
	Off int
	// Err is protowire's parse error (BadTag, BadValue); it wraps
	// io.ErrUnexpectedEOF when the input ends inside the field. nil for
	// WrongType.
	Err error
}

func (e *Error) Error() string {
	switch e.Kind {
	case BadTag:
		return fmt.Sprintf("%v: tag at offset %d: %v", ErrMalformed, e.Off, e.Err)
	case WrongType:
		return fmt.Sprintf("%v: field %d has wire type %d", ErrMalformed, e.Num, e.Type)
	}
	return fmt.Sprintf("%v: field %d at offset %d: %v", ErrMalformed, e.Num, e.Off, e.Err)
}

func (e *Error) Unwrap() error { return ErrMalformed }

// Reader reads the fields of one encoded message. The zero value reads an
// empty message; NewReader starts one on data. A Reader is a small value
// meant to live on the caller's stack.
//
// Next reads a field whole, its tag and its value; Bytes and Varint hand
// the value out. A value that does not parse is reported when the caller
// reads it (after the check of its wire type, so a known field of the
// wrong type is WrongType whatever its value) or, when the caller does not
// read it, by the following Next.
type Reader struct {
	data  []byte
	off   int // offset of the next field's tag
	voff  int // offset of the current field's value
	num   protowire.Number
	typ   protowire.Type
	v     []byte // the current value of a BytesType field
	x     uint64 // the current value of a VarintType field
	vcode int    // protowire's error code for the current value; 0 when it parsed
	err   error
}

// NewReader returns a Reader of data. data must not change while it is
// read; the values handed out alias it.
func NewReader(data []byte) Reader { return Reader{data: data} }

// Next moves to the next field and reads it. It returns false at the end
// of the input and after an error (see Err).
func (r *Reader) Next() bool {
	if r.err != nil || r.vcode != 0 {
		r.stop()
		return false
	}
	if r.off >= len(r.data) {
		return false
	}
	var n int
	if b := r.data[r.off]; b >= 1<<3 && b < 0x80 { // a one-byte tag, field number 1 to 15
		r.num, r.typ, n = protowire.Number(b>>3), protowire.Type(b&7), 1
	} else if r.num, r.typ, n = protowire.ConsumeTag(r.data[r.off:]); n < 0 {
		r.err = &Error{Kind: BadTag, Off: r.off, Err: protowire.ParseError(n)}
		return false
	}
	r.off += n
	r.voff = r.off
	switch r.typ {
	case protowire.BytesType:
		r.v, n = protowire.ConsumeBytes(r.data[r.off:])
		r.v = r.v[:len(r.v):len(r.v)] // an append to a value must never write into the input
	case protowire.VarintType:
		r.x, n = protowire.ConsumeVarint(r.data[r.off:])
	default:
		n = protowire.ConsumeFieldValue(r.num, r.typ, r.data[r.off:])
	}
	if n < 0 {
		r.vcode = n
		return true
	}
	r.off += n
	return true
}

// stop records the error of a value that did not parse and was not read.
func (r *Reader) stop() {
	if r.err == nil && r.vcode != 0 {
		r.err = &Error{Kind: BadValue, Num: r.num, Type: r.typ, Off: r.voff, Err: protowire.ParseError(r.vcode)}
	}
}

// Num returns the current field's number.
func (r *Reader) Num() protowire.Number { return r.num }

// Type returns the current field's wire type.
func (r *Reader) Type() protowire.Type { return r.typ }

// Bytes returns the current field's value as a length-delimited field. The
// slice aliases the input with len == cap, so an append to it copies
// instead of writing into the input; an empty field gives an empty
// non-nil slice. It returns nil after an error: a field of another wire
// type (WrongType) or a truncated value (BadValue).
func (r *Reader) Bytes() []byte {
	if r.typ != protowire.BytesType || r.vcode != 0 || r.err != nil {
		r.misread(protowire.BytesType)
		return nil
	}
	return r.v
}

// Varint returns the current field's value as a varint field. It returns
// 0 after an error: a field of another wire type (WrongType) or a value
// that does not parse (BadValue).
func (r *Reader) Varint() uint64 {
	if r.typ != protowire.VarintType || r.vcode != 0 || r.err != nil {
		r.misread(protowire.VarintType)
		return 0
	}
	return r.x
}

// misread records why the current value cannot be read as want.
func (r *Reader) misread(want protowire.Type) {
	switch {
	case r.err != nil:
	case r.typ != want:
		r.err = &Error{Kind: WrongType, Num: r.num, Type: r.typ, Off: r.voff}
	default:
		r.stop()
	}
}

// AppendPacked reads the current field's value as a packed run of varints
// (a repeated scalar field written packed: one length-delimited field
// holding the values back to back) and appends each to dst, converted to
// T (truncated, as protobuf does for a narrower type). After an error it
// returns dst as it was: WrongType, a truncated run, or a varint in the
// run that does not parse (BadValue, Off at that varint).
func AppendPacked[T ~uint32 | ~uint64](r *Reader, dst []T) []T {
	run := r.Bytes()
	if run == nil {
		return dst
	}
	base, n0 := r.off-len(run), len(dst)
	for i := 0; i < len(run); {
		x, n := protowire.ConsumeVarint(run[i:])
		if n < 0 {
			r.err = &Error{Kind: BadValue, Num: r.num, Type: r.typ, Off: base + i, Err: protowire.ParseError(n)}
			return dst[:n0]
		}
		dst = append(dst, T(x))
		i += n
	}
	return dst
}

// Err returns the error that stopped the Reader, an *Error, or nil.
func (r *Reader) Err() error {
	r.stop()
	return r.err
}
