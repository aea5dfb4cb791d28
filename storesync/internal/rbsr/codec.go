package rbsr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
)

// Codec errors. Decoding errors wrap ErrMalformed.
var (
	// ErrMalformed is returned for a payload that does not decode.
	ErrMalformed = errors.New("storesync: malformed payload")
	// ErrUnordered is returned for a payload whose ranges do not follow
	// one another in increasing order, or whose item sets are not in
	// increasing order (see the package doc, "Bounds"). It wraps
	// ErrMalformed.
	ErrUnordered = fmt.Errorf("%w: out of order", ErrMalformed)
)

// Bounds of a payload's topic lists.
const (
	hashLen = len(message.Hash{})
	// MaxTopics bounds the topic lists of a payload, and MaxTopicLen each
	// topic's length in bytes: far above any real configuration, they only
	// stop a hostile count from allocating.
	MaxTopics   = 1024
	MaxTopicLen = 1024
	// minItemLen is the fewest bytes an item of an item set takes: a
	// 1-byte time delta and a hash.
	minItemLen = 1 + hashLen
)

// AppendPayload appends p's encoding (nwaku's RangesData.deltaEncode, see
// the package doc) to dst and returns it. A payload without ranges encodes
// as the single byte 0x00. p's ranges are written as they are: that they
// follow one another is the caller's to ensure.
func AppendPayload(dst []byte, p *Payload) []byte {
	if len(p.Ranges) == 0 {
		return append(dst, 0)
	}
	w := newPayloadWriter(dst, p.PubsubTopics, p.ContentTopics)
	for i := range p.Ranges {
		w.add(&p.Ranges[i])
	}
	return w.buf
}

// payloadWriter encodes a payload one range at a time.
type payloadWriter struct {
	buf   []byte
	start int // where the payload begins in buf
	n     int // ranges written
	last  uint64
	// nwaku compares every zero-delta bound's hash with the first lower
	// bound's hash, not with the previous bound's: so do we.
	ref message.Hash
}

func newPayloadWriter(dst []byte, pubsubTopics, contentTopics []string) payloadWriter {
	w := payloadWriter{start: len(dst)}
	w.buf = appendTopics(dst, pubsubTopics)
	w.buf = appendTopics(w.buf, contentTopics)
	return w
}

func (w *payloadWriter) add(r *Range) {
	if w.n == 0 {
		w.buf = protowire.AppendVarint(w.buf, uint64(r.Lower.Time))
		w.last, w.ref = uint64(r.Lower.Time), r.Lower.Hash
	}
	w.n++
	diff := uint64(r.Upper.Time) - w.last
	w.last = uint64(r.Upper.Time)
	w.buf = protowire.AppendVarint(w.buf, diff)
	if diff == 0 {
		n := prefixLen(w.ref, r.Upper.Hash)
		w.buf = append(w.buf, byte(n))
		w.buf = append(w.buf, r.Upper.Hash[:n]...)
	}
	w.buf = append(w.buf, byte(r.Type))
	switch r.Type {
	case FingerprintRange:
		w.buf = append(w.buf, r.Fingerprint[:]...)
	case ItemSetRange:
		if n := len(r.Items.IDs); n > 0 {
			// Room for the whole set at once: a buffer grown by steps
			// allocates several times its final size.
			w.buf = Grow(w.buf, binary.MaxVarintLen64+n*(binary.MaxVarintLen64+hashLen)+1)
		}
		w.buf = appendItemSet(w.buf, &r.Items)
	}
}

