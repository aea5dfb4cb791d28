package rbsr

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/couriernet/courier/message"
)

const testTopic = "/waku/2/rs/0/0"

// randomIDs returns n distinct SyncIDs spread over [start, start+span) ns,
// several sharing a timestamp so ties are broken by hash.
func randomIDs(r *rand.Rand, n int, start, span int64) []SyncID {
	ids := make([]SyncID, n)
	for i := range ids {
		var seed [16]byte
		binary.BigEndian.PutUint64(seed[:], r.Uint64())
		binary.BigEndian.PutUint64(seed[8:], uint64(i))
		ids[i] = SyncID{Time: start + r.Int64N(span), Hash: sha256.Sum256(seed[:])}
	}
	return ids
}

// storageOf builds a storage of ids, inserted in order (as the archive
// fills it) so that building large sets stays fast.
func storageOf(ids []SyncID) *Storage {
	s := NewStorage(len(ids)+1, 0, 0)
	ids = slices.SortedFunc(slices.Values(ids), SyncID.Compare)
	for _, id := range ids {
		s.Insert(id, testTopic, "/app/1/x/proto")
	}
	return s
}

// exchange is the outcome of a simulated session.
type exchange struct {
	aSend, bSend []message.Hash // what each side pushes to the other
	bytes        int            // encoded payload bytes, both directions
	roundTrips   int            // payloads sent, both directions
}

// simulate runs a session between a (initiator) and b over window, every
// payload going through the codec as on the wire.
func simulate(t testing.TB, a, b *Storage, window Bounds) exchange {
	var x exchange
	first := &Payload{PubsubTopics: []string{testTopic}, Ranges: []Range{{Bounds: window, Type: FingerprintRange, Fingerprint: a.Fingerprint(window, nil, nil)}}}
	wire := AppendPayload(nil, first)
	sides := [2]*Storage{b, a}
	sends := [2]*[]message.Hash{&x.bSend, &x.aSend}
	for turn := 0; ; turn++ {
		if turn > 100 {
			t.Fatal("session does not converge")
		}
		x.bytes += len(wire)
		x.roundTrips++
		in, err := ParsePayload(wire)
		if err != nil {
			t.Fatal(err)
		}
		if in.skipsOnly {
			return x
		}
		listed := math.MaxInt
		out, d, err := sides[turn%2].Process(in, []string{testTopic}, nil, &listed)
		if err != nil {
			t.Fatal(err)
		}
		*sends[turn%2] = append(*sends[turn%2], d.ToSend...)
		wire = out
	}
}

func hashSet(ids []SyncID) map[message.Hash]bool {
	m := map[message.Hash]bool{}
	for _, id := range ids {
		m[id.Hash] = true
	}
	return m
}

// TestReconcileToUnion: two sets of 10,000 items that differ by 0, 1, 100
// and 5,000 items (half missing on each side) reconcile to their union:
// each side pushes exactly what the other lacks.
func TestReconcileToUnion(t *testing.T) {
	const n = 10_000
	window := Bounds{Lower: SyncID{Time: 0}, Upper: SyncID{Time: 3_600_000_000_000, Hash: fullHash}}
	var bytesByDiff []int
	for _, diff := range []int{0, 1, 100, 5000} {
		t.Run(fmt.Sprint(diff), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(diff)))
			all := randomIDs(r, n+diff, 0, 3_600_000_000_000)
			onlyA, onlyB := all[n:n+diff/2], all[n+diff/2:]
			common := all[:n]
			a := storageOf(append(slices.Clone(common), onlyA...))
			b := storageOf(append(slices.Clone(common), onlyB...))
			x := simulate(t, a, b, window)
			if got, want := hashesSet(x.aSend), hashSet(onlyA); !equalSets(got, want) {
				t.Fatalf("a pushes %d hashes, want the %d only a holds", len(got), len(want))
			}
			if got, want := hashesSet(x.bSend), hashSet(onlyB); !equalSets(got, want) {
				t.Fatalf("b pushes %d hashes, want the %d only b holds", len(got), len(want))
			}
			t.Logf("10,000 items, %d differing: %d round trips, %d bytes", diff, x.roundTrips, x.bytes)
			bytesByDiff = append(bytesByDiff, x.bytes)
		})
	}
	for i := 1; i < len(bytesByDiff); i++ {
		if bytesByDiff[i] <= bytesByDiff[i-1] {
			t.Errorf("bytes exchanged do not grow with the difference: %v", bytesByDiff)
		}
	}
	// Equal sets settle on the first fingerprint: one payload each way.
	if len(bytesByDiff) > 0 && bytesByDiff[0] > 200 {
		t.Errorf("equal sets exchanged %d bytes", bytesByDiff[0])
	}
}

