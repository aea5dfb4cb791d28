package message

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
)

// Limits of 14/WAKU2-MESSAGE as nwaku and go-waku enforce them.
const (
	// MaxSize is the largest encoded WakuMessage in bytes: 150 KiB
	// (nwaku message/default_values.nim, go-waku relay/waku_relay.go).
	MaxSize = 150 * 1024
	// MaxMetaSize is the largest meta attribute in bytes
	// (nwaku MaxMetaAttrLength, message/message.nim).
	MaxMetaSize = 64
)

// Field numbers of 14/WAKU2-MESSAGE.
const (
	fieldPayload        protowire.Number = 1
	fieldContentTopic   protowire.Number = 2
	fieldVersion        protowire.Number = 3
	fieldTimestamp      protowire.Number = 10
	fieldMeta           protowire.Number = 11
	fieldRateLimitProof protowire.Number = 21
	fieldEphemeral      protowire.Number = 31
)

// Sentinel errors of Decode. Every error Decode returns wraps exactly one of
// them and names the field and offset.
var (
	ErrTooLarge            = errors.New("message: encoded message over 153600 bytes")
	ErrTruncated           = errors.New("message: truncated or malformed protobuf")
	ErrWireType            = errors.New("message: wrong wire type for field")
	ErrMetaTooLong         = errors.New("message: meta over 64 bytes")
	ErrMissingPayload      = errors.New("message: payload field absent")
	ErrMissingContentTopic = errors.New("message: content topic field absent")
)

// Presence records which optional fields of a Message are set. The encoder
// writes an optional field when its bit is set or its value is not the zero
// value; the decoder sets the bit of every optional field it reads.
type Presence uint8

// Bits of Presence, one per optional field of 14/WAKU2-MESSAGE.
const (
	HasVersion Presence = 1 << iota
	HasTimestamp
	HasMeta
	HasRateLimitProof
	HasEphemeral
)

// Message is a WakuMessage (14/WAKU2-MESSAGE). A Message is immutable once it
// has been handed to Encode, NewEnvelope or any consumer: nobody may modify
// its fields or the bytes its slices point to.
//
// A Message returned by Decode aliases the decoded input: Payload, Meta,
// RateLimitProof and the bytes of ContentTopic are sub-slices of it.
type Message struct {
	// Payload is field 1, the application bytes (any length, may be empty).
	Payload []byte
	// ContentTopic is field 2, e.g. "/courier/1/bench/proto".
	ContentTopic string
	// Version is field 3 (0 = unencrypted or app-encrypted, 1 = 26/WAKU-PAYLOAD,
	// 2 = WAKU2-NOISE). Absent means 0.
	Version uint32
	// Timestamp is field 10, Unix time in nanoseconds (sint64). Absent means 0.
	Timestamp int64
	// Meta is field 11, at most MaxMetaSize bytes, covered by the hash.
	Meta []byte
	// RateLimitProof is field 21, an opaque 17/WAKU2-RLN-RELAY proof.
	RateLimitProof []byte
	// Ephemeral is field 31: true means archives must not store the message.
	Ephemeral bool
	// Present marks the optional fields that are set (see Presence).
	Present Presence
}

