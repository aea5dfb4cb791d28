package netlab

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/message"
)

// History records what a scenario published (hash, time, node) and what
// each node delivered and archived, and checks it: set equality by hash,
// nothing lost, nothing twice. It is safe for concurrent use.
type History struct {
	mu        sync.Mutex
	published map[message.Hash]Published
	order     []message.Hash
	delivered map[string]map[message.Hash]Delivery // node -> hash
	dupDeliv  map[string]int
	unknown   map[string]int // deliveries of hashes never published
}

// Published is one message a scenario sent.
type Published struct {
	Node string
	At   time.Time
	Seq  int
}

// Delivery is a node's first delivery of a message, as the poll saw it.
type Delivery struct {
	At    time.Time
	Count int
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{
		published: map[message.Hash]Published{},
		delivered: map[string]map[message.Hash]Delivery{},
		dupDeliv:  map[string]int{},
		unknown:   map[string]int{},
	}
}

// NewMessage makes message seq of a scenario: the payload carries the
// scenario's tag and seq and is padded to size bytes (at least 16), the
// timestamp is now.
func NewMessage(tag string, seq, size int) Message {
	p := make([]byte, max(size, 16))
	binary.BigEndian.PutUint64(p, uint64(seq))
	copy(p[8:], tag)
	return Message{Payload: p, ContentTopic: "/netlab/1/" + tag + "/proto", Timestamp: time.Now().UnixNano()}
}

// Publish publishes m from node n and, if the node accepted it, records
// it as published at the time of the request.
func (h *History) Publish(n *Node, m Message) error {
	at := time.Now()
	if err := n.Publish(m); err != nil {
		return err
	}
	hash := m.Hash()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.published[hash] = Published{Node: n.Host.Name, At: at, Seq: len(h.order)}
	h.order = append(h.order, hash)
	return nil
}

// PublishLoop publishes count messages of scenario tag (NewMessage, size
// bytes) at rate per second from nodes chosen at random, recording them
// in h. A publish that fails is logged on tb and tried once more, as a
// client would; it returns how many failed twice. When publishes take
// longer than 1/rate, the next ones go at once until the schedule is met.
func (h *History) PublishLoop(tb testing.TB, tag string, nodes []*Node, count, size int, rate float64) (failed int) {
	every := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for i := range count {
		n := nodes[rand.IntN(len(nodes))]
		m := NewMessage(tag, i, size)
		if err := h.Publish(n, m); err != nil {
			tb.Logf("publish %s %d: %v; once more", tag, i, err)
			if err := h.Publish(n, m); err != nil {
				tb.Logf("publish %s %d again: %v", tag, i, err)
				failed++
			}
		}
		next = next.Add(every)
		time.Sleep(time.Until(next))
	}
	return failed
}

// Deliver records that node delivered msgs at time at (one poll's drain).
func (h *History) Deliver(node string, msgs []Message, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.delivered[node]
	if d == nil {
		d = map[message.Hash]Delivery{}
		h.delivered[node] = d
	}
	for _, m := range msgs {
		hash := m.Hash()
		if _, ok := h.published[hash]; !ok {
			// A poll may see a message before Publish recorded it: its
			// request has not returned yet. Keep it; Check decides.
			h.unknown[node]++
		}
		if prev, ok := d[hash]; ok {
			prev.Count++
			d[hash] = prev
			h.dupDeliv[node]++
			continue
		}
		d[hash] = Delivery{At: at, Count: 1}
	}
}

// Deliveries is the number of (node, message) first deliveries of
// published messages.
func (h *History) Deliveries() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, d := range h.delivered {
		for x := range d {
			if _, ok := h.published[x]; ok {
				n++
			}
		}
	}
	return n
}

// PublishedHashes returns the hashes published so far, in order.
func (h *History) PublishedHashes() []message.Hash {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.order)
}

// Count is the number of messages published.
func (h *History) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.order)
}

// PublishedAt returns when hash was published.
func (h *History) PublishedAt(hash message.Hash) (Published, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.published[hash]
	return p, ok
}

// SetCheck compares a node's list of hashes (an archive, page by page)
// with the set it must equal.
type SetCheck struct {
	Node       string
	Want       int // size of the set it must hold
	Got        int // distinct hashes it holds
	Lost       int // in the set, not held
	Duplicated int // hashes listed more than once (extra copies)
	Extra      int // held, not in the set
	FirstLost  []message.Hash
}

// OK reports set equality with no duplicate.
func (c SetCheck) OK() bool { return c.Lost == 0 && c.Duplicated == 0 && c.Extra == 0 }

