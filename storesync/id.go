package storesync

import (
	"bytes"

	"github.com/couriernet/courier/message"
)

// SyncID identifies one archived message for reconciliation: its timestamp
// in Unix nanoseconds and its deterministic message hash. SyncIDs order by
// time, then by hash compared as big-endian bytes.
type SyncID struct {
	Time int64
	Hash message.Hash
}

// Compare returns -1, 0 or +1 as a sorts before, equal to or after b.
func (a SyncID) Compare(b SyncID) int {
	switch {
	case a.Time < b.Time:
		return -1
	case a.Time > b.Time:
		return 1
	}
	return bytes.Compare(a.Hash[:], b.Hash[:])
}

// Fingerprint is the XOR of the message hashes of a range's items.
type Fingerprint = message.Hash

// Bounds is a range of SyncIDs, inclusive at both ends (nwaku's
// Slice[SyncID]).
type Bounds struct {
	Lower, Upper SyncID
}

// RangeType says what a range of a payload carries.
type RangeType uint8

// Range types (waku-org/specs standards/core/sync.md).
const (
	// Skip: nothing to do for this range (equal, or already reconciled).
	Skip RangeType = 0
	// FingerprintRange: the sender's fingerprint of the range follows.
	FingerprintRange RangeType = 1
	// ItemSetRange: the sender's items in the range follow.
	ItemSetRange RangeType = 2
)

// ItemSet is the items a side holds in a range, in order. Reconciled means
// the sender has already compared the range and needs no item set back.
type ItemSet struct {
	IDs        []SyncID
	Reconciled bool
}

// Range is one range of a payload with what its type carries: Fingerprint
// for FingerprintRange, Items for ItemSetRange.
type Range struct {
	Bounds
	Type        RangeType
	Fingerprint Fingerprint
	Items       ItemSet
}

// Payload is one reconciliation message (nwaku's RangesData): the topics
// it covers (empty means all) and consecutive ranges.
type Payload struct {
	PubsubTopics  []string
	ContentTopics []string
	Ranges        []Range
}

// done reports whether p ends the exchange: no ranges, or only skips.
func (p *Payload) done() bool {
	for _, r := range p.Ranges {
		if r.Type != Skip {
			return false
		}
	}
	return true
}

var (
	zeroHash message.Hash
	fullHash = func() (h message.Hash) {
		for i := range h {
			h[i] = 0xff
		}
		return h
	}()
)
