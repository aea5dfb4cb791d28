package rbsr

import (
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/storesync/internal/rbsrtest"
)

// TestDecodePayloadAllocationBound: DecodePayload allocates at most
// rbsrtest.MaxDecodeAllocPerByte bytes per byte of its input, plus
// rbsrtest.DecodeAllocSlack, for the worst payloads found.
func TestDecodePayloadAllocationBound(t *testing.T) {
	for name, b := range rbsrtest.WorstPayloads(1 << 20) {
		t.Run(name, func(t *testing.T) {
			var err error
			n := rbsrtest.BytesAllocated(func() { _, err = DecodePayload(b) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in, %d allocated: %.1f per byte", len(b), n, float64(n)/float64(len(b)))
			if limit := rbsrtest.MaxDecodeAllocPerByte*uint64(len(b)) + rbsrtest.DecodeAllocSlack; n > limit {
				t.Fatalf("decoding %d bytes allocated %d (%.1f per byte); want at most %d", len(b), n, float64(n)/float64(len(b)), limit)
			}
		})
	}
}

// TestDecodePayloadRefusesUnordered: ranges must follow one another with
// strictly increasing upper bounds, each above its lower bound, and the
// items of an item set must be strictly increasing, all within int64:
// anything else is refused. What an honest nwaku peer sends is accepted.
func TestDecodePayloadRefusesUnordered(t *testing.T) {
	hash := func(b byte) []byte { h := make([]byte, 32); h[0] = b; return h }
	v := func(x uint64) []byte { return protowire.AppendVarint(nil, x) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	head := []byte{0, 0}
	refused := map[string][]byte{
		"delta wraps back":           cat(head, v(1000), v(100), []byte{0}, v(math.MaxUint64-49), []byte{0}),
		"bound past int64":           cat(head, v(1000), v(math.MaxInt64), []byte{0}),
		"first timestamp past int64": cat(head, v(math.MaxInt64+1), v(1), []byte{0}),
		"upper equals lower":         cat(head, v(1000), v(0), []byte{0}, []byte{0}),
		"upper equals previous":      cat(head, v(1000), v(0), []byte{1, 5, 0}, v(0), []byte{1, 5, 0}),
		"upper below previous":       cat(head, v(1000), v(0), []byte{1, 5, 0}, v(0), []byte{1, 4, 0}),
		"items out of order":         cat(head, v(1000), v(100), []byte{2}, v(2), v(1050), hash(1), v(0), hash(0), []byte{0}),
		"items equal":                cat(head, v(1000), v(100), []byte{2}, v(2), v(1050), hash(1), v(0), hash(1), []byte{0}),
		"item time wraps":            cat(head, v(1000), v(100), []byte{2}, v(2), v(1050), hash(1), v(math.MaxUint64-9), hash(1), []byte{0}),
		"item past int64":            cat(head, v(1000), v(100), []byte{2}, v(1), v(math.MaxInt64+1), hash(1), []byte{0}),
	}
	for name, b := range refused {
		t.Run(name, func(t *testing.T) {
			if p, err := DecodePayload(b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodePayload(%x) = %+v, %v; want ErrMalformed", b, p, err)
			}
		})
	}
	// What nwaku's deltaEncode writes: the initial whole-window
	// fingerprint, its 8 partitions (item sets, empty ones, fingerprints,
	// skips merged), a window of zero length (its upper bound differs
	// from the lower one in the hash only), the golden payload, and item
	// sets as nwaku's codec tests build them.
	window := Bounds{Lower: SyncID{Time: 1_700_000_000_000_000_000}, Upper: SyncID{Time: 1_700_000_003_600_000_000, Hash: fullHash}}
	parts := partition(window, DefaultPartitions)
	split := &Payload{PubsubTopics: []string{testTopic}}
	for i, b := range parts {
		r := Range{Bounds: b, Type: RangeType(i % 3)}
		switch r.Type {
		case FingerprintRange:
			r.Fingerprint = hashOf(byte(i))
		case ItemSetRange:
			r.Items = ItemSet{IDs: []SyncID{{Time: b.Lower.Time + 1, Hash: hashOf(1)}, {Time: b.Lower.Time + 1, Hash: hashOf(2)}, {Time: b.Upper.Time, Hash: zeroHash}}}
		}
		split.Ranges = append(split.Ranges, r)
	}
	// The shape of nwaku's codec tests: item sets bounded by their first
	// and last items' times with zero hashes (so the last item lies past
	// the upper bound), gaps between ranges.
	sets := &Payload{PubsubTopics: []string{testTopic}}
	for k := range 4 {
		t0 := window.Lower.Time + int64(k)*11_000_000
		var ids []SyncID
		for i := range 5 {
			ids = append(ids, SyncID{Time: t0 + int64(i+1)*1000, Hash: hashOf(byte(k), byte(i), 1)})
		}
		sets.Ranges = append(sets.Ranges, Range{Bounds: Bounds{Lower: SyncID{Time: ids[0].Time}, Upper: SyncID{Time: ids[4].Time}},
			Type: ItemSetRange, Items: ItemSet{IDs: ids, Reconciled: true}})
	}
	accepted := map[string]*Payload{
		"nwaku codec test sets": sets,
		"initial":               {PubsubTopics: []string{testTopic}, Ranges: []Range{{Bounds: window, Type: FingerprintRange, Fingerprint: hashOf(9)}}},
		"split":                 split,
		"zero-length window": {Ranges: []Range{{Bounds: Bounds{Lower: window.Lower, Upper: SyncID{Time: window.Lower.Time, Hash: fullHash}},
			Type: ItemSetRange, Items: ItemSet{Reconciled: true}}}},
		"golden": goldenPayload(),
	}
	for name, p := range accepted {
		t.Run(name, func(t *testing.T) {
			b := AppendPayload(nil, p)
			q, err := DecodePayload(b)
			if err != nil {
				t.Fatalf("DecodePayload of nwaku's encoding %x: %v", b, err)
			}
			if len(q.Ranges) != len(p.Ranges) {
				t.Fatalf("%d ranges decoded, %d sent", len(q.Ranges), len(p.Ranges))
			}
		})
	}
}

// TestRbsrtestAgrees: the payloads the tests build use this package's
// range types and bounds.
func TestRbsrtestAgrees(t *testing.T) {
	if rbsrtest.Skip != Skip || rbsrtest.FingerprintRange != FingerprintRange || rbsrtest.ItemSetRange != ItemSetRange ||
		rbsrtest.MaxTopics != MaxTopics || rbsrtest.ItemSetThreshold != DefaultThreshold {
		t.Fatal("package rbsrtest's constants differ from rbsr's")
	}
}
