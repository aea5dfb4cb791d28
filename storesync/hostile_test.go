package storesync

import (
	"bufio"
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/storesync/internal/rbsr"
	"github.com/couriernet/courier/storesync/internal/rbsrtest"
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

// ingestN indexes n messages of the last half hour, 1 ms apart.
func ingestN(n *syncNode, count int) {
	for _, env := range testEnvelopes(count, "held") {
		n.sync.Ingest(env)
	}
}

// TestAmplificationPayloadRefused: the 10,000-byte payload of wrapping
// ranges, sent to a node holding 5,000 items, is refused: no reply, no
// difference found, nothing to push. A payload of the same shape whose
// ranges are ordered and disjoint (the most a legal payload can ask)
// gets a reply within rbsrtest.ReplyBound.
func TestAmplificationPayloadRefused(t *testing.T) {
	const held = 5000
	a := newSyncNode(t, Config{})
	a.start(t)
	ingestN(a, held)
	start, end := wholeWindow()

	t.Run("wrapping", func(t *testing.T) {
		payload := rbsrtest.AmplificationPayload(start, end, 500)
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
		if len(reply) > rbsrtest.ReplyBound(len(payload), held) || diffs > 2*held {
			t.Fatalf("reply of %d bytes and %d differences for a %d-byte payload; want at most %d bytes and %d",
				len(reply), diffs, len(payload), rbsrtest.ReplyBound(len(payload), held), 2*held)
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
			b = append(b, byte(rbsr.ItemSetRange), 0, 0)
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
		if len(reply) > rbsrtest.ReplyBound(len(b), held) || diffs != held {
			t.Fatalf("reply of %d bytes, %d differences; want at most %d bytes and exactly %d", len(reply), diffs, rbsrtest.ReplyBound(len(b), held), held)
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
	payload := rbsrtest.AmplificationPayload(start, end, 1) // one range: legal
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
	limit := 41*DefaultStorageCapacity + trips*rbsrtest.ReplyBound(len(payload), 0)
	t.Logf("%d round trips asking for %d items each: %d reply bytes (bound %d)", trips, held, total, limit)
	if total > limit {
		t.Fatalf("%d reply bytes over %d round trips; want at most %d", total, trips, limit)
	}
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
		if err := p.send(rbsrtest.IDsPayload(lo, lo+100_000, 20_000, byte(round))); err != nil {
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
		if err := p.send(rbsrtest.EmptyRangesPayload(start+off, 1000, 100, 40)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.recv(); err != nil {
			t.Fatal(err)
		}
	}
	a.sync.mu.Lock()
	e := a.sync.expect[p.id()]
	var got []rbsr.Bounds
	for _, b := range e.empty {
		got = append(got, rbsr.Bounds{Lower: b.Lower, Upper: b.Upper})
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
