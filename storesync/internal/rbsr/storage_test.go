package rbsr

import (
	"testing"
)

func TestStorageInsertOrderAndDuplicates(t *testing.T) {
	s := NewStorage(0, 0, 0)
	ids := []SyncID{{Time: 5, Hash: hashOf(2)}, {Time: 1, Hash: hashOf(9)}, {Time: 5, Hash: hashOf(1)}}
	for _, id := range ids {
		if !s.Insert(id, testTopic, "/a/1/b/c") {
			t.Fatalf("Insert(%v) reported a duplicate", id)
		}
	}
	if s.Insert(ids[0], testTopic, "/a/1/b/c") {
		t.Fatal("second Insert of the same id reported new")
	}
	want := []SyncID{ids[1], ids[2], ids[0]} // by time, then hash
	if s.Len() != 3 {
		t.Fatalf("Len = %d, want 3", s.Len())
	}
	for i, it := range s.items {
		if it.id != want[i] {
			t.Fatalf("item %d = %v, want %v", i, it.id, want[i])
		}
	}
	// Fingerprint: XOR of the hashes in range, bounds inclusive.
	fp := s.Fingerprint(Bounds{Lower: SyncID{Time: 5}, Upper: SyncID{Time: 5, Hash: fullHash}}, nil, nil)
	if fp != hashOf(3) {
		t.Fatalf("fingerprint = %x, want 03…", fp[:2])
	}
	if fp := s.Fingerprint(Bounds{Lower: SyncID{Time: 2}, Upper: SyncID{Time: 4}}, nil, nil); fp != (Fingerprint{}) {
		t.Fatalf("fingerprint of an empty range = %x", fp[:2])
	}
	if fp := s.Fingerprint(Bounds{Upper: SyncID{Time: 9}}, []string{"/other"}, nil); fp != (Fingerprint{}) {
		t.Fatalf("fingerprint with an unknown topic = %x, want zero", fp[:2])
	}
}

func TestStorageCapacityAndPrune(t *testing.T) {
	s := NewStorage(3, 0, 0)
	for i := range 5 {
		s.Insert(SyncID{Time: int64(10 * (i + 1)), Hash: hashOf(byte(i + 1))}, testTopic, "/a/1/t"+string(rune('a'+i))+"/c")
	}
	if s.Len() != 3 || s.Evicted() != 2 || s.items[0].id.Time != 30 {
		t.Fatalf("Len %d Evicted %d first %d; want 3, 2, 30", s.Len(), s.Evicted(), s.items[0].id.Time)
	}
	if n := s.Prune(45); n != 2 || s.Len() != 1 || s.items[0].id.Time != 50 {
		t.Fatalf("Prune(45) = %d leaving %d; want 2 leaving the item at 50", n, s.Len())
	}
	if len(s.content.names) != 1 || s.content.names[s.items[0].content] != "/a/1/te/c" {
		t.Fatalf("content topics after prune: %v", s.content.names)
	}
}

func TestPartition(t *testing.T) {
	got := partition(Bounds{Lower: SyncID{Time: 0}, Upper: SyncID{Time: 10}}, 4)
	want := []int64{0, 3, 6, 8, 10} // remainder 2 spread over the first two
	if len(got) != 4 {
		t.Fatalf("%d partitions", len(got))
	}
	for i, b := range got {
		if b.Lower.Time != want[i] || b.Upper.Time != want[i+1] {
			t.Fatalf("partition %d = %d..%d, want %d..%d", i, b.Lower.Time, b.Upper.Time, want[i], want[i+1])
		}
	}
	if partition(Bounds{Upper: SyncID{Time: 3}}, 4) != nil {
		t.Fatal("a range shorter than the partition count was split")
	}
}