// empty replaces what w wrote with the encoding of a payload without
// ranges.
func (w *payloadWriter) empty() []byte {
	w.buf = append(w.buf[:w.start], 0)
	return w.buf
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
// empty payload, as nwaku reads it. The payload is checked whole, order
// included, before anything is allocated for its ranges, then decoded
// into exactly sized slices; a run of consecutive skip ranges comes back
// as one skip range. It allocates at most 51 bytes per byte of buf (see
// the package doc, "Bounds"). The result does not alias buf. Errors wrap
// ErrMalformed; ErrUnordered for ranges or items out of order.
func DecodePayload(buf []byte) (*Payload, error) {
	in, err := ParsePayload(buf)
	if err != nil {
		return nil, err
	}
	p := &Payload{PubsubTopics: in.PubsubTopics, ContentTopics: in.ContentTopics}
	if in.merged == 0 {
		return p, nil
	}
	p.Ranges = make([]Range, 0, in.merged)
	rr := in.ranges(keepItems)
	rr.items = make([]SyncID, 0, in.items)
	var r Range
	for rr.next(&r) {
		if n := len(p.Ranges); n > 0 && r.Type == Skip && p.Ranges[n-1].Type == Skip {
			p.Ranges[n-1].Upper = r.Upper
			continue
		}
		p.Ranges = append(p.Ranges, r)
	}
	return p, rr.d.err
}

// Received is a payload as read off the wire and checked whole by
// ParsePayload: its topic lists are decoded, its ranges are left encoded
// in buf for Storage.Process to read one at a time. The topic lists may be
// narrowed (to those both sides sync) before it is processed.
type Received struct {
	PubsubTopics, ContentTopics []string
	buf                         []byte
	body                        int  // offset of the first lower bound's timestamp; 0: no ranges
	count                       int  // ranges
	merged                      int  // ranges, each run of consecutive skips counted once
	items                       int  // items of all item sets
	largestSet                  int  // items of the largest item set
	fingerprints                int  // fingerprint ranges
	skipsOnly                   bool // no range but skips: the exchange is over
}

// ParsePayload checks buf as a payload: every range and item is read and
// checked (order included) without being kept, so that a payload is
// refused whole before any work is done for it. It allocates only the
// topic lists. Errors wrap ErrMalformed.
func ParsePayload(buf []byte) (*Received, error) {
	p := &Received{buf: buf, skipsOnly: true}
	if len(buf) <= 1 {
		return p, nil
	}
	d := decoder{buf: buf}
	p.PubsubTopics = d.topics()
	p.ContentTopics = d.topics()
	if d.err != nil {
		return nil, d.err
	}
	p.body = d.off
	rr := p.ranges(checkOnly)
	var r Range
	lastSkip := false
	for rr.next(&r) {
		p.count++
		if r.Type != Skip || !lastSkip {
			p.merged++
		}
		lastSkip = r.Type == Skip
		p.skipsOnly = p.skipsOnly && r.Type == Skip
		if r.Type == FingerprintRange {
			p.fingerprints++
		}
	}
	if rr.d.err != nil {
		return nil, rr.d.err
	}
	p.items, p.largestSet = rr.counted, rr.largest
	return p, nil
}

// itemMode says what a rangeReader does with the items it reads.
type itemMode uint8

const (
	checkOnly  itemMode = iota // check and count them, keep none
	keepItems                  // append them all to items
	reuseItems                 // keep only the current range's, in items
)

// Ranges returns the number of ranges p holds.
func (p *Received) Ranges() int { return p.count }

// SkipsOnly reports whether p holds no range but skips (or none): the
// exchange is over.
func (p *Received) SkipsOnly() bool { return p.skipsOnly }

// ranges returns a reader of p's ranges.
func (p *Received) ranges(mode itemMode) rangeReader {
	rr := rangeReader{d: decoder{buf: p.buf, off: p.body}, mode: mode}
	if p.body == 0 {
		rr.d.off = len(p.buf) // no ranges
		return rr
	}
	first := rr.d.varint("first timestamp")
	if first > math.MaxInt64 {
		rr.d.failWith(ErrUnordered, "first timestamp %d past 2^63-1", first)
	}
	rr.prev = SyncID{Time: int64(first)}
	return rr
}

// rangeReader reads the ranges of a payload one at a time and checks each
// as it reads it: each upper bound must be above the previous one (above
// the first lower bound, for the first range), every timestamp within
// int64, and each item set's items in strictly increasing order. A range's
// lower bound is the previous upper bound's timestamp with a zero hash, as
// nwaku decodes it.
type rangeReader struct {
	d       decoder
	mode    itemMode
	prev    SyncID   // the last upper bound read; at first, the first lower bound
	items   []SyncID // keepItems, reuseItems: where items go
	counted int      // items read
	largest int      // items of the largest item set read
}

// next reads the next range into r and reports whether there was one; at
// the end of the payload or on an error (in rr.d.err) it returns false.
// r.Items.IDs aliases rr.items, with len == cap; in reuseItems mode it
// holds only until the next call.
func (rr *rangeReader) next(r *Range) bool {
	d := &rr.d
	if d.err != nil || d.off >= len(d.buf) {
		return false
	}
	*r = Range{Bounds: Bounds{Lower: SyncID{Time: rr.prev.Time}}}
	diff := d.varint("bound timestamp")
	t, ok := addTime(uint64(rr.prev.Time), diff)
	if !ok {
		d.failWith(ErrUnordered, "bound timestamp %d + %d past 2^63-1", rr.prev.Time, diff)
		return false
	}
	r.Upper.Time = t
	if diff == 0 {
		d.hashPrefix(&r.Upper.Hash)
	}
	if d.err == nil && r.Upper.Compare(rr.prev) <= 0 {
		d.failWith(ErrUnordered, "upper bound %s not above %s", r.Upper, rr.prev)
		return false
	}
	rr.prev = r.Upper
	r.Type = RangeType(d.byte("range type"))
	switch r.Type {
	case Skip:
	case FingerprintRange:
		d.hash(&r.Fingerprint)
	case ItemSetRange:
		r.Items = rr.itemSet()
	default:
		d.fail("unknown range type %d", r.Type)
	}
	return d.err == nil
}

// addTime adds a time delta to a timestamp, false past math.MaxInt64.
func addTime(t, diff uint64) (int64, bool) {
	sum := t + diff
	if sum < t || sum > math.MaxInt64 {
		return 0, false
	}
	return int64(sum), true
}

func (rr *rangeReader) itemSet() ItemSet {
	d := &rr.d
	n := d.varint("item count")
	// Check the count against what is left before allocating for it.
	if n > uint64((len(d.buf)-d.off)/minItemLen) {
		d.fail("item set of %d items in %d bytes", n, len(d.buf)-d.off)
		return ItemSet{}
	}
	if rr.mode == reuseItems {
		rr.items = rr.items[:0]
	}
	start := len(rr.items)
	var last uint64
	var prev SyncID
	for i := uint64(0); i < n && d.err == nil; i++ {
		diff := d.varint("item timestamp")
		t, ok := addTime(last, diff)
		if !ok {
			d.failWith(ErrUnordered, "item timestamp %d + %d past 2^63-1", last, diff)
			break
		}
		last = uint64(t)
		id := SyncID{Time: t}
		d.hash(&id.Hash)
		if i > 0 && id.Compare(prev) <= 0 {
			d.failWith(ErrUnordered, "item %s not above %s", id, prev)
			break
		}
		prev = id
		if rr.mode != checkOnly {
			rr.items = append(rr.items, id)
		}
	}
	rr.counted += int(n)
	rr.largest = max(rr.largest, int(n))
	var s ItemSet
	if rr.mode != checkOnly {
		s.IDs = rr.items[start:len(rr.items):len(rr.items)]
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

// decoder reads a payload; the first error sticks and stops every read.
type decoder struct {
	buf []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) { d.failWith(ErrMalformed, format, args...) }

func (d *decoder) failWith(sentinel error, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", sentinel, d.off, fmt.Sprintf(format, args...))
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

// topics reads a topic list. Its count is checked against the bytes left
// (each topic takes at least 2) before anything is allocated.
func (d *decoder) topics() []string {
	n := d.varint("topic count")
	if n > MaxTopics || n > uint64(len(d.buf)-d.off)/2 {
		d.fail("%d topics in %d bytes (at most %d)", n, len(d.buf)-d.off, MaxTopics)
		return nil
	}
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		l := d.varint("topic length")
		if l == 0 || l > MaxTopicLen {
			d.fail("topic of %d bytes (want 1 to %d)", l, MaxTopicLen)
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
