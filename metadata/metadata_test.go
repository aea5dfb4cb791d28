package metadata

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"testing"

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
	for _, c := range []Config{{Timeout: -1}, {Workers: -1}, {QueueSize: -1}} {
		if _, err := New(h, c); !errors.Is(err, ErrConfig) {
			t.Fatalf("New(%+v) error = %v, want ErrConfig", c, err)
		}
	}
	if _, err := New(nil, Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("New(nil host) error = %v", err)
	}
	c := Config{}
	c.setDefaults()
	if err := c.validate(); err != nil || c.Timeout != DefaultTimeout || c.Workers != DefaultWorkers || c.QueueSize != DefaultQueueSize || c.Logger == nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}
