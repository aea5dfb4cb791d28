package storesync

import (
	"bufio"
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// This file holds what hostile peers send: payloads that would make a
// node amplify their bytes into work, memory or replies.

// rawPeer is a bare libp2p host that speaks the reconciliation protocol
// by hand, byte for byte.
type rawPeer struct {
	t   testing.TB
	str network.Stream
	r   *bufio.Reader
}

func dialReconciliation(t testing.TB, to *syncNode) *rawPeer {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	connect(t, h, to.host)
	str, err := h.NewStream(context.Background(), to.host.ID(), ReconciliationID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { str.Reset() })
	return &rawPeer{t: t, str: str, r: bufio.NewReader(str)}
}

func (p *rawPeer) send(b []byte) error {
	_, err := p.str.Write(lpframe.Append(nil, b))
	return err
}

// recv reads one reply frame of any size, or the error that ended the
// stream.
func (p *rawPeer) recv() ([]byte, error) {
	_ = p.str.SetReadDeadline(time.Now().Add(30 * time.Second))
	return lpframe.Read(p.r, 1<<31)
}

func (p *rawPeer) id() peer.ID { return p.str.Conn().LocalPeer() }

// wholeWindow returns the bounds of a round's window as a peer would send
// them: now minus the default range and jitter, to now.
func wholeWindow() (start, end int64) {
	end = time.Now().UnixNano()
	return end - int64(DefaultRange) - int64(DefaultRelayJitter), end
}

// amplificationPayload is the attack of a peer that alternates a range
// over the whole window holding an empty, unreconciled item set (the node
// answers with every item it holds there, and pushes them all) with a
// skip whose time delta wraps around 2^64 back to the window's start.
func amplificationPayload(start, end int64, reps int) []byte {
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

// ingestN indexes n messages of the last half hour, 1 ms apart.
func ingestN(n *syncNode, count int) {
	for _, env := range testEnvelopes(count, "held") {
		n.sync.Ingest(env)
	}
}

// replyBound is the most a reply may hold for a payload of in bytes
// against an index of n items (see the package doc, "Bounds"): the
// echo of the payload's ranges, each held item listed once (at most 42
// bytes: a time delta and a hash, and 4 for its share of an item set's
// count), and at most 8 ranges of 43 bytes for each split of a range
// holding more than the item-set threshold.
func replyBound(in, n int) int {
	return in + 46*n + 8*43*(n/DefaultItemSetThreshold+1) + 64
}

// TestAmplificationPayloadRefused: the 10,000-byte payload of wrapping
// ranges, sent to a node holding 5,000 items, is refused: no reply, no
// difference found, nothing to push. A payload of the same shape whose
// ranges are ordered and disjoint (the most a legal payload can ask)
// gets a reply within replyBound.
func TestAmplificationPayloadRefused(t *testing.T) {
	const held = 5000
	a := newSyncNode(t, Config{})
	a.start(t)
	ingestN(a, held)
	start, end := wholeWindow()

	t.Run("wrapping", func(t *testing.T) {
		payload := amplificationPayload(start, end, 500)
		before := a.sync.Stats()
		p := dialReconciliation(t, a)
		if err := p.send(payload); err != nil {
			t.Fatal(err)
		}
		reply, err := p.recv()
		after := a.sync.Stats()
		diffs := after.Differences - before.Differences
		t.Logf("%d-byte payload, %d items held: reply %d bytes (%.0fx), %d differences, err %v",
			len(payload), held, len(reply), float64(len(reply))/float64(len(payload)), diffs, err)
		if len(reply) > replyBound(len(payload), held) || diffs > 2*held {
			t.Fatalf("reply of %d bytes and %d differences for a %d-byte payload; want at most %d bytes and %d",
				len(reply), diffs, len(payload), replyBound(len(payload), held), 2*held)
		}
		if err == nil {
			t.Fatalf("payload with wrapping ranges answered with %d bytes; want the session ended", len(reply))
		}
	})

	t.Run("ordered", func(t *testing.T) {
		// One range per millisecond over the half hour the items span,
		// each an empty unreconciled item set: every item is listed once.
		b := []byte{0, 0}
		base := time.Now().Add(-31 * time.Minute).UnixNano()
		b = protowire.AppendVarint(b, uint64(base))
		for range 31 * 60 * 1000 / 7 {
			b = protowire.AppendVarint(b, uint64(7*time.Millisecond))
			b = append(b, byte(ItemSetRange), 0, 0)
		}
		before := a.sync.Stats()
		p := dialReconciliation(t, a)
		if err := p.send(b); err != nil {
			t.Fatal(err)
		}
		reply, err := p.recv()
		if err != nil {
			t.Fatal(err)
		}
		diffs := a.sync.Stats().Differences - before.Differences
		t.Logf("%d-byte ordered payload: reply %d bytes, %d differences", len(b), len(reply), diffs)
		if len(reply) > replyBound(len(b), held) || diffs != held {
			t.Fatalf("reply of %d bytes, %d differences; want at most %d bytes and exactly %d", len(reply), diffs, replyBound(len(b), held), held)
		}
	})
}

// TestSessionListsBounded: a peer that asks for the whole window's items
// again in every round trip gets them at most StorageCapacity times in
// all over the session, not once per round trip.
func TestSessionListsBounded(t *testing.T) {
	const held = 5000
	a := newSyncNode(t, Config{})
	a.start(t)
	ingestN(a, held)
	start, end := wholeWindow()
	payload := amplificationPayload(start, end, 1) // one range: legal
	p := dialReconciliation(t, a)
	total, trips := 0, 0
	for ; trips < DefaultMaxRoundTrips; trips++ {
		if err := p.send(payload); err != nil {
			break
		}
		reply, err := p.recv()
		if err != nil {
			break
		}
		total += len(reply)
	}
	limit := 41*DefaultStorageCapacity + trips*replyBound(len(payload), 0)
	t.Logf("%d round trips asking for %d items each: %d reply bytes (bound %d)", trips, held, total, limit)
	if total > limit {
		t.Fatalf("%d reply bytes over %d round trips; want at most %d", total, trips, limit)
	}
}

// idsPayload is one range [lo, hi] holding count items 1 ns apart from
// lo, not reconciled, after the empty topic lists.
func idsPayload(lo, hi int64, count int, tag byte) []byte {
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

// expectedSize returns how many entries the node's expectations of p hold.
func (n *syncNode) expectedSize(p peer.ID) int {
	n.sync.mu.Lock()
	defer n.sync.mu.Unlock()
	e := n.sync.expect[p]
	if e == nil {
		return 0
	}
	return len(e.hashes) + len(e.empty)
}

// TestExpectationBounded: a peer naming 20,000 new hashes in each round
// trip cannot make the node expect more than DefaultMaxMissing of them.
func TestExpectationBounded(t *testing.T) {
	a := newSyncNode(t, Config{})
	a.start(t)
	p := dialReconciliation(t, a)
	start, _ := wholeWindow()
	for round := range 4 {
		lo := start + int64(round)*1_000_000
		if err := p.send(idsPayload(lo, lo+100_000, 20_000, byte(round))); err != nil {
			break
		}
		if _, err := p.recv(); err != nil {
			break
		}
	}
	_ = p.str.CloseWrite()
	waitFor(t, "session end", func() bool {
		a.sync.mu.Lock()
		defer a.sync.mu.Unlock()
		e := a.sync.expect[p.id()]
		return e == nil || e.sessions == 0
	})
	n := a.expectedSize(p.id())
	t.Logf("after 4 round trips naming 20,000 hashes each: %d expected", n)
	if n > DefaultMaxMissing || n == 0 {
		t.Fatalf("node expects %d entries from one peer; want 1..%d", n, DefaultMaxMissing)
	}
}

// emptyRangesPayload is ranges where the node holds nothing, each a
// fingerprint range [lo+k*step, lo+k*step+width] (a non-zero fingerprint:
// the node answers that it holds nothing there and expects whatever the
// peer sends), separated by skips.
func emptyRangesPayload(lo int64, count int, step, width int64) []byte {
	b := []byte{0, 0}
	b = protowire.AppendVarint(b, uint64(lo))
	fp := Fingerprint{0x5a}
	for range count {
		b = protowire.AppendVarint(b, uint64(width))
		b = append(b, byte(FingerprintRange))
		b = append(b, fp[:]...)
		b = protowire.AppendVarint(b, uint64(step-width))
		b = append(b, byte(Skip))
	}
	return b
}

// TestExpectationIndexed: the ranges a node told a peer it holds nothing
// in are kept merged and in order, so that each transferred message is
// checked with a binary search: two round trips of 1,000 overlapping
// ranges each leave 1,000 disjoint sorted ranges, not 2,000 in arrival
// order.
func TestExpectationIndexed(t *testing.T) {
	a := newSyncNode(t, Config{})
	a.start(t)
	ingestN(a, 1) // a storage not empty, holding nothing in the ranges below
	p := dialReconciliation(t, a)
	start, _ := wholeWindow()
	// Round trip 1: [k*100, k*100+40]; 2: [k*100+20, k*100+60]. Each pair
	// overlaps into [k*100, k*100+60].
	for _, off := range []int64{0, 20} {
		if err := p.send(emptyRangesPayload(start+off, 1000, 100, 40)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.recv(); err != nil {
			t.Fatal(err)
		}
	}
	a.sync.mu.Lock()
	e := a.sync.expect[p.id()]
	var got []Bounds
	for _, b := range e.empty {
		got = append(got, Bounds{Lower: b.Lower, Upper: b.Upper})
	}
	a.sync.mu.Unlock()
	if len(got) != 1000 {
		t.Fatalf("%d ranges expected from the peer, want 1,000 merged ones", len(got))
	}
	for i, b := range got {
		lo, hi := start+int64(i)*100, start+int64(i)*100+60
		if b.Lower.Time != lo || b.Upper.Time != hi {
			t.Fatalf("range %d is %d..%d, want %d..%d", i, b.Lower.Time-start, b.Upper.Time-start, lo-start, hi-start)
		}
	}
}

// worstPayloads are the payloads that cost the decoder the most per byte:
// each of about size bytes.
func worstPayloads(size int) map[string][]byte {
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
	topics := protowire.AppendVarint(nil, maxTopics)
	for i := range maxTopics {
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

// bytesAllocated returns the bytes f allocates, the least of three runs
// (the test runs on one goroutine; the least run excludes other
// goroutines' allocations).
func bytesAllocated(f func()) uint64 {
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

// The decoder's allocation bound (see the package doc, "Bounds"): a
// decoded Range takes 152 bytes and, consecutive skips merged, the ranges
// of a payload take at least 3 bytes each on average (a 2-byte skip
// between 4-byte empty item sets); an item takes 40 bytes for at least 33.
// The slack covers the topic lists, whose count and length are bounded.
const (
	maxDecodeAllocPerByte = 51
	decodeAllocSlack      = 64 << 10
)

// TestDecodePayloadAllocationBound: DecodePayload allocates at most
// maxDecodeAllocPerByte bytes per byte of its input, plus
// decodeAllocSlack, for the worst payloads found.
func TestDecodePayloadAllocationBound(t *testing.T) {
	for name, b := range worstPayloads(1 << 20) {
		t.Run(name, func(t *testing.T) {
			var err error
			n := bytesAllocated(func() { _, err = DecodePayload(b) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in, %d allocated: %.1f per byte", len(b), n, float64(n)/float64(len(b)))
			if limit := maxDecodeAllocPerByte*uint64(len(b)) + decodeAllocSlack; n > limit {
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
