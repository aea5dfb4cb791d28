// Package rbsr is store-sync's range-based set reconciliation: the
// (timestamp, message hash) items and their ranges, the index of what a
// node holds (Storage), the payload codec in nwaku's encoding, and the
// processing of a received payload into a reply and the differences found.
// Package storesync runs it over libp2p; its package doc describes the
// protocol, nwaku's wire format and the bounds every payload is held to.
package rbsr

import (
	"bytes"
	"fmt"

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

// String returns id as its time and its hash's first 4 bytes in hex,
// "1700000000000000000/0a1b2c3d".
func (a SyncID) String() string { return fmt.Sprintf("%d/%x", a.Time, a.Hash[:4]) }

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
// it covers (empty means all) and consecutive ranges, in increasing order.
type Payload struct {
	PubsubTopics  []string
	ContentTopics []string
	Ranges        []Range
}

// Window returns the bounds that hold every item timed from lower through
// upper (Unix ns), both included: the upper bound carries the largest
// hash.
func Window(lower, upper int64) Bounds {
	return Bounds{Lower: SyncID{Time: lower}, Upper: SyncID{Time: upper, Hash: fullHash}}
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
