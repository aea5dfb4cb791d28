// Package protowalk walks the fields of a protobuf message with protowire,
// for the small request/response codecs of the Waku protocols: values alias
// the input, unknown fields are skipped, and a known field with the wrong
// wire type is an error.
package protowalk

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is wrapped by every error of Walk.
var ErrMalformed = errors.New("malformed protobuf")

// Walk calls fn for every field of data whose number known accepts, in the
// order they appear, with the field's bytes (length-delimited fields, an
// alias of data with len == cap) or its varint value. known returns the wire type a field
// number must have and whether the number is known.
func Walk(data []byte, known func(protowire.Number) (protowire.Type, bool), fn func(num protowire.Number, v []byte, x uint64)) error {
	for off := 0; off < len(data); {
		num, typ, n := protowire.ConsumeTag(data[off:])
		if n < 0 {
			return fmt.Errorf("%w: tag at offset %d: %v", ErrMalformed, off, protowire.ParseError(n))
		}
		off += n
		want, ok := known(num)
		if !ok {
			if n = protowire.ConsumeFieldValue(num, typ, data[off:]); n < 0 {
				return fmt.Errorf("%w: field %d at offset %d: %v", ErrMalformed, num, off, protowire.ParseError(n))
			}
			off += n
			continue
		}
		if typ != want {
			return fmt.Errorf("%w: field %d has wire type %d", ErrMalformed, num, typ)
		}
		var v []byte
		var x uint64
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(data[off:])
			v = v[:len(v):len(v)] // an append to a field must never write into data
		} else {
			x, n = protowire.ConsumeVarint(data[off:])
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d at offset %d: %v", ErrMalformed, num, off, protowire.ParseError(n))
		}
		off += n
		fn(num, v, x)
	}
	return nil
}
