package storesync

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/storesync/internal/rbsr"
	"github.com/couriernet/courier/storesync/internal/rbsrtest"
)

// The service's allocation bound per payload received (see the package
// doc, "Bounds"): reading the frame, checking and answering it and
// recording what it found allocate at most maxAnswerAllocPerByte bytes
// per byte received, plus maxAnswerAllocPerItem per item held (the items
// a reply may list and the session may push), plus rbsrtest.DecodeAllocSlack.
const (
	maxAnswerAllocPerByte = 12
	maxAnswerAllocPerItem = 400
)

// answerPayloads are the payloads that cost the service the most per
// byte: the decoder's worst, whose ranges lie before every item held, and
// two whose ranges lie at start, where an index holding items only after
// start+1 s holds nothing.
func answerPayloads(size int, start int64) map[string][]byte {
	out := rbsrtest.WorstPayloads(size)
	// Fingerprints where nothing is held, between skips: each is an empty
	// range to record.
	out["empty ranges"] = rbsrtest.EmptyRangesPayload(start, size/45, 10, 5)
	// One item set of items not held.
	n := size / 34
	out["items not held"] = rbsrtest.IDsPayload(start, start+int64(n), n, 7)
	// One range over the window asking for every item held, to list and
	// push.
	out["every item held"] = rbsrtest.AmplificationPayload(start, start+int64(time.Hour), 1)
	return out
}

