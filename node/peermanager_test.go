package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/relay"
)

func TestBackoffIsNwakus(t *testing.T) {
	for failed, want := range map[int]time.Duration{1: 120 * time.Second, 2: 480 * time.Second, 3: 1920 * time.Second, 4: 7680 * time.Second} {
		if got := backoff(failed); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failed, got, want)
		}
	}
}

func TestRelayTargetsFromRatio(t *testing.T) {
	for _, tc := range []struct {
		max       int
		ratio     string
		out, in   int
		wantError bool
	}{{150, "50:50", 25, 50, false}, {50, "60:40", 10, 20, false}, {150, "50:40", 0, 0, true}, {150, "x", 0, 0, true}} {
		cfg := Config{ListenAddress: "127.0.0.1", NoListen: true, MaxConnections: tc.max, Discovery: DiscoveryConfig{RelayServiceRatio: tc.ratio}}
		n, err := New(cfg)
		if tc.wantError {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%s: %v", tc.ratio, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n.peers.outTarget != tc.out || n.peers.inTarget != tc.in {
			t.Errorf("%d %s: out %d in %d, want %d %d", tc.max, tc.ratio, n.peers.outTarget, n.peers.inTarget, tc.out, tc.in)
		}
		n.Stop(context.Background())
	}
}

func randomPeer(t *testing.T, addr string) discovery.Peer {
	t.Helper()
	_, pub, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPublicKey(pub)
	return discovery.Peer{ID: id, Addrs: []ma.Multiaddr{ma.StringCast(addr)}, HasCaps: true, Caps: discovery.Relay}
}

// TestPeerManagerForgetsFailingPeers: a peer nobody answers for is backed
// off after each failed dial and forgotten after the fifth; a peer that
// fails the metadata check is forgotten at once; a full store evicts the
// peer with most failures.
func TestPeerManagerForgetsFailingPeers(t *testing.T) {
	cfg := Config{ListenAddress: "127.0.0.1", Discovery: DiscoveryConfig{PeerStoreCapacity: 2}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	pm := n.peers
	dead := randomPeer(t, "/ip4/127.0.0.1/tcp/1")
	pm.add(dead, state.Discv5)
	if o, _ := pm.origin(dead.ID); o != state.Discv5 {
		t.Fatalf("origin %s", o)
	}
	for i := 1; i <= maxFailedAttempts; i++ {
		if i > 1 && len(pm.candidates()) != 0 {
			t.Fatalf("after %d failures the peer is dialled again within its backoff", i-1)
		}
		pm.dial(context.Background(), peer.AddrInfo{ID: dead.ID, Addrs: dead.Addrs})
	}
	if _, ok := pm.origin(dead.ID); ok {
		t.Fatal("peer kept after five failed dials")
	}
	if st := n.PeerStats(); st.DialFailures != maxFailedAttempts || st.Removed != 1 {
		t.Errorf("stats %+v", st)
	}

	bad := randomPeer(t, "/ip4/127.0.0.1/tcp/2")
	pm.add(bad, state.PeerExchange)
	n.onMetadataChecked(bad.ID, errors.New("metadata: peer is on another cluster"))
	if _, ok := pm.origin(bad.ID); ok || n.PeerStats().MetadataPruned != 1 {
		t.Fatal("peer that failed the metadata check kept")
	}

	a, b, c := randomPeer(t, "/ip4/127.0.0.1/tcp/3"), randomPeer(t, "/ip4/127.0.0.1/tcp/4"), randomPeer(t, "/ip4/127.0.0.1/tcp/5")
	pm.add(a, state.Discv5)
	pm.add(b, state.Discv5)
	pm.dial(context.Background(), peer.AddrInfo{ID: a.ID, Addrs: a.Addrs})
	pm.add(c, state.DNS)
	if _, ok := pm.origin(a.ID); ok {
		t.Error("full store kept the failing peer")
	}
	if o, _ := pm.origin(c.ID); o != state.DNS {
		t.Errorf("new peer origin %q", o)
	}
}

// TestPeerPersistence writes the known peers at Stop and reads them back
// at the next start on the same data directory.
func TestPeerPersistence(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ListenAddress: "127.0.0.1", DataDir: dir, Discovery: DiscoveryConfig{PeerPersistence: true}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := randomPeer(t, "/ip4/127.0.0.1/tcp/1")
	n.peers.add(p, state.PeerExchange)
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	n2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Stop(context.Background())
	n2.peers.load()
	if o, ok := n2.peers.origin(p.ID); !ok || o != state.PeerExchange {
		t.Fatalf("after restart: origin %q, known %v", o, ok)
	}
}

// countingHandler counts the records whose message contains match.
type countingHandler struct {
	match string
	n     *atomic.Int64
}

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }

// TestStaticNodeOfAnotherCluster: a static node the metadata check
// disconnects for its cluster is not re-dialled, as nwaku deletes such a
// peer from its peer store (waku/node/peer_manager/peer_manager.nim
// refreshPeerMetadata); the node says so once, as a warning. The re-dial
// wait is tiny, so a node that kept dialling would dial again between
// that warning and Stop.
func TestStaticNodeOfAnotherCluster(t *testing.T) {
	ctx := context.Background()
	other, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Stop(ctx) })
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var inbound atomic.Int64
	other.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(network.Network, network.Conn) { inbound.Add(1) }})

	var warned atomic.Int64
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, StaticNodes: other.ListenAddresses()[:1],
		StaticRedialMin: time.Millisecond, StaticRedialMax: time.Millisecond,
		Logger: slog.New(countingHandler{"not dialling it again", &warned})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(ctx) })
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the static node refused", func() bool { return warned.Load() == 1 })
	dials := inbound.Load()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := inbound.Load(); got != dials || warned.Load() != 1 {
		t.Errorf("%d connections after the refusal, %d before; warned %d times, want once", got, dials, warned.Load())
	}
}

// TestPeerPersistenceKeepsEveryPeer: a peer dialled through POST
// /admin/v1/peers and one that connected inbound are written too, as
// nwaku stores every peer on Joined and Left; after a restart both are
// known (UnknownOrigin, nwaku's default) and, being relay peers, dialled
// again (nwaku startRelay reconnectPeers).
func TestPeerPersistenceKeepsEveryPeer(t *testing.T) {
	ctx := context.Background()
	start := func(cfg Config) *Node {
		t.Helper()
		cfg.Relay = true
		return startTestNode(t, cfg)
	}
	cfg := Config{DataDir: t.TempDir(), Discovery: DiscoveryConfig{PeerPersistence: true}}
	n1, viaAdmin, inbound := start(cfg), start(Config{}), start(Config{})
	if err := (*restAPI)(n1).ConnectPeer(ctx, viaAdmin.ListenAddresses()[0]); err != nil {
		t.Fatal(err)
	}
	if err := inbound.Host().Connect(ctx, peer.AddrInfo{ID: n1.Host().ID(), Addrs: n1.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	ids := []peer.ID{viaAdmin.Host().ID(), inbound.Host().ID()}
	testwait.Until(t, "identify and metadata of both peers", func() bool {
		for _, id := range ids {
			if p, _ := n1.Host().Peerstore().SupportsProtocols(id, relay.ProtocolID); len(p) == 0 {
				return false
			}
			if _, ok := n1.Metadata().Peer(id); !ok {
				return false
			}
		}
		return true
	})
	if err := n1.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	n1 = start(cfg)
	testwait.Until(t, "reconnection to both peers", func() bool {
		for _, id := range ids {
			if n1.Host().Network().Connectedness(id) != network.Connected {
				return false
			}
		}
		return true
	})
	known := map[string]state.Origin{}
	for _, p := range (*restAPI)(n1).Peers() {
		_, id, _ := strings.Cut(p.Multiaddr, "/p2p/")
		known[id] = p.Origin
	}
	for _, id := range ids {
		if o, ok := known[id.String()]; !ok || o != state.UnknownOrigin {
			t.Errorf("peer %s after restart: origin %q, listed %v", id, o, ok)
		}
	}
}

// TestPeerPersistenceBounded: peers.json holds at most
// --peer-store-capacity peers, inbound ones included, with their saved
// protocols and origins read back.
func TestPeerPersistenceBounded(t *testing.T) {
	cfg := Config{ListenAddress: "127.0.0.1", DataDir: t.TempDir(), Discovery: DiscoveryConfig{PeerPersistence: true, PeerStoreCapacity: 2}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	pm := n.peers
	a, b, c := randomPeer(t, "/ip4/127.0.0.1/tcp/1"), randomPeer(t, "/ip4/127.0.0.1/tcp/2"), randomPeer(t, "/ip4/127.0.0.1/tcp/3")
	pm.add(a, state.DNS)
	pm.connected(b.ID)
	n.host.Peerstore().AddAddrs(b.ID, b.Addrs, time.Hour)
	if err := n.host.Peerstore().AddProtocols(b.ID, relay.ProtocolID); err != nil {
		t.Fatal(err)
	}
	if err := n.host.Peerstore().Put(b.ID, "AgentVersion", "nwaku-test"); err != nil {
		t.Fatal(err)
	}
	pm.save()
	pm.connected(c.ID) // evicts the oldest
	pm.save()
	b2, err := os.ReadFile(filepath.Join(cfg.DataDir, "peers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved []savedPeer
	if err := json.Unmarshal(b2, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved) != 2 {
		t.Fatalf("saved %d peers, want 2: %s", len(saved), b2)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	n2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Stop(context.Background())
	relayPeers := n2.peers.load()
	if len(relayPeers) != 1 || relayPeers[0].ID != b.ID || relayPeers[0].Addrs[0].String() != "/ip4/127.0.0.1/tcp/2" {
		t.Errorf("relay peers to reconnect: %v", relayPeers)
	}
	if o, ok := n2.peers.origin(b.ID); !ok || o != state.UnknownOrigin {
		t.Errorf("inbound peer: origin %q, known %v", o, ok)
	}
	if p := (*restAPI)(n2).peer(b.ID); p.Agent != "nwaku-test" || !slices.Equal(p.Protocols, []string{string(relay.ProtocolID)}) {
		t.Errorf("inbound peer after restart: agent %q, protocols %v", p.Agent, p.Protocols)
	}
	if _, ok := n2.peers.origin(c.ID); !ok {
		t.Error("peer without addresses not kept")
	}
}