func (c SetCheck) String() string {
	s := fmt.Sprintf("%s: want %d, holds %d, lost %d, duplicated %d, extra %d", c.Node, c.Want, c.Got, c.Lost, c.Duplicated, c.Extra)
	if len(c.FirstLost) > 0 {
		s += fmt.Sprintf(" (first lost %s)", c.FirstLost[0])
	}
	return s
}

// CheckSet compares got (a node's listing) with want.
func CheckSet(node string, want map[message.Hash]bool, got []message.Hash) SetCheck {
	c := SetCheck{Node: node, Want: len(want)}
	seen := make(map[message.Hash]bool, len(got))
	for _, h := range got {
		if seen[h] {
			c.Duplicated++
			continue
		}
		seen[h] = true
		if !want[h] {
			c.Extra++
		}
	}
	c.Got = len(seen)
	for h := range want {
		if !seen[h] {
			c.Lost++
			if len(c.FirstLost) < 5 {
				c.FirstLost = append(c.FirstLost, h)
			}
		}
	}
	return c
}

// Set returns the published hashes as a set.
func (h *History) Set() map[message.Hash]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := make(map[message.Hash]bool, len(h.order))
	for _, x := range h.order {
		s[x] = true
	}
	return s
}

// DeliveryCheck is CheckSet for what node delivered (its REST relay
// cache), with the duplicates the polls saw.
func (h *History) DeliveryCheck(node string) SetCheck {
	return CheckSet(node, h.Set(), h.Delivered(node))
}

// Delivered returns every hash node delivered, published or not, each
// listed as many times as the polls saw it (so CheckSet counts the
// duplicates), in no order.
func (h *History) Delivered(node string) []message.Hash {
	h.mu.Lock()
	defer h.mu.Unlock()
	var got []message.Hash
	for x, d := range h.delivered[node] {
		for range d.Count {
			got = append(got, x)
		}
	}
	return got
}

// Latencies returns, sorted, over every node's first delivery of each
// published message except the publisher's own (which crosses no link),
// the time from the publish request to the poll that saw it: the
// end-to-end latency plus up to one poll interval.
func (h *History) Latencies() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []time.Duration
	for node, d := range h.delivered {
		for x, dv := range d {
			if p, ok := h.published[x]; ok && p.Node != node {
				out = append(out, dv.At.Sub(p.At))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Percentile returns the p-th percentile (0 to 100) of sorted durations,
// 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// Figures are a scenario's results, printed in one line per figure by
// String, as the reliability page reports them.
type Figures struct {
	Scenario  string
	Published int
	Delivered int // deliveries (node, message) seen
	Archived  int // distinct hashes on each store node at the end
	Lost      int
	Dup       int
	Converge  time.Duration
	P50, P99  time.Duration
	MemPeak   int64 // bytes, the largest node peak RSS
	Extra     []string
}

func (f Figures) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "FIGURES %s: published %d, delivered %d, archived %d, lost %d, duplicated %d",
		f.Scenario, f.Published, f.Delivered, f.Archived, f.Lost, f.Dup)
	if f.Converge > 0 {
		fmt.Fprintf(&b, ", convergence %v", f.Converge.Round(100*time.Millisecond))
	}
	if f.P50 > 0 {
		fmt.Fprintf(&b, ", latency p50 %v p99 %v", f.P50.Round(time.Millisecond), f.P99.Round(time.Millisecond))
	}
	if f.MemPeak > 0 {
		fmt.Fprintf(&b, ", peak RSS %.1f MiB", float64(f.MemPeak)/(1<<20))
	}
	for _, e := range f.Extra {
		b.WriteString(", " + e)
	}
	return b.String()
}

// Poll drains every node's REST relay cache each interval into h, from a
// goroutine of its own, until the returned stop is called (stop waits for
// the last poll). A node that does not answer (paused, killed) is skipped
// and counted in the value stop returns.
func (h *History) Poll(nodes []*Node, every time.Duration) (stop func() (failures int)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				msgs, err := n.Drain()
				at := time.Now()
				if err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				} else {
					h.Deliver(n.Host.Name, msgs, at)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	var once sync.Once
	return func() int {
		once.Do(func() { close(done); wg.Wait() })
		mu.Lock()
		defer mu.Unlock()
		return failures
	}
}

// FirstDelivery returns node's first delivery of hash.
func (h *History) FirstDelivery(node string, hash message.Hash) (Delivery, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.delivered[node][hash]
	return d, ok
}
