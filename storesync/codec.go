package storesync

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
)

// Codec errors. Decoding errors wrap ErrMalformed.
var (
	// ErrMalformed is returned for a payload or transfer frame that does
	// not decode.
	ErrMalformed = errors.New("storesync: malformed payload")
)

const (
	hashLen = len(message.Hash{})
	// maxTopics bounds the topic lists of a payload, and maxTopicLen each
	// topic's length in bytes: far above any real configuration, they only
	// stop a hostile count from allocating.
	maxTopics   = 1024
	maxTopicLen = 1024
)

// AppendPayload appends p's encoding (nwaku's RangesData.deltaEncode, see
// the package doc) to dst and returns it. A payload without ranges encodes
// as the single byte 0x00.
func AppendPayload(dst []byte, p *Payload) []byte {
	if len(p.Ranges) == 0 {
		return append(dst, 0)
	}
	dst = appendTopics(dst, p.PubsubTopics)
	dst = appendTopics(dst, p.ContentTopics)
	first := p.Ranges[0].Lower
	dst = protowire.AppendVarint(dst, uint64(first.Time))
	last := uint64(first.Time)
	// nwaku compares every zero-delta bound's hash with the first lower
	// bound's hash, not with the previous bound's: so do we.
	ref := first.Hash
	for i := range p.Ranges {
		r := &p.Ranges[i]
		diff := uint64(r.Upper.Time) - last
		last = uint64(r.Upper.Time)
		dst = protowire.AppendVarint(dst, diff)
		if diff == 0 {
			n := prefixLen(ref, r.Upper.Hash)
			dst = append(dst, byte(n))
			dst = append(dst, r.Upper.Hash[:n]...)
		}
		dst = append(dst, byte(r.Type))
		switch r.Type {
		case FingerprintRange:
			dst = append(dst, r.Fingerprint[:]...)
		case ItemSetRange:
			dst = appendItemSet(dst, &r.Items)
		}
	}
	return dst
}

// prefixLen is the number of bytes of h up to and including the first one
// that differs from ref (32 when they are equal).
func prefixLen(ref, h message.Hash) int {
	for i := range h {
		if h[i] != ref[i] {
			return i + 1
		}
	}
	return hashLen
}

func appendTopics(dst []byte, topics []string) []byte {
	dst = protowire.AppendVarint(dst, uint64(len(topics)))
	for _, t := range topics {
		dst = protowire.AppendVarint(dst, uint64(len(t)))
		dst = append(dst, t...)
	}
	return dst
}

