// Package wire lays out and parses lib-net frames: the headered container
// (lib-net message.rs, header_factory.rs), HeaderV1 and the raw-lane header
// (version 2).
// Parsers never panic and return slices that alias their input.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame markers and header versions (lib-net header_factory.rs).
const (
	Marker     = 0x01 // first payload byte of a headered frame
	JSONMarker = '{'  // first payload byte of the plain JSON lane
	VersionV1  = 1    // lib-net HeaderV1, JSON augData as data
	VersionRaw = 2    // raw lane: fixed binary header, opaque payload

	MaxOwner     = 32 // owner (Ed25519 public key) bytes, lib-net OWNER_SIZE_LIMIT_IN_BYTES
	MaxSignature = 96 // combined signature bytes, lib-net SIGNATURE_SIZE_LIMIT_IN_BYTES
	OuterLen     = 4  // u32 big-endian frame length
	// ContainerOverhead is the fixed part of a headered frame after the outer
	// length: marker, version and four u32 lengths.
	ContainerOverhead = 1 + 1 + 4*4
)

// Sentinel errors of the parsers. The libnet package re-exports them.
var (
	ErrTruncated       = errors.New("libnet: truncated frame")
	ErrEmptyFrame      = errors.New("libnet: empty frame")
	ErrUnknownVersion  = errors.New("libnet: unknown header version")
	ErrUnknownLane     = errors.New("libnet: unknown lane marker")
	ErrHeaderTooLarge  = errors.New("libnet: header too large")
	ErrPayloadTooLarge = errors.New("libnet: payload too large")
	ErrFieldTooLarge   = errors.New("libnet: field too large")
	ErrLengthMismatch  = errors.New("libnet: length mismatch")
	ErrMalformed       = errors.New("libnet: malformed header")
)

// Limits bound what a parser accepts, in bytes.
type Limits struct {
	Header  int // header bytes (lib-net NetConfig header_size_limit)
	Payload int // data bytes (lib-net NetConfig payload_size_limit)
}

// MaxFrame is the largest outer length a frame within lim can have.
func (lim Limits) MaxFrame() int {
	return ContainerOverhead + lim.Header + lim.Payload + MaxOwner + MaxSignature
}

// Frame is a parsed headered frame. Every slice aliases the parsed buffer.
type Frame struct {
	Version uint8
	Header  []byte
	Data    []byte
	Owner   []byte
	Sig     []byte
	// Signed is the byte range the signature covers: version, header length,
	// header, data length and data (lib-net message.rs serialize_unsigned).
	Signed []byte
}

// reader walks a byte slice; the first failure sticks.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) u8() uint8 {
	if r.err != nil || r.off+1 > len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u32() uint32 {
	if r.err != nil || r.off+4 > len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if r.err != nil || r.off+8 > len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

// bytes returns the next n bytes; n over max fails with tooLarge.
func (r *reader) bytes(n uint64, max int, tooLarge error) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(max) {
		r.fail(fmt.Errorf("%w: %d > %d", tooLarge, n, max))
		return nil
	}
	if uint64(len(r.b)-r.off) < n {
		r.fail(fmt.Errorf("%w: field of %d bytes, %d left", ErrLengthMismatch, n, len(r.b)-r.off))
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

// ParseFrame parses b, the bytes after the outer length of a headered frame
// (b[0] is Marker), as [version][u32 hdr_len][header][u32 data_len][data]
// [u32 owner_len][owner][u32 sig_len][sig], integers little-endian
// (lib-net message.rs). Versions other than VersionV1 and VersionRaw fail
// with ErrUnknownVersion; trailing bytes fail with ErrLengthMismatch.
func ParseFrame(b []byte, lim Limits) (Frame, error) {
	r := reader{b: b}
	if r.u8() != Marker {
		return Frame{}, ErrUnknownLane
	}
	var f Frame
	f.Version = r.u8()
	if r.err == nil && f.Version != VersionV1 && f.Version != VersionRaw {
		return Frame{}, fmt.Errorf("%w: %d", ErrUnknownVersion, f.Version)
	}
	f.Header = r.bytes(uint64(r.u32()), lim.Header, ErrHeaderTooLarge)
	f.Data = r.bytes(uint64(r.u32()), lim.Payload, ErrPayloadTooLarge)
	dataEnd := r.off
	f.Owner = r.bytes(uint64(r.u32()), MaxOwner, ErrFieldTooLarge)
	f.Sig = r.bytes(uint64(r.u32()), MaxSignature, ErrFieldTooLarge)
	if r.err != nil {
		return Frame{}, r.err
	}
	if r.off != len(b) {
		return Frame{}, fmt.Errorf("%w: %d trailing bytes", ErrLengthMismatch, len(b)-r.off)
	}
	f.Signed = b[1:dataEnd:dataEnd]
	return f, nil
}

// AppendStart appends [u32 BE outer length][marker][version][u32 hdr_len];
// the caller appends the header of hdrLen bytes and then AppendDataLen. The
// outer length covers a data section of dataLen bytes and an owner and
// signature section of suffixLen bytes (see SuffixLen).
func AppendStart(dst []byte, version uint8, hdrLen, dataLen, suffixLen int) []byte {
	total := ContainerOverhead - 8 + hdrLen + dataLen + suffixLen
	dst = binary.BigEndian.AppendUint32(dst, uint32(total))
	dst = append(dst, Marker, version)
	return binary.LittleEndian.AppendUint32(dst, uint32(hdrLen))
}

// AppendDataLen appends the u32 data length that follows the header.
func AppendDataLen(dst []byte, dataLen int) []byte {
	return binary.LittleEndian.AppendUint32(dst, uint32(dataLen))
}

// SuffixLen is the byte length of the owner and signature section.
func SuffixLen(owner, sig []byte) int { return 8 + len(owner) + len(sig) }

// AppendSuffix appends [u32 owner_len][owner][u32 sig_len][sig].
func AppendSuffix(dst, owner, sig []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(owner)))
	dst = append(dst, owner...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(sig)))
	return append(dst, sig...)
}