// TestReconcileBytesFollowDifference: one differing item costs about the
// same whether the sets hold 1,000 or 100,000 items, far below sending the
// items themselves.
func TestReconcileBytesFollowDifference(t *testing.T) {
	window := Bounds{Lower: SyncID{Time: 0}, Upper: SyncID{Time: 3_600_000_000_000, Hash: fullHash}}
	var got []int
	for _, n := range []int{1000, 100_000} {
		r := rand.New(rand.NewPCG(7, uint64(n)))
		all := randomIDs(r, n+1, 0, 3_600_000_000_000)
		a, b := storageOf(all), storageOf(all[:n])
		x := simulate(t, a, b, window)
		if len(x.aSend) != 1 || x.aSend[0] != all[n].Hash || len(x.bSend) != 0 {
			t.Fatalf("n=%d: a pushes %d, b pushes %d; want 1 and 0", n, len(x.aSend), len(x.bSend))
		}
		t.Logf("%d items, 1 differing: %d round trips, %d bytes", n, x.roundTrips, x.bytes)
		got = append(got, x.bytes)
	}
	if got[1] > 4*got[0] || got[1] > 100_000*(hashLen+1)/20 {
		t.Errorf("bytes for one difference grow with the set size: %v", got)
	}
}

// TestReconcileSameTimestamp: items that all share one timestamp cannot be
// split by time; they are reconciled as item sets, not dropped.
func TestReconcileSameTimestamp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	all := randomIDs(r, 500, 1000, 1)
	a, b := storageOf(all), storageOf(all[:400])
	x := simulate(t, a, b, Bounds{Lower: SyncID{Time: 0}, Upper: SyncID{Time: 5000}})
	if !equalSets(hashesSet(x.aSend), hashSet(all[400:])) || len(x.bSend) != 0 {
		t.Fatalf("a pushes %d, b %d; want 100 and 0", len(x.aSend), len(x.bSend))
	}
}

// TestReconcileTopics: items of a topic the session does not cover are
// neither counted nor sent.
func TestReconcileTopics(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	ids := randomIDs(r, 300, 0, 1_000_000)
	a, b := NewStorage(0, 0, 0), NewStorage(0, 0, 0)
	for i, id := range ids {
		topic := testTopic
		if i%2 == 1 {
			topic = "/waku/2/rs/0/1"
		}
		a.Insert(id, topic, "/app/1/x/proto")
		if i < 100 {
			b.Insert(id, topic, "/app/1/x/proto")
		}
	}
	window := Bounds{Upper: SyncID{Time: 2_000_000}}
	wire := AppendPayload(nil, &Payload{PubsubTopics: []string{testTopic}, Ranges: []Range{{Bounds: window, Type: FingerprintRange, Fingerprint: b.Fingerprint(window, []string{testTopic}, nil)}}})
	x := exchange{}
	for turn := 0; ; turn++ {
		in, err := ParsePayload(wire)
		if err != nil {
			t.Fatal(err)
		}
		if in.skipsOnly {
			break
		}
		side := []*Storage{a, b}[turn%2]
		listed := math.MaxInt
		out, d, err := side.Process(in, []string{testTopic}, nil, &listed)
		if err != nil {
			t.Fatal(err)
		}
		if side == a {
			x.aSend = append(x.aSend, d.ToSend...)
		}
		wire = out
	}
	var want []SyncID
	for i := 100; i < 300; i += 2 {
		want = append(want, ids[i])
	}
	if !equalSets(hashesSet(x.aSend), hashSet(want)) {
		t.Fatalf("a pushes %d hashes, want the %d of %s b lacks", len(x.aSend), len(want), testTopic)
	}
}

func hashesSet(hs []message.Hash) map[message.Hash]bool {
	m := map[message.Hash]bool{}
	for _, h := range hs {
		m[h] = true
	}
	return m
}

func equalSets(a, b map[message.Hash]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestSync50kOnePercent measures a session between two 50,000-item sets
// differing by 1 % (500 items on each side), through the codec.
func TestSync50kOnePercent(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	r := rand.New(rand.NewPCG(50, 1))
	all := randomIDs(r, 51_000, 0, 3_600_000_000_000)
	a := storageOf(append(slices.Clone(all[:50_000]), all[50_000:50_500]...))
	b := storageOf(append(slices.Clone(all[:50_000]), all[50_500:]...))
	window := Bounds{Upper: SyncID{Time: 3_600_000_000_000, Hash: fullHash}}
	x := simulate(t, a, b, window)
	if len(x.aSend) != 500 || len(x.bSend) != 500 {
		t.Fatalf("pushes %d and %d, want 500 and 500", len(x.aSend), len(x.bSend))
	}
	t.Logf("50,500 items each, 1,000 differing: %d round trips, %d bytes", x.roundTrips, x.bytes)
}