func appendItemSet(dst []byte, s *ItemSet) []byte {
	dst = protowire.AppendVarint(dst, uint64(len(s.IDs)))
	var last uint64
	for _, id := range s.IDs {
		dst = protowire.AppendVarint(dst, uint64(id.Time)-last)
		last = uint64(id.Time)
		dst = append(dst, id.Hash[:]...)
	}
	if s.Reconciled {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// DecodePayload parses one payload. A buffer of at most one byte is an
// empty payload, as nwaku reads it. The result does not alias buf.
// Errors wrap ErrMalformed.
func DecodePayload(buf []byte) (*Payload, error) {
	p := new(Payload)
	if len(buf) <= 1 {
		return p, nil
	}
	d := decoder{buf: buf}
	p.PubsubTopics = d.topics()
	p.ContentTopics = d.topics()
	last := d.varint("first timestamp")
	for d.err == nil && d.off < len(d.buf) {
		r := Range{Bounds: Bounds{Lower: SyncID{Time: int64(last)}}}
		diff := d.varint("bound timestamp")
		last += diff
		r.Upper.Time = int64(last)
		if diff == 0 {
			d.hashPrefix(&r.Upper.Hash)
		}
		r.Type = RangeType(d.byte("range type"))
		switch r.Type {
		case Skip:
		case FingerprintRange:
			d.hash(&r.Fingerprint)
		case ItemSetRange:
			r.Items = d.itemSet()
		default:
			d.fail("unknown range type %d", r.Type)
		}
		p.Ranges = append(p.Ranges, r)
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// decoder reads a payload; the first error sticks and stops every read.
type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrMalformed, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) varint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := protowire.ConsumeVarint(d.buf[d.off:])
	if n < 0 {
		d.fail("bad varint (%s)", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.buf) {
		d.fail("truncated (%s)", what)
		return 0
	}
	b := d.buf[d.off]
	d.off++
	return b
}

func (d *decoder) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.fail("truncated (%s)", what)
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

func (d *decoder) hash(h *message.Hash) { copy(h[:], d.bytes(hashLen, "hash")) }

func (d *decoder) hashPrefix(h *message.Hash) {
	n := int(d.byte("hash prefix length"))
	if n > hashLen {
		d.fail("hash prefix of %d bytes", n)
		return
	}
	copy(h[:], d.bytes(n, "hash prefix"))
}

func (d *decoder) topics() []string {
	n := d.varint("topic count")
	if n > maxTopics {
		d.fail("%d topics (at most %d)", n, maxTopics)
		return nil
	}
	var out []string
	for i := uint64(0); i < n && d.err == nil; i++ {
		l := d.varint("topic length")
		if l > maxTopicLen {
			d.fail("topic of %d bytes (at most %d)", l, maxTopicLen)
			return nil
		}
		b := d.bytes(int(l), "topic")
		if d.err == nil && !utf8.Valid(b) {
			d.fail("topic is not UTF-8")
		}
		out = append(out, string(b))
	}
	return out
}

func (d *decoder) itemSet() ItemSet {
	n := d.varint("item count")
	// Each item takes at least a 1-byte time delta and a hash: check the
	// count against what is left before allocating for it.
	if n > uint64((len(d.buf)-d.off)/(hashLen+1)) {
		d.fail("item set of %d items in %d bytes", n, len(d.buf)-d.off)
		return ItemSet{}
	}
	s := ItemSet{IDs: make([]SyncID, 0, n)}
	var last uint64
	for i := uint64(0); i < n && d.err == nil; i++ {
		last += d.varint("item timestamp")
		id := SyncID{Time: int64(last)}
		d.hash(&id.Hash)
		s.IDs = append(s.IDs, id)
	}
	switch d.byte("reconciled flag") {
	case 0:
	case 1:
		s.Reconciled = true
	default:
		d.fail("reconciled flag not 0 or 1")
	}
	return s
}

// AppendMessageAndTopic appends a WakuMessageAndTopic as nwaku v0.38.1
// writes it (waku_store_sync/codec.nim): pubsub topic as field 1, the
// encoded WakuMessage as field 2 (the spec has them the other way round).
// wire is written as it is, never re-encoded.
func AppendMessageAndTopic(dst []byte, pubsubTopic string, wire []byte) []byte {
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, pubsubTopic)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendBytes(dst, wire)
}

// DecodeMessageAndTopic reads a WakuMessageAndTopic in nwaku's field order
// or the spec's and returns the pubsub topic and the encoded WakuMessage.
// wire aliases buf, with len == cap. Which field is which is told by content: the topic is
// UTF-8 starting with '/', the message a valid WakuMessage. Errors wrap
// ErrMalformed.
func DecodeMessageAndTopic(buf []byte) (pubsubTopic string, wire []byte, err error) {
	var f1, f2 []byte
	var have1, have2 bool
	for b := buf; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, fmt.Errorf("%w: transfer frame: bad tag", ErrMalformed)
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", nil, fmt.Errorf("%w: transfer frame: bad field %d", ErrMalformed, num)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", nil, fmt.Errorf("%w: transfer frame: truncated field %d", ErrMalformed, num)
		}
		v = v[:len(v):len(v)] // an append to wire must never write into buf
		b = b[n:]
		if num == 1 {
			f1, have1 = v, true
		} else {
			f2, have2 = v, true
		}
	}
	if !have1 || !have2 {
		return "", nil, fmt.Errorf("%w: transfer frame needs a pubsub topic and a message", ErrMalformed)
	}
	if isTopic(f1) && !isTopic(f2) {
		return string(f1), f2, nil
	}
	if isTopic(f2) && !isTopic(f1) {
		return string(f2), f1, nil
	}
	// Both look like topics: nwaku's order, whose message field then fails
	// to decode later with a clear error.
	return string(f1), f2, nil
}

// isTopic reports whether b looks like a pubsub topic: short UTF-8 text
// starting with '/'. An encoded WakuMessage starts with a tag byte (0x0a
// for its payload field), never '/'.
func isTopic(b []byte) bool {
	return len(b) > 0 && len(b) <= maxTopicLen && b[0] == '/' && utf8.Valid(b)
}
