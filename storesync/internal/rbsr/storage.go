package rbsr

import (
	"sort"
	"sync"
)

// Defaults of NewStorage, nwaku v0.38.1's (waku_store_sync/common.nim,
// storage/seq_storage.nim).
const (
	DefaultCapacity   = 50_000
	DefaultThreshold  = 100
	DefaultPartitions = 8
)

// Storage is the in-memory index reconciliation works on: the SyncIDs of
// archived messages in the sync window, in order, with the pubsub topic and
// content topic of each (interned). It holds at most its capacity: an
// insert beyond it drops the oldest item, counted. Storage is safe for
// concurrent use.
type Storage struct {
	threshold  int // item sets for ranges of at most this many items
	partitions int // a differing range splits into this many
	capacity   int

	mu      sync.Mutex
	items   []item
	pubsub  interner
	content interner
	evicted uint64 // items dropped because the storage was full
}

type item struct {
	id      SyncID
	pubsub  uint32
	content uint32
}

// NewStorage returns an empty storage holding at most capacity items
// (zero or negative: DefaultCapacity), using item sets for ranges of at
// most threshold items and splitting larger differing ranges into
// partitions parts (zero: DefaultThreshold, DefaultPartitions).
func NewStorage(capacity, threshold, partitions int) *Storage {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if threshold <= 0 {
		threshold = DefaultThreshold
	}
	if partitions <= 1 {
		partitions = DefaultPartitions
	}
	return &Storage{capacity: capacity, threshold: threshold, partitions: partitions}
}

// Insert adds id with its topics; an id already held is ignored. It
// reports whether the id was new.
func (s *Storage) Insert(id SyncID, pubsubTopic, contentTopic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.lowerBound(id)
	if i < len(s.items) && s.items[i].id == id {
		return false
	}
	it := item{id: id, pubsub: s.pubsub.intern(pubsubTopic), content: s.content.intern(contentTopic)}
	s.items = append(s.items, item{})
	copy(s.items[i+1:], s.items[i:])
	s.items[i] = it
	if len(s.items) > s.capacity {
		// Reslicing drops the oldest in O(1); the next append that needs a
		// larger array copies only the live items, so eviction costs O(1)
		// amortized and the array stays under twice the capacity.
		n := len(s.items) - s.capacity
		s.items = s.items[n:]
		s.evicted += uint64(n)
	}
	return true
}

// Prune drops every item older than before (Unix ns) and returns how many
// it dropped.
func (s *Storage) Prune(before int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.lowerBound(SyncID{Time: before})
	if n == 0 {
		return 0
	}
	s.items = s.items[n:]
	s.reintern()
	return n
}

// reintern forgets topics no item uses any more, so a stream of one-off
// content topics cannot grow the storage beyond its item bound.
func (s *Storage) reintern() {
	var pubsub, content interner
	for i := range s.items {
		it := &s.items[i]
		it.pubsub = pubsub.intern(s.pubsub.names[it.pubsub])
		it.content = content.intern(s.content.names[it.content])
	}
	s.pubsub, s.content = pubsub, content
}

// Len returns the number of items held.
func (s *Storage) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Evicted returns how many items were dropped because the storage was full.
func (s *Storage) Evicted() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evicted
}

// Contains reports whether id is held.
func (s *Storage) Contains(id SyncID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.lowerBound(id)
	return i < len(s.items) && s.items[i].id == id
}

// Fingerprint returns the XOR of the hashes held within b whose topics pass
// the given topic lists (empty: any).
func (s *Storage) Fingerprint(b Bounds, pubsubTopics, contentTopics []string) Fingerprint {
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, hi, _ := s.find(b)
	return s.fingerprint(lo, hi, s.filter(pubsubTopics, contentTopics))
}

func (s *Storage) lowerBound(id SyncID) int {
	return sort.Search(len(s.items), func(i int) bool { return s.items[i].id.Compare(id) >= 0 })
}

func (s *Storage) upperBound(id SyncID) int {
	return sort.Search(len(s.items), func(i int) bool { return s.items[i].id.Compare(id) > 0 })
}

