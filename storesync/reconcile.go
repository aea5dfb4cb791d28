package storesync

import "github.com/couriernet/courier/message"

// Diff is what processing a payload found.
type Diff struct {
	// ToSend are hashes this side holds and the peer lacks.
	ToSend []message.Hash
	// ToRecv are hashes the peer holds and this side lacks.
	ToRecv []message.Hash
	// Empty are ranges this side told the peer it holds nothing in: the
	// peer will send whatever it has there, unnamed.
	Empty []Bounds
}

// Process answers one received payload (nwaku's SeqStorage.processPayload)
// and returns the reply and the differences found. Items are compared only
// where both topic filters of in pass. The reply carries no topics: the
// caller sets its own. A reply of only skips is returned empty, which ends
// the exchange.
func (s *Storage) Process(in *Payload) (out *Payload, d Diff) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.filter(in.PubsubTopics, in.ContentTopics)
	out = new(Payload)
	for i := range in.Ranges {
		r := &in.Ranges[i]
		switch r.Type {
		case Skip:
			out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: Skip})
		case FingerprintRange:
			s.processFingerprint(r, f, out, &d)
		case ItemSetRange:
			s.processItemSet(r, f, out, &d)
		}
	}
	out.Ranges = mergeSkips(out.Ranges)
	if out.done() {
		out.Ranges = nil
	}
	return out, d
}

// processFingerprint compares the peer's fingerprint of r with ours: equal
// is a skip; otherwise r goes back as our item set when it holds at most
// threshold items, else split into partitions, each an item set or a
// fingerprint.
func (s *Storage) processFingerprint(r *Range, f topicFilter, out *Payload, d *Diff) {
	lo, hi, ok := s.find(r.Bounds)
	if s.fingerprint(lo, hi, f) == r.Fingerprint {
		out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: Skip})
		return
	}
	if !ok {
		out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
		d.Empty = append(d.Empty, r.Bounds)
		return
	}
	parts := partition(r.Bounds, s.partitions)
	if hi-lo <= s.threshold || parts == nil {
		// nwaku drops a range it cannot split; its items are the answer.
		out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{IDs: s.ids(lo, hi, f)}})
		return
	}
	for _, b := range parts {
		lo, hi, ok := s.find(b)
		switch {
		case !ok:
			out.Ranges = append(out.Ranges, Range{Bounds: b, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
			d.Empty = append(d.Empty, b)
		case hi-lo <= s.threshold:
			out.Ranges = append(out.Ranges, Range{Bounds: b, Type: ItemSetRange, Items: ItemSet{IDs: s.ids(lo, hi, f)}})
		default:
			out.Ranges = append(out.Ranges, Range{Bounds: b, Type: FingerprintRange, Fingerprint: s.fingerprint(lo, hi, f)})
		}
	}
}

// processItemSet compares the peer's items in r with ours, element by
// element, and records the differences. An item set the peer has not
// reconciled yet goes back as ours, marked reconciled; else r is a skip.
func (s *Storage) processItemSet(r *Range, f topicFilter, out *Payload, d *Diff) {
	theirs := r.Items.IDs
	lo, hi, ok := s.find(r.Bounds)
	if !ok {
		// We hold nothing here: all of theirs is missing on this side.
		d.ToRecv = append(d.ToRecv, hashes(theirs)...)
		if r.Items.Reconciled {
			out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: Skip})
		} else {
			out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{Reconciled: true}})
		}
		return
	}
	ours := s.ids(lo, hi, f)
	i, j := 0, 0
	for i < len(theirs) && j < len(ours) {
		switch c := theirs[i].Compare(ours[j]); {
		case c < 0:
			d.ToRecv = append(d.ToRecv, theirs[i].Hash)
			i++
		case c > 0:
			d.ToSend = append(d.ToSend, ours[j].Hash)
			j++
		default:
			i++
			j++
		}
	}
	d.ToRecv = append(d.ToRecv, hashes(theirs[i:])...)
	d.ToSend = append(d.ToSend, hashes(ours[j:])...)
	if r.Items.Reconciled {
		out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: Skip})
	} else {
		out.Ranges = append(out.Ranges, Range{Bounds: r.Bounds, Type: ItemSetRange, Items: ItemSet{IDs: ours, Reconciled: true}})
	}
}

// mergeSkips joins consecutive skip ranges into one.
func mergeSkips(rs []Range) []Range {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Type == Skip && out[n-1].Type == Skip {
			out[n-1].Upper = r.Upper
			continue
		}
		out = append(out, r)
	}
	return out
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
