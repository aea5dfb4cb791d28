package wire

import (
	"encoding/binary"
	"fmt"
)

// Compression codes on the wire. None, Gzip and Brotli are lib-net's values
// (compression.rs, a u32 in HeaderV1); Zstd exists on the raw lane only.
const (
	CodeNone   = 0
	CodeGzip   = 1
	CodeBrotli = 2
	CodeZstd   = 3
)

// HeaderV1 is lib-net's header version 1 (header/header_v1.rs). The string
// fields alias the parsed buffer.
type HeaderV1 struct {
	UUID             [16]byte
	MessageLength    uint32 // length of the possibly compressed data
	SenderID         []byte
	TrackerID        []byte
	VerificationData []byte
	Compression      uint32 // CodeNone, CodeGzip or CodeBrotli
}

// V1MinLen is the smallest HeaderV1: uuid, four u32 and three empty strings.
const V1MinLen = 16 + 4 + 3*4 + 4

// AppendV1 appends h laid out as uuid[16] · message_length u32 · sender_id ·
// tracker_id · verification_data (each u32 length + bytes) · compression u32,
// all little-endian (header_v1.rs serialize).
func AppendV1(dst []byte, h *HeaderV1) []byte {
	dst = append(dst, h.UUID[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, h.MessageLength)
	for _, s := range [][]byte{h.SenderID, h.TrackerID, h.VerificationData} {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
		dst = append(dst, s...)
	}
	return binary.LittleEndian.AppendUint32(dst, h.Compression)
}

// ParseV1 parses a HeaderV1. A compression value other than 0, 1 or 2 fails
// with ErrMalformed, as lib-net's Compression::from_u32 does. Bytes after the
// compression field are ignored, as lib-net's cursor ignores them.
func ParseV1(b []byte) (HeaderV1, error) {
	r := reader{b: b}
	var h HeaderV1
	if len(b) >= 16 {
		copy(h.UUID[:], b)
		r.off = 16
	} else {
		r.fail(ErrTruncated)
	}
	h.MessageLength = r.u32()
	h.SenderID = r.bytes(uint64(r.u32()), len(b), ErrFieldTooLarge)
	h.TrackerID = r.bytes(uint64(r.u32()), len(b), ErrFieldTooLarge)
	h.VerificationData = r.bytes(uint64(r.u32()), len(b), ErrFieldTooLarge)
	h.Compression = r.u32()
	if r.err != nil {
		return HeaderV1{}, r.err
	}
	if h.Compression > CodeBrotli {
		return HeaderV1{}, fmt.Errorf("%w: compression %d", ErrMalformed, h.Compression)
	}
	return h, nil
}

// Message directions of the raw header (augData msgDir in lib-net).
const (
	DirTell = 1
	DirAsk  = 2
	DirResp = 3
)

// Raw header flag bits.
const (
	FlagCompressionMask = 0x07 // compression code
	FlagTrace           = 0x08 // three trace timestamps follow the route
	flagsKnown          = FlagCompressionMask | FlagTrace
)

// RawFixedLen is the length of the raw header without sender id, route and
// trace timestamps.
const RawFixedLen = 24

// RawTraceLen is the length of the optional trace block.
const RawTraceLen = 24

// RawHeader is the raw-lane header (version 2). Layout, little-endian:
//
//	0   uuid        [16]byte
//	16  dir         u8   1 tell, 2 ask, 3 resp
//	17  flags       u8   bits 0-2 compression code, bit 3 trace
//	18  sender_len  u8
//	19  route_len   u8
//	20  raw_len     u32  payload length before compression
//	24  sender_id   [sender_len]byte
//	..  route       [route_len]byte
//	..  trace       3 x i64 unix ns: send, receive, reply (if bit 3)
//
// SenderID and Route alias the parsed buffer.
type RawHeader struct {
	UUID        [16]byte
	Dir         uint8
	Flags       uint8
	RawLen      uint32
	SenderID    []byte
	Route       []byte
	SendTime    int64
	ReceiveTime int64
	ReplyTime   int64
}

// RawLen returns the encoded length of a raw header with these flags,
// sender id and route.
func RawLen(flags uint8, senderID, route string) int {
	n := RawFixedLen + len(senderID) + len(route)
	if flags&FlagTrace != 0 {
		n += RawTraceLen
	}
	return n
}

// AppendRaw appends h with senderID and route in place of h.SenderID and
// h.Route (so callers need not convert strings); each at most 255 bytes.
func AppendRaw(dst []byte, h *RawHeader, senderID, route string) []byte {
	dst = append(dst, h.UUID[:]...)
	dst = append(dst, h.Dir, h.Flags, uint8(len(senderID)), uint8(len(route)))
	dst = binary.LittleEndian.AppendUint32(dst, h.RawLen)
	dst = append(dst, senderID...)
	dst = append(dst, route...)
	if h.Flags&FlagTrace != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.SendTime))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.ReceiveTime))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(h.ReplyTime))
	}
	return dst
}

// ParseRaw parses a raw header. Unknown flag bits, an unknown direction or
// compression code fail with ErrMalformed; the header must be consumed
// exactly (ErrLengthMismatch otherwise).
func ParseRaw(b []byte) (RawHeader, error) {
	if len(b) < RawFixedLen {
		return RawHeader{}, ErrTruncated
	}
	var h RawHeader
	copy(h.UUID[:], b)
	h.Dir, h.Flags = b[16], b[17]
	if h.Dir < DirTell || h.Dir > DirResp || h.Flags&^flagsKnown != 0 || h.Flags&FlagCompressionMask > CodeZstd {
		return RawHeader{}, fmt.Errorf("%w: dir %d flags %#x", ErrMalformed, h.Dir, h.Flags)
	}
	r := reader{b: b, off: 20}
	h.RawLen = r.u32()
	h.SenderID = r.bytes(uint64(b[18]), len(b), ErrFieldTooLarge)
	h.Route = r.bytes(uint64(b[19]), len(b), ErrFieldTooLarge)
	if h.Flags&FlagTrace != 0 {
		h.SendTime = int64(r.u64())
		h.ReceiveTime = int64(r.u64())
		h.ReplyTime = int64(r.u64())
	}
	if r.err != nil {
		return RawHeader{}, r.err
	}
	if r.off != len(b) {
		return RawHeader{}, fmt.Errorf("%w: %d trailing header bytes", ErrLengthMismatch, len(b)-r.off)
	}
	return h, nil
}
