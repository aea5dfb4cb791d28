package rbsr

import (
	"errors"
	"fmt"

	"github.com/couriernet/courier/message"
)

// ErrTooManyDifferences ends a session that would pass one of its bounds
// on differences: the items listed in its replies, the hashes to push, or
// what this side expects over transfer (see the package doc, "Bounds").
var ErrTooManyDifferences = errors.New("storesync: too many differences")

// Diff is what processing a payload found.
type Diff struct {
	// ToSend are hashes this side holds and the peer lacks.
	ToSend []message.Hash
	// ToRecv are hashes the peer holds and this side lacks.
	ToRecv []message.Hash
	// Empty are ranges this side told the peer it holds nothing in, in
	// increasing order: the peer will send whatever it has there, unnamed.
	Empty []Bounds
}

// Process answers one received payload (nwaku's
// SeqStorage.processPayload), range by range as it reads them, and returns
// the encoded reply, with pubsubTopics and contentTopics as its topic
// lists, and the differences found. Items are compared only where both
// topic lists of in pass. A reply of only skips is the single byte 0x00,
// which ends the exchange.
//
// Each held item is looked at within one range of in at most (the ranges
// are in order, see ParsePayload), so one payload costs O(len(in.buf) +
// held items) and its reply holds at most each held item once. *listed is
// the number of items the session's replies may still list; it fails with
// ErrTooManyDifferences past it.
func (s *Storage) Process(in *Received, pubsubTopics, contentTopics []string, listed *int) ([]byte, Diff, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Slices sized for the most the payload can ask, so that none grows
	// by steps (1.25 times each, for large slices: 5 times its final size
	// allocated in all): the reply as large as the payload (more when it
	// lists held items), a hash missing here for each of theirs, an empty
	// range for each fingerprint range (more when split).
	p := processor{s: s, f: s.filter(in.PubsubTopics, in.ContentTopics), listed: listed,
		out: reply{w: newPayloadWriter(make([]byte, 0, len(in.buf)), pubsubTopics, contentTopics)}}
	if in.items > 0 {
		p.d.ToRecv = make([]message.Hash, 0, in.items)
	}
	if in.fingerprints > 0 {
		p.d.Empty = make([]Bounds, 0, in.fingerprints)
	}
	rr := in.ranges(reuseItems)
	rr.items = make([]SyncID, 0, in.largestSet)
	var r Range
	for rr.next(&r) {
		var err error
		switch r.Type {
		case Skip:
			p.out.add(&r)
		case FingerprintRange:
			err = p.fingerprint(&r)
		case ItemSetRange:
			err = p.itemSet(&r)
		}
		if err != nil {
			return nil, Diff{}, err
		}
	}
	if rr.d.err != nil {
		return nil, Diff{}, rr.d.err
	}
	return p.out.finish(), p.d, nil
}

// processor is the state of process over one payload.
type processor struct {
	s      *Storage
	f      topicFilter
	floor  int // items below this index were within an earlier range
	listed *int
	out    reply
	d      Diff
	ours   []SyncID // scratch for the items held in a range
}

// span returns the items within b that lie at or after p.floor and moves
// p.floor past them.
func (p *processor) span(b Bounds) (lo, hi int, ok bool) {
	lo, hi, ok = p.s.span(b, p.floor)
	p.floor = hi
	return lo, hi, ok
}

// ids lists the items of [lo, hi) that pass the filter, charged to the
// session's budget.
func (p *processor) ids(lo, hi int) ([]SyncID, error) {
	p.ours = p.s.ids(Grow(p.ours[:0], hi-lo), lo, hi, p.f)
	if len(p.ours) > *p.listed {
		return nil, fmt.Errorf("%w: the session's replies would list over %d items", ErrTooManyDifferences, len(p.ours)+*p.listed)
	}
	*p.listed -= len(p.ours)
	return p.ours, nil
}

