// Package rbsrtest holds what the tests of package storesync and of its
// reconciliation (rbsr) share: payloads as hostile peers would send them,
// the bounds a reply and a decoded payload are held to, and a measure of
// the bytes a function allocates.
package rbsrtest

import (
	"math"
	"runtime"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
)

// What the payloads are made of, as package rbsr has them (it cannot be
// imported here: its own tests use this package). rbsr's tests check that
// they agree.
const (
	Skip             = 0 // range types (waku-org/specs standards/core/sync.md)
	FingerprintRange = 1
	ItemSetRange     = 2
	MaxTopics        = 1024 // MaxTopics
	ItemSetThreshold = 100  // ItemSetThreshold
)

// The decoder's allocation bound (see the package doc, "Bounds"): a
// decoded Range takes 152 bytes and, consecutive skips merged, the ranges
// of a payload take at least 3 bytes each on average (a 2-byte skip
// between 4-byte empty item sets); an item takes 40 bytes for at least 33.
// The slack covers the topic lists, whose count and length are bounded.
const (
	MaxDecodeAllocPerByte = 51
	DecodeAllocSlack      = 64 << 10
)

// AmplificationPayload is the attack of a peer that alternates a range
// over the whole window holding an empty, unreconciled item set (the node
// answers with every item it holds there, and pushes them all) with a
// skip whose time delta wraps around 2^64 back to the window's start.
func AmplificationPayload(start, end int64, reps int) []byte {
	b := []byte{0, 0} // no topics: all
	b = protowire.AppendVarint(b, uint64(start))
	span := uint64(end - start)
	for i := range reps {
		b = protowire.AppendVarint(b, span)
		b = append(b, byte(ItemSetRange), 0, 0) // no items, not reconciled
		if i < reps-1 {
			b = protowire.AppendVarint(b, -span) // wraps back to start
			b = append(b, byte(Skip))
		}
	}
	return b
}

// ReplyBound is the most a reply may hold for a payload of in bytes
// against an index of n items (see the package doc, "Bounds"): the
// echo of the payload's ranges, each held item listed once (at most 42
// bytes: a time delta and a hash, and 4 for its share of an item set's
// count), and at most 8 ranges of 43 bytes for each split of a range
// holding more than the item-set threshold.
func ReplyBound(in, n int) int {
	return in + 46*n + 8*43*(n/ItemSetThreshold+1) + 64
}

// IDsPayload is one range [lo, hi] holding count items 1 ns apart from
// lo, not reconciled, after the empty topic lists.
func IDsPayload(lo, hi int64, count int, tag byte) []byte {
	b := []byte{0, 0}
	b = protowire.AppendVarint(b, uint64(lo))
	b = protowire.AppendVarint(b, uint64(hi-lo))
	b = append(b, byte(ItemSetRange))
	b = protowire.AppendVarint(b, uint64(count))
	for i := range count {
		if i == 0 {
			b = protowire.AppendVarint(b, uint64(lo))
		} else {
			b = append(b, 1)
		}
		var h message.Hash
		h[0], h[1], h[2], h[3] = tag, byte(i>>16), byte(i>>8), byte(i)
		b = append(b, h[:]...)
	}
	return append(b, 0)
}

// EmptyRangesPayload is ranges where the node holds nothing, each a
// fingerprint range [lo+k*step, lo+k*step+width] (a non-zero fingerprint:
// the node answers that it holds nothing there and expects whatever the
// peer sends), separated by skips.
func EmptyRangesPayload(lo int64, count int, step, width int64) []byte {
	b := []byte{0, 0}
	b = protowire.AppendVarint(b, uint64(lo))
	fp := message.Hash{0x5a}
	for range count {
		b = protowire.AppendVarint(b, uint64(width))
		b = append(b, byte(FingerprintRange))
		b = append(b, fp[:]...)
		b = protowire.AppendVarint(b, uint64(step-width))
		b = append(b, byte(Skip))
	}
	return b
}

// WorstPayloads are the payloads that cost the decoder the most per byte:
// each of about size bytes.
func WorstPayloads(size int) map[string][]byte {
	repeat := func(head, unit []byte) []byte {
		b := append([]byte{}, head...)
		for len(b)+len(unit) <= size {
			b = append(b, unit...)
		}
		return b
	}
	head := []byte{0, 0, 1}
	fp := append([]byte{1, byte(FingerprintRange)}, make([]byte, 32)...)
	item := append([]byte{1}, make([]byte, 32)...)
	items := append([]byte{1, byte(ItemSetRange)}, protowire.AppendVarint(nil, uint64(size/34))...)
	for range size / 34 {
		items = append(items, item...)
		item[1]++ // distinct hashes
		if item[1] == 0 {
			item[2]++
		}
	}
	items = append(items, 0)
	topics := protowire.AppendVarint(nil, MaxTopics)
	for i := range MaxTopics {
		topics = append(topics, 2, '/', byte('a'+i%26))
	}
	topics = append(topics, 0, 1, 1, 0)
	return map[string][]byte{
		"skips":                 repeat(head, []byte{1, byte(Skip)}),
		"skip and empty set":    repeat(head, []byte{1, byte(Skip), 1, byte(ItemSetRange), 0, 1}),
		"empty item sets":       repeat(head, []byte{1, byte(ItemSetRange), 0, 0}),
		"fingerprints":          repeat(head, fp),
		"one large item set":    append(append([]byte{}, head...), items...),
		"most topics, tiny ids": topics,
	}
}

// BytesAllocated returns the bytes f allocates, the least of three runs
// (the test runs on one goroutine; the least run excludes other
// goroutines' allocations).
func BytesAllocated(f func()) uint64 {
	best := uint64(math.MaxUint64)
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		f()
		runtime.ReadMemStats(&m1)
		best = min(best, m1.TotalAlloc-m0.TotalAlloc)
	}
	return best
}