// TestAnswerAllocationBound: what the service allocates for one received
// payload, from its frame to the reply and the expectations, stays within
// maxAnswerAllocPerByte per byte received for the worst payloads found.
func TestAnswerAllocationBound(t *testing.T) {
	const held = 5000
	a := newSyncNode(t, Config{})
	start, _ := wholeWindow()
	for i, env := range testEnvelopes(held, "held") {
		a.sync.storage.Insert(rbsr.SyncID{Time: start + int64(time.Second) + int64(i), Hash: env.Hash()}, testTopic, "/app/1/chat/proto")
	}
	for name, b := range answerPayloads(1<<20, start) {
		t.Run(name, func(t *testing.T) {
			frame := lpframe.Append(nil, b)
			var err error
			n := rbsrtest.BytesAllocated(func() {
				a.sync.mu.Lock()
				a.sync.expected = 0
				a.sync.mu.Unlock()
				ss := &sessionState{exp: &expectation{}, listed: DefaultStorageCapacity}
				var in []byte
				if in, err = lpframe.Read(bufio.NewReader(bytes.NewReader(frame)), DefaultMaxPayloadSize); err == nil {
					_, _, err = a.sync.answer(ss, in)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			limit := uint64(maxAnswerAllocPerByte*len(b) + maxAnswerAllocPerItem*held + rbsrtest.DecodeAllocSlack)
			t.Logf("%d bytes received, %d items held: %d allocated, %.1f per byte", len(b), held, n, float64(n)/float64(len(b)))
			if n > limit {
				t.Fatalf("answering %d bytes allocated %d (%.1f per byte); want at most %d", len(b), n, float64(n)/float64(len(b)), limit)
			}
		})
	}
	// A second round trip of empty ranges, between those of the first:
	// what the expectation already holds is merged with them.
	t.Run("empty ranges, second round", func(t *testing.T) {
		first, second := rbsrtest.EmptyRangesPayload(start, 20_000, 10, 3), rbsrtest.EmptyRangesPayload(start+5, 20_000, 10, 3)
		best := uint64(math.MaxUint64)
		for range 3 {
			a.sync.mu.Lock()
			a.sync.expected = 0
			a.sync.mu.Unlock()
			ss := &sessionState{exp: &expectation{}, listed: DefaultStorageCapacity}
			if _, _, err := a.sync.answer(ss, first); err != nil {
				t.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, _, err := a.sync.answer(ss, second)
			runtime.ReadMemStats(&m1)
			if err != nil {
				t.Fatal(err)
			}
			best = min(best, m1.TotalAlloc-m0.TotalAlloc)
			if got := len(ss.exp.empty); got != 40_000 {
				t.Fatalf("%d ranges expected after two round trips, want 40,000", got)
			}
		}
		t.Logf("%d bytes received: %d allocated, %.1f per byte", len(second), best, float64(best)/float64(len(second)))
		if limit := uint64(maxAnswerAllocPerByte*len(second) + rbsrtest.DecodeAllocSlack); best > limit {
			t.Fatalf("answering %d bytes allocated %d; want at most %d", len(second), best, limit)
		}
	})
}

// TestExpectationAccepts: hashes named in several round trips and ranges
// said empty, out of order and overlapping, are kept sorted and distinct,
// and a message is accepted exactly when its hash was named or it lies in
// one of the ranges with topics this side syncs.
func TestExpectationAccepts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	ids := randomIDs(r, 3000, 0, 1_000_000)
	var e expectation
	named := map[message.Hash]bool{}
	for round := range 3 {
		var d rbsr.Diff
		for _, id := range ids[round*500 : round*500+1000] { // each round repeats half the last one's
			d.ToRecv = append(d.ToRecv, id.Hash)
			named[id.Hash] = true
		}
		for k := range 100 {
			lo := int64(2_000_000 + k*1000 + round*300)
			d.Empty = append(d.Empty, rbsr.Bounds{Lower: rbsr.SyncID{Time: lo}, Upper: rbsr.SyncID{Time: lo + 400}})
		}
		e.add(d)
	}
	if len(e.hashes) != len(named) || !slices.IsSortedFunc(e.hashes, compareHashes) {
		t.Fatalf("%d hashes kept for %d named, sorted %v", len(e.hashes), len(named), slices.IsSortedFunc(e.hashes, compareHashes))
	}
	// Rounds' ranges [k*1000 + 300*round, +400] join into [k*1000, k*1000+1000]:
	// the next k's range starts where it ends, so all join into one.
	if len(e.empty) != 1 || e.empty[0].Lower.Time != 2_000_000 || e.empty[0].Upper.Time != 2_000_000+99*1000+1000 {
		t.Fatalf("ranges kept: %v", e.empty)
	}
	for _, id := range ids {
		if got := e.accepts(id, true); got != named[id.Hash] {
			t.Fatalf("accepts(%v) = %v, named %v", id, got, named[id.Hash])
		}
	}
	in, out := rbsr.SyncID{Time: 2_050_000, Hash: hashOf(1)}, rbsr.SyncID{Time: 1_999_999}
	if !e.accepts(in, true) || e.accepts(in, false) || e.accepts(out, true) {
		t.Fatalf("in a range: %v, out of scope: %v, before: %v", e.accepts(in, true), e.accepts(in, false), e.accepts(out, true))
	}
	if n := testing.AllocsPerRun(100, func() { e.accepts(in, true) }); n != 0 {
		t.Fatalf("accepts allocates %v times", n)
	}
}

// BenchmarkExpectationAccepts checks transferred messages against a full
// expectation: 25,000 hashes and 25,000 disjoint ranges.
func BenchmarkExpectationAccepts(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	ids := randomIDs(r, 25_000, 0, 1<<40)
	var d rbsr.Diff
	for i, id := range ids {
		d.ToRecv = append(d.ToRecv, id.Hash)
		d.Empty = append(d.Empty, rbsr.Bounds{Lower: rbsr.SyncID{Time: int64(i) * 10}, Upper: rbsr.SyncID{Time: int64(i)*10 + 5}})
	}
	var e expectation
	e.add(d)
	probe := randomIDs(r, 1024, 0, 250_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.accepts(probe[i%len(probe)], true)
	}
}

// randomIDs returns n distinct SyncIDs spread over [start, start+span) ns,
// several sharing a timestamp so ties are broken by hash (as package
// rbsr's tests make them).
func randomIDs(r *rand.Rand, n int, start, span int64) []rbsr.SyncID {
	ids := make([]rbsr.SyncID, n)
	for i := range ids {
		var seed [16]byte
		binary.BigEndian.PutUint64(seed[:], r.Uint64())
		binary.BigEndian.PutUint64(seed[8:], uint64(i))
		ids[i] = rbsr.SyncID{Time: start + r.Int64N(span), Hash: sha256.Sum256(seed[:])}
	}
	return ids
}

func hashOf(prefix ...byte) (h message.Hash) {
	copy(h[:], prefix)
	return h
}
