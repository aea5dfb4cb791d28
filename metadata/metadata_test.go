package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/testwait"
)

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

type result struct {
	peer peer.ID
	err  error
}

// newService starts a Service whose check results go to the returned channel.
func newService(t *testing.T, h host.Host, cluster uint16, shards ...uint16) (*Service, chan result) {
	t.Helper()
	s, err := New(h, Config{ClusterID: cluster, Shards: func() []uint16 { return shards }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan result, 16)
	s.mu.Lock()
	s.checked = func(p peer.ID, err error) { results <- result{p, err} }
	s.mu.Unlock()
	t.Cleanup(func() { s.Close() })
	return s, results
}

// rawPeer answers metadata requests with fixed response bytes and checks
// nobody, like a node of another implementation.
func rawPeer(t *testing.T, response []byte) host.Host {
	t.Helper()
	h := newHost(t)
	h.SetStreamHandler(ProtocolID, func(st network.Stream) {
		defer st.Close()
		if _, err := readFrame(st); err != nil {
			st.Reset()
			return
		}
		writeFrame(st, response)
	})
	return h
}

func connect(t *testing.T, from, to host.Host) {
	t.Helper()
	if err := from.Connect(context.Background(), peer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// waitFor returns the check result for p, skipping results for other peers.
func waitFor(t *testing.T, results chan result, p peer.ID) error {
	t.Helper()
	for {
		if r := testwait.Recv(t, results, "the check of "+p.String()); r.peer == p {
			return r.err
		}
	}
}

func TestSameClusterStaysConnected(t *testing.T) {
	a, b := newHost(t), newHost(t)
	sa, ra := newService(t, a, 16, 0, 5)
	sb, rb := newService(t, b, 16, 5, 1023)
	connect(t, a, b)
	if err := waitFor(t, ra, b.ID()); err != nil {
		t.Fatalf("a checking b: %v", err)
	}
	if err := waitFor(t, rb, a.ID()); err != nil {
		t.Fatalf("b checking a: %v", err)
	}
	if a.Network().Connectedness(b.ID()) != network.Connected {
		t.Fatal("a and b were disconnected")
	}
	got, ok := sa.Peer(b.ID())
	if want := (PeerInfo{ClusterID: 16, Shards: []uint16{5, 1023}}); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("a's view of b = %+v, %v; want %+v", got, ok, want)
	}
	got, ok = sb.Peer(a.ID())
	if want := (PeerInfo{ClusterID: 16, Shards: []uint16{0, 5}}); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("b's view of a = %+v, %v; want %+v", got, ok, want)
	}
	// a counts the request it answered after writing the answer, which b
	// may have read already; Close waits for a's handlers, so after it the
	// counts are final.
	if err := sa.Close(); err != nil {
		t.Fatal(err)
	}
	st := sa.Stats()
	if st.Checked != 1 || st.Accepted != 1 || st.RequestsAnswered != 1 {
		t.Fatalf("a's stats = %+v", st)
	}
}

// TestManyShardsStayConnected: two nodes relaying 300 shards each (1249
// bytes with both shard fields) check each other and stay connected.
func TestManyShardsStayConnected(t *testing.T) {
	var shards []uint16
	for s := range uint16(300) {
		shards = append(shards, s)
	}
	a, b := newHost(t), newHost(t)
	sa, ra := newService(t, a, 0, shards...)
	_, rb := newService(t, b, 0, shards...)
	connect(t, a, b)
	if err := waitFor(t, ra, b.ID()); err != nil {
		t.Fatalf("a checking b: %v", err)
	}
	if err := waitFor(t, rb, a.ID()); err != nil {
		t.Fatalf("b checking a: %v", err)
	}
	if a.Network().Connectedness(b.ID()) != network.Connected {
		t.Fatal("a and b were disconnected")
	}
	if got, ok := sa.Peer(b.ID()); !ok || !reflect.DeepEqual(got.Shards, shards) {
		t.Fatalf("a's view of b: %d shards, %v; want 300", len(got.Shards), ok)
	}
}

func TestOtherClusterDisconnected(t *testing.T) {
	a := newHost(t)
	sa, ra := newService(t, a, 1, 0)
	other := rawPeer(t, (&RPC{ClusterID: 2, HasClusterID: true, Shards: []uint32{0}}).append(nil))
	connect(t, a, other)
	if err := waitFor(t, ra, other.ID()); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("check error = %v, want ErrClusterMismatch", err)
	}
	if a.Network().Connectedness(other.ID()) == network.Connected {
		t.Fatal("peer of cluster 2 still connected")
	}
	if _, ok := sa.Peer(other.ID()); ok {
		t.Fatal("peer of cluster 2 recorded")
	}
	if st := sa.Stats(); st.ClusterMismatch != 1 || st.Accepted != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestClusterZeroIsChecked(t *testing.T) {
	a := newHost(t)
	sa, ra := newService(t, a, 0)
	// A response without field 1: nwaku disconnects ("empty cluster-id reported").
	noCluster := rawPeer(t, (&RPC{Shards: []uint32{0}}).append(nil))
	connect(t, a, noCluster)
	if err := waitFor(t, ra, noCluster.ID()); !errors.Is(err, ErrNoClusterID) {
		t.Fatalf("check error = %v, want ErrNoClusterID", err)
	}
	// A response with cluster 0 set explicitly passes.
	zero := rawPeer(t, (&RPC{HasClusterID: true}).append(nil))
	connect(t, a, zero)
	if err := waitFor(t, ra, zero.ID()); err != nil {
		t.Fatalf("cluster 0 peer: %v", err)
	}
	if a.Network().Connectedness(zero.ID()) != network.Connected {
		t.Fatal("cluster 0 peer disconnected")
	}
	if st := sa.Stats(); st.NoClusterID != 1 || st.Accepted != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestPeerWithoutProtocolDisconnected(t *testing.T) {
	a := newHost(t)
	sa, ra := newService(t, a, 1)
	plain := newHost(t)
	connect(t, a, plain)
	if err := waitFor(t, ra, plain.ID()); err == nil {
		t.Fatal("peer without the metadata protocol passed")
	}
	if a.Network().Connectedness(plain.ID()) == network.Connected {
		t.Fatal("peer without the metadata protocol still connected")
	}
	if st := sa.Stats(); st.RequestFailed != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestRequestAndClose(t *testing.T) {
	a, b := newHost(t), newHost(t)
	sa, _ := newService(t, a, 7, 3)
	sb, _ := newService(t, b, 7, 4)
	connect(t, a, b)
	resp, err := sa.Request(context.Background(), b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !resp.HasClusterID || resp.ClusterID != 7 || !reflect.DeepEqual(resp.Shards, []uint32{4}) {
		t.Fatalf("response = %+v", resp)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := sa.Request(context.Background(), b.ID()); err == nil {
		t.Fatal("request to a closed service succeeded")
	}
}

func TestConfig(t *testing.T) {
	h := newHost(t)
	for _, c := range []Config{{Timeout: -1}, {MaxChecks: -1}, {QueueSize: -1}} {
		if _, err := New(h, c); !errors.Is(err, ErrConfig) {
			t.Fatalf("New(%+v) error = %v, want ErrConfig", c, err)
		}
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("New(nil host) error = %v", err)
	}
	c := Config{}
	c.setDefaults()
	if err := c.validate(); err != nil || c.Timeout != DefaultTimeout || c.MaxChecks != DefaultMaxChecks || c.QueueSize != DefaultQueueSize || c.Logger == nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

// stallPeer accepts metadata streams, reads the request and never answers
// until release is called (or the test ends); asked receives its id once
// per request read.
func stallPeer(t *testing.T, asked chan<- peer.ID) (h host.Host, release func()) {
	t.Helper()
	h = newHost(t)
	done := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(done) }) }
	t.Cleanup(release) // before h closes: cleanups run last first
	h.SetStreamHandler(ProtocolID, func(st network.Stream) {
		defer st.Reset()
		if _, err := readFrame(st); err != nil {
			return
		}
		asked <- h.ID()
		<-done
	})
	return h, release
}

// TestStalledPeersDelayNoCheck: peers that accept the metadata stream and
// never answer do not delay the check of another peer; with every stalled
// check still in flight, a peer of another cluster is checked and
// disconnected.
func TestStalledPeersDelayNoCheck(t *testing.T) {
	const stalled = 32
	a := newHost(t)
	s, err := New(a, Config{ClusterID: 1, Timeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan result, stalled+1)
	s.mu.Lock()
	s.checked = func(p peer.ID, err error) { results <- result{p, err} }
	s.mu.Unlock()
	t.Cleanup(func() { s.Close() })
	asked := make(chan peer.ID, stalled)
	for range stalled {
		h, _ := stallPeer(t, asked)
		connect(t, a, h)
	}
	for i := range stalled {
		testwait.Recv(t, asked, fmt.Sprintf("stalled peer %d of %d to be asked", i+1, stalled))
	}
	other := rawPeer(t, (&RPC{ClusterID: 2, HasClusterID: true}).append(nil))
	connect(t, a, other)
	r := testwait.Recv(t, results, "the check of the peer of cluster 2")
	if r.peer != other.ID() || !errors.Is(r.err, ErrClusterMismatch) {
		t.Fatalf("first check to end: %v, %v; want %v, ErrClusterMismatch", r.peer, r.err, other.ID())
	}
	if a.Network().Connectedness(other.ID()) == network.Connected {
		t.Fatal("peer of cluster 2 still connected")
	}
}

// TestCheckQueue: past MaxChecks checks in flight, new peers wait first
// come first served; a peer that disconnects leaves the queue, and one that
// finds it full is counted and not checked.
func TestCheckQueue(t *testing.T) {
	a := newHost(t)
	s, err := New(a, Config{ClusterID: 1, Timeout: time.Hour, MaxChecks: 2, QueueSize: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan result, 8)
	s.mu.Lock()
	s.checked = func(p peer.ID, err error) { results <- result{p, err} }
	s.mu.Unlock()
	t.Cleanup(func() { s.Close() })
	asked := make(chan peer.ID, 2)
	stall1, release1 := stallPeer(t, asked)
	stall2, _ := stallPeer(t, asked)
	connect(t, a, stall1)
	connect(t, a, stall2)
	testwait.Recv(t, asked, "the first stalled peer to be asked")
	testwait.Recv(t, asked, "the second stalled peer to be asked")

	other := rawPeer(t, (&RPC{ClusterID: 2, HasClusterID: true}).append(nil))
	gone := rawPeer(t, (&RPC{ClusterID: 1, HasClusterID: true}).append(nil))
	late := rawPeer(t, (&RPC{ClusterID: 2, HasClusterID: true}).append(nil))
	queued := func(want ...peer.ID) {
		t.Helper()
		var got []peer.ID
		testwait.Until(t, fmt.Sprintf("queue %v", want), func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			got = got[:0]
			for e := s.waiting.Front(); e != nil; e = e.Next() {
				got = append(got, e.Value.(peer.ID))
			}
			return reflect.DeepEqual(got, want) && len(s.queued) == len(want)
		})
	}
	connect(t, a, other)
	connect(t, a, gone)
	queued(other.ID(), gone.ID())
	connect(t, a, late)
	testwait.Until(t, "a skip counted in QueueFull", func() bool { return s.Stats().QueueFull == 1 })
	if err := a.Network().ClosePeer(gone.ID()); err != nil {
		t.Fatal(err)
	}
	queued(other.ID())

	release1()
	if err := waitFor(t, results, stall1.ID()); err == nil {
		t.Fatal("the released stalled peer passed")
	}
	r := testwait.Recv(t, results, "the check of the queued peer")
	if r.peer != other.ID() || !errors.Is(r.err, ErrClusterMismatch) {
		t.Fatalf("next check: %v, %v; want %v, ErrClusterMismatch", r.peer, r.err, other.ID())
	}
	queued()
	if a.Network().Connectedness(late.ID()) != network.Connected {
		t.Fatal("the peer that found the queue full was checked")
	}
	if st := s.Stats(); st.Checked != 2 || st.ClusterMismatch != 1 || st.RequestFailed != 1 {
		t.Fatalf("stats = %+v", st)
	}
}