// Decode parses one encoded WakuMessage of at most MaxSize bytes.
//
// The returned Message aliases data (no byte of the payload is copied): the
// caller gives up data and must never modify it afterwards. Every slice of
// the Message has len == cap, so an append to one copies instead of
// writing into data. Unknown fields
// are skipped; a repeated known field takes the last value, as protobuf does.
// Decode counts one decode and len(data) decoded bytes in c (nil: not counted).
//
// Errors wrap ErrTooLarge, ErrTruncated, ErrWireType, ErrMetaTooLong,
// ErrMissingPayload or ErrMissingContentTopic.
func Decode(data []byte, c *Counters) (*Message, error) {
	c = c.orDiscard()
	c.Decodes.Add(1)
	c.DecodedBytes.Add(uint64(len(data)))
	m := new(Message)
	if err := m.decode(data); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Message) decode(data []byte) error {
	if len(data) > MaxSize {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	var havePayload, haveTopic bool
	r := protowalk.NewReader(data)
	for r.Next() {
		switch r.Num() {
		case fieldPayload:
			m.Payload, havePayload = r.Bytes(), true
		case fieldContentTopic:
			m.ContentTopic, haveTopic = aliasString(r.Bytes()), true
		case fieldVersion:
			m.Version, m.Present = uint32(r.Varint()), m.Present|HasVersion
		case fieldTimestamp:
			m.Timestamp, m.Present = protowire.DecodeZigZag(r.Varint()), m.Present|HasTimestamp
		case fieldMeta:
			v := r.Bytes()
			if len(v) > MaxMetaSize {
				return fmt.Errorf("%w: %d bytes", ErrMetaTooLong, len(v))
			}
			m.Meta, m.Present = v, m.Present|HasMeta
		case fieldRateLimitProof:
			m.RateLimitProof, m.Present = r.Bytes(), m.Present|HasRateLimitProof
		case fieldEphemeral:
			m.Ephemeral, m.Present = r.Varint() != 0, m.Present|HasEphemeral
		}
	}
	switch err := r.Err(); {
	case err != nil:
		return decodeErr(err)
	case !havePayload:
		return ErrMissingPayload
	case !haveTopic:
		return ErrMissingContentTopic
	}
	return nil
}

// decodeErr gives a protowalk error Decode's sentinel and wording.
func decodeErr(err error) error {
	e := err.(*protowalk.Error)
	if e.Kind == protowalk.WrongType {
		return fmt.Errorf("%w: field %d has wire type %d at offset %d", ErrWireType, e.Num, e.Type, e.Off)
	}
	return fmt.Errorf("%w: field %d at offset %d: %v", ErrTruncated, e.Num, e.Off, e.Err)
}

// aliasString returns the bytes of b as a string without copying. The bytes
// must never change afterwards, which Decode's contract guarantees.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func aliasBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func (m *Message) has(p Presence) bool { return m.Present&p != 0 }

// Size returns the length in bytes of the encoding Append produces.
func (m *Message) Size() int {
	n := protowire.SizeTag(fieldPayload) + protowire.SizeBytes(len(m.Payload))
	n += protowire.SizeTag(fieldContentTopic) + protowire.SizeBytes(len(m.ContentTopic))
	if m.has(HasVersion) || m.Version != 0 {
		n += protowire.SizeTag(fieldVersion) + protowire.SizeVarint(uint64(m.Version))
	}
	if m.has(HasTimestamp) || m.Timestamp != 0 {
		n += protowire.SizeTag(fieldTimestamp) + protowire.SizeVarint(protowire.EncodeZigZag(m.Timestamp))
	}
	if m.has(HasMeta) || len(m.Meta) > 0 {
		n += protowire.SizeTag(fieldMeta) + protowire.SizeBytes(len(m.Meta))
	}
	if m.has(HasRateLimitProof) || len(m.RateLimitProof) > 0 {
		n += protowire.SizeTag(fieldRateLimitProof) + protowire.SizeBytes(len(m.RateLimitProof))
	}
	if m.has(HasEphemeral) || m.Ephemeral {
		n += protowire.SizeTag(fieldEphemeral) + 1
	}
	return n
}

// Append appends the encoding of m to dst and returns the extended slice.
// Fields 1 and 2 are always written, even when empty, because nwaku rejects a
// message without them; optional fields are written when present or non-zero.
// The timestamp is a zigzag varint (sint64). Append counts one encode in c.
// It does not check the limits: Decode and the relay validator do.
func (m *Message) Append(dst []byte, c *Counters) []byte {
	c = c.orDiscard()
	c.Encodes.Add(1)
	start := len(dst)
	dst = protowire.AppendTag(dst, fieldPayload, protowire.BytesType)
	dst = protowire.AppendBytes(dst, m.Payload)
	dst = m.appendAfterPayload(dst)
	c.EncodedBytes.Add(uint64(len(dst) - start))
	return dst
}

// appendAfterPayload appends every field but the payload, in Append's order.
func (m *Message) appendAfterPayload(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldContentTopic, protowire.BytesType)
	dst = protowire.AppendString(dst, m.ContentTopic)
	if m.has(HasVersion) || m.Version != 0 {
		dst = protowire.AppendTag(dst, fieldVersion, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(m.Version))
	}
	if m.has(HasTimestamp) || m.Timestamp != 0 {
		dst = protowire.AppendTag(dst, fieldTimestamp, protowire.VarintType)
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(m.Timestamp))
	}
	if m.has(HasMeta) || len(m.Meta) > 0 {
		dst = protowire.AppendTag(dst, fieldMeta, protowire.BytesType)
		dst = protowire.AppendBytes(dst, m.Meta)
	}
	if m.has(HasRateLimitProof) || len(m.RateLimitProof) > 0 {
		dst = protowire.AppendTag(dst, fieldRateLimitProof, protowire.BytesType)
		dst = protowire.AppendBytes(dst, m.RateLimitProof)
	}
	if m.has(HasEphemeral) || m.Ephemeral {
		dst = protowire.AppendTag(dst, fieldEphemeral, protowire.VarintType)
		dst = protowire.AppendVarint(dst, protowire.EncodeBool(m.Ephemeral))
	}
	return dst
}