// find returns the index range [lo, hi) of items within b, and false when b
// lies wholly before or after every item (nwaku's findIdxBounds).
func (s *Storage) find(b Bounds) (lo, hi int, ok bool) {
	lo, hi = s.lowerBound(b.Lower), s.upperBound(b.Upper)
	if hi < 1 || lo >= len(s.items) {
		return 0, 0, false
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi, true
}

func (s *Storage) fingerprint(lo, hi int, f topicFilter) Fingerprint {
	var fp Fingerprint
	for i := lo; i < hi; i++ {
		if !f.pass(&s.items[i]) {
			continue
		}
		h := &s.items[i].id.Hash
		for j := range fp {
			fp[j] ^= h[j]
		}
	}
	return fp
}

// ids appends the ids of [lo, hi) that pass f to dst.
func (s *Storage) ids(dst []SyncID, lo, hi int, f topicFilter) []SyncID {
	for i := lo; i < hi; i++ {
		if f.pass(&s.items[i]) {
			dst = append(dst, s.items[i].id)
		}
	}
	return dst
}

// span returns the index range [lo, hi) of the items within b at or after
// index floor, and false when b lies wholly before or after every item
// (nwaku's findIdxBounds). It searches from floor outwards, in
// O(log(hi-floor)) comparisons, so that the ranges of a payload, in
// increasing order, cost O(ranges + items) in all.
func (s *Storage) span(b Bounds, floor int) (lo, hi int, ok bool) {
	n := len(s.items)
	if n == 0 {
		return floor, floor, false
	}
	ok = s.items[0].id.Compare(b.Upper) <= 0 && s.items[n-1].id.Compare(b.Lower) >= 0
	lo = floor
	if floor == 0 || s.items[floor-1].id.Compare(b.Lower) < 0 {
		lo = s.seek(floor, func(id SyncID) bool { return id.Compare(b.Lower) >= 0 })
	}
	hi = s.seek(lo, func(id SyncID) bool { return id.Compare(b.Upper) > 0 })
	return lo, hi, ok
}

// seek returns the first index at or after from whose id satisfies
// beyond (false for all ids before it, true for all after), galloping
// from from: O(log(result-from)) calls of beyond.
func (s *Storage) seek(from int, beyond func(SyncID) bool) int {
	n := len(s.items)
	lo, step := from, 1
	hi := lo
	for {
		hi = lo + step
		if hi >= n {
			hi = n
			break
		}
		if beyond(s.items[hi-1].id) {
			break
		}
		lo, step = hi, step*2
	}
	return lo + sort.Search(hi-lo, func(k int) bool { return beyond(s.items[lo+k].id) })
}

// topicFilter selects items by topic: a nil set passes every topic.
type topicFilter struct {
	pubsub, content map[uint32]bool
}

func (f topicFilter) pass(it *item) bool {
	return (f.pubsub == nil || f.pubsub[it.pubsub]) && (f.content == nil || f.content[it.content])
}

// filter builds the filter of two topic lists. A list naming only topics
// this storage has never seen matches nothing (nwaku would match
// everything there; nothing is what the list asks for).
func (s *Storage) filter(pubsubTopics, contentTopics []string) topicFilter {
	return topicFilter{pubsub: s.pubsub.set(pubsubTopics), content: s.content.set(contentTopics)}
}

// interner maps topic strings to small integers.
type interner struct {
	ids   map[string]uint32
	names []string
}

func (n *interner) intern(name string) uint32 {
	if id, ok := n.ids[name]; ok {
		return id
	}
	if n.ids == nil {
		n.ids = map[string]uint32{}
	}
	id := uint32(len(n.names))
	n.ids[name] = id
	n.names = append(n.names, name)
	return id
}

// set returns the ids of names; nil (any) when names is empty.
func (n *interner) set(names []string) map[uint32]bool {
	if len(names) == 0 {
		return nil
	}
	out := make(map[uint32]bool, len(names))
	for _, name := range names {
		if id, ok := n.ids[name]; ok {
			out[id] = true
		}
	}
	return out
}

// Grow returns s with room for n more elements, doubling its capacity
// when it has to grow, so that a slice grown round after round allocates
// at most twice its final size in all.
func Grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	t := make([]T, len(s), max(2*cap(s), len(s)+n))
	copy(t, s)
	return t
}