// fingerprint compares the peer's fingerprint of r with ours: equal is a
// skip; otherwise r goes back as our item set when it holds at most
// threshold items, else split into partitions, each an item set or a
// fingerprint.
func (p *processor) fingerprint(r *Range) error {
	lo, hi, ok := p.span(r.Bounds)
	if p.s.fingerprint(lo, hi, p.f) == r.Fingerprint {
		p.out.add(&Range{Bounds: r.Bounds, Type: Skip})
		return nil
	}
	if !ok {
		p.out.add(&Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
		p.d.Empty = append(p.d.Empty, r.Bounds)
		return nil
	}
	parts := partition(r.Bounds, p.s.partitions)
	if hi-lo <= p.s.threshold || parts == nil {
		// nwaku drops a range it cannot split; its items are the answer.
		ours, err := p.ids(lo, hi)
		if err != nil {
			return err
		}
		p.out.add(&Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{IDs: ours}})
		return nil
	}
	floor := lo
	for _, b := range parts {
		lo, hi, ok := p.s.span(b, floor)
		floor = hi
		switch {
		case !ok:
			p.out.add(&Range{Bounds: b, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
			p.d.Empty = append(p.d.Empty, b)
		case hi-lo <= p.s.threshold:
			ours, err := p.ids(lo, hi)
			if err != nil {
				return err
			}
			p.out.add(&Range{Bounds: b, Type: ItemSetRange, Items: ItemSet{IDs: ours}})
		default:
			p.out.add(&Range{Bounds: b, Type: FingerprintRange, Fingerprint: p.s.fingerprint(lo, hi, p.f)})
		}
	}
	return nil
}

// itemSet compares the peer's items in r with ours, element by element,
// and records the differences. An item set the peer has not reconciled
// yet goes back as ours, marked reconciled; else r is a skip.
func (p *processor) itemSet(r *Range) error {
	theirs := r.Items.IDs
	lo, hi, ok := p.span(r.Bounds)
	if !ok {
		// We hold nothing here: all of theirs is missing on this side.
		for _, id := range theirs {
			p.d.ToRecv = append(p.d.ToRecv, id.Hash)
		}
		if r.Items.Reconciled {
			p.out.add(&Range{Bounds: r.Bounds, Type: Skip})
		} else {
			p.out.add(&Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
		}
		return nil
	}
	var ours []SyncID
	if r.Items.Reconciled {
		ours = p.s.ids(Grow(p.ours[:0], hi-lo), lo, hi, p.f) // compared, not listed
		p.ours = ours
	} else {
		var err error
		if ours, err = p.ids(lo, hi); err != nil {
			return err
		}
	}
	p.d.ToSend = Grow(p.d.ToSend, len(ours))
	i, j := 0, 0
	for i < len(theirs) && j < len(ours) {
		switch c := theirs[i].Compare(ours[j]); {
		case c < 0:
			p.d.ToRecv = append(p.d.ToRecv, theirs[i].Hash)
			i++
		case c > 0:
			p.d.ToSend = append(p.d.ToSend, ours[j].Hash)
			j++
		default:
			i++
			j++
		}
	}
	for _, id := range theirs[i:] {
		p.d.ToRecv = append(p.d.ToRecv, id.Hash)
	}
	for _, id := range ours[j:] {
		p.d.ToSend = append(p.d.ToSend, id.Hash)
	}
	if r.Items.Reconciled {
		p.out.add(&Range{Bounds: r.Bounds, Type: Skip})
	} else {
		p.out.add(&Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{IDs: ours, Reconciled: true}})
	}
	return nil
}

// reply encodes an answer as it is built: consecutive skips are merged
// into one, and an answer of only skips becomes an empty payload.
type reply struct {
	w       payloadWriter
	skip    Bounds // pending skip
	pending bool
	work    bool // a range other than a skip was written
}

func (o *reply) add(r *Range) {
	if r.Type == Skip {
		if o.pending {
			o.skip.Upper = r.Upper
		} else {
			o.skip, o.pending = r.Bounds, true
		}
		return
	}
	o.flush()
	o.w.add(r)
	o.work = true
}

func (o *reply) flush() {
	if o.pending {
		o.w.add(&Range{Bounds: o.skip, Type: Skip})
		o.pending = false
	}
}

func (o *reply) finish() []byte {
	if !o.work {
		return o.w.empty()
	}
	o.flush()
	return o.w.buf
}

// partition splits b into count consecutive time ranges of equal length,
// the remainder spread over the first ones, bounds with zero hashes
// (nwaku's equalPartitioning). It returns nil when b spans fewer
// nanoseconds than count.
func partition(b Bounds, count int) []Bounds {
	total := b.Upper.Time - b.Lower.Time
	if total < int64(count) {
		return nil
	}
	size, rem := total/int64(count), total%int64(count)
	out := make([]Bounds, 0, count)
	lb := b.Lower.Time
	for range count {
		ub := lb + size
		if rem > 0 {
			ub++
			rem--
		}
		out = append(out, Bounds{Lower: SyncID{Time: lb}, Upper: SyncID{Time: ub}})
		lb = ub
	}
	return out
}