// Encode returns a new buffer of exactly m.Size() bytes holding the encoding
// of m. The caller owns the buffer.
func (m *Message) Encode(c *Counters) []byte {
	return m.Append(make([]byte, 0, m.Size()), c)
}

// Equal reports whether m and o have the same field values and presence.
func (m *Message) Equal(o *Message) bool {
	return bytes.Equal(m.Payload, o.Payload) && m.ContentTopic == o.ContentTopic &&
		m.Version == o.Version && m.Timestamp == o.Timestamp &&
		bytes.Equal(m.Meta, o.Meta) && bytes.Equal(m.RateLimitProof, o.RateLimitProof) &&
		m.Ephemeral == o.Ephemeral && m.Present == o.Present
}

// EncodeReserve encodes m like EncodeShared, but with a payload of n zero
// bytes in place of m.Payload (which it ignores), and returns the copy of m
// whose Payload is that region of the encoding (len == cap == n) and the
// encoding (exactly its size). The caller writes the payload into
// shared.Payload, once, before it hands the encoding to anyone (a publish),
// and never after: the payload bytes are then written once, straight into
// their final place, with no buffer of their own and no copy. It counts one
// encode in c. n must not be negative.
func (m *Message) EncodeReserve(n int, c *Counters) (shared *Message, wire []byte) {
	c = c.orDiscard()
	c.Encodes.Add(1)
	rest := *m
	rest.Payload = nil
	size := rest.Size() - protowire.SizeBytes(0) + protowire.SizeBytes(n)
	wire = protowire.AppendTag(make([]byte, 0, size), fieldPayload, protowire.BytesType)
	wire = protowire.AppendVarint(wire, uint64(n))
	off := len(wire)
	wire = rest.appendAfterPayload(wire[:off+n])
	c.EncodedBytes.Add(uint64(len(wire)))
	rest.Payload = wire[off : off+n : off+n]
	ct := off + n + protowire.SizeTag(fieldContentTopic) + protowire.SizeVarint(uint64(len(m.ContentTopic)))
	rest.ContentTopic = aliasString(wire[ct : ct+len(m.ContentTopic)])
	return &rest, wire
}

// EncodeShared encodes m like Encode and also returns a copy of m whose
// Payload and ContentTopic alias the new encoding instead of m's own
// memory. Whoever keeps the copy (an Envelope in gossipsub's message cache,
// say) then keeps the payload bytes once, not twice; the caller may let go
// of m and its payload. The encoding must never be modified.
func (m *Message) EncodeShared(c *Counters) (*Message, []byte) {
	wire := m.Encode(c)
	shared := *m
	off := protowire.SizeTag(fieldPayload) + protowire.SizeVarint(uint64(len(m.Payload)))
	shared.Payload = wire[off : off+len(m.Payload) : off+len(m.Payload)]
	off += len(m.Payload) + protowire.SizeTag(fieldContentTopic) + protowire.SizeVarint(uint64(len(m.ContentTopic)))
	shared.ContentTopic = aliasString(wire[off : off+len(m.ContentTopic)])
	return &shared, wire
}
