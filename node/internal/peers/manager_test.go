package peers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/relay"
)

// newHost returns a libp2p host on a free TCP port of 127.0.0.1, closed
// when the test ends.
func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// testConfig is the node's default peer manager configuration: 150
// connections split 50:50, five peers per IP, 1000 peers kept.
func testConfig() Config {
	return Config{MaxConnections: 150, RelayShare: 0.5, ColocationLimit: 5, Capacity: 1000,
		RedialMin: time.Second, RedialMax: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)}
}

func TestBackoffIsNwakus(t *testing.T) {
	for failed, want := range map[int]time.Duration{1: 120 * time.Second, 2: 480 * time.Second, 3: 1920 * time.Second, 4: 7680 * time.Second} {
		if got := backoff(failed); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failed, got, want)
		}
	}
}

// TestRelayTargetsFromShare: a third of the relay share of MaxConnections
// is dialled out, the rest left to inbound peers (nwaku peer_manager.nim);
// the node parses the share from --relay-service-ratio.
func TestRelayTargetsFromShare(t *testing.T) {
	for _, tc := range []struct {
		max     int
		share   float64
		out, in int
	}{{150, 0.5, 25, 50}, {50, 0.6, 10, 20}} {
		cfg := testConfig()
		cfg.MaxConnections, cfg.RelayShare = tc.max, tc.share
		m := New(newHost(t), nil, cfg)
		if m.outTarget != tc.out || m.inTarget != tc.in {
			t.Errorf("%d %v: out %d in %d, want %d %d", tc.max, tc.share, m.outTarget, m.inTarget, tc.out, tc.in)
		}
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
	cfg := testConfig()
	cfg.Capacity = 2
	m := New(newHost(t), nil, cfg)
	defer m.Close()
	dead := randomPeer(t, "/ip4/127.0.0.1/tcp/1")
	m.Add(dead, state.Discv5)
	if o, _ := m.Learned(dead.ID); o != state.Discv5 {
		t.Fatalf("origin %s", o)
	}
	for i := 1; i <= maxFailedAttempts; i++ {
		if i > 1 && len(m.candidates()) != 0 {
			t.Fatalf("after %d failures the peer is dialled again within its backoff", i-1)
		}
		m.dial(context.Background(), peer.AddrInfo{ID: dead.ID, Addrs: dead.Addrs})
	}
	if _, ok := m.Learned(dead.ID); ok {
		t.Fatal("peer kept after five failed dials")
	}
	if st := m.Stats(); st.DialFailures != maxFailedAttempts || st.Removed != 1 {
		t.Errorf("stats %+v", st)
	}

	bad := randomPeer(t, "/ip4/127.0.0.1/tcp/2")
	m.Add(bad, state.PeerExchange)
	m.MetadataChecked(bad.ID, nil, errors.New("metadata: peer is on another cluster"))
	if _, ok := m.Learned(bad.ID); ok || m.Stats().MetadataPruned != 1 {
		t.Fatal("peer that failed the metadata check kept")
	}

	a, b, c := randomPeer(t, "/ip4/127.0.0.1/tcp/3"), randomPeer(t, "/ip4/127.0.0.1/tcp/4"), randomPeer(t, "/ip4/127.0.0.1/tcp/5")
	m.Add(a, state.Discv5)
	m.Add(b, state.Discv5)
	m.dial(context.Background(), peer.AddrInfo{ID: a.ID, Addrs: a.Addrs})
	m.Add(c, state.DNS)
	if _, ok := m.Learned(a.ID); ok {
		t.Error("full store kept the failing peer")
	}
	if o, _ := m.Learned(c.ID); o != state.DNS {
		t.Errorf("new peer origin %q", o)
	}
}

// TestPeerPersistence writes the known peers when the manager stops and
// reads them back at the next start with the same file.
func TestPeerPersistence(t *testing.T) {
	cfg := testConfig()
	cfg.PersistPath = filepath.Join(t.TempDir(), "peers.json")
	m := New(newHost(t), nil, cfg)
	m.Run(context.Background())
	p := randomPeer(t, "/ip4/127.0.0.1/tcp/1")
	m.Add(p, state.PeerExchange)
	m.Close()
	m2 := New(newHost(t), nil, cfg)
	defer m2.Close()
	m2.load()
	if o, ok := m2.Learned(p.ID); !ok || o != state.PeerExchange {
		t.Fatalf("after restart: origin %q, known %v", o, ok)
	}
}

// TestPeerPersistenceBounded: peers.json holds at most
// --peer-store-capacity peers, inbound ones included, with their saved
// protocols and origins read back.
func TestPeerPersistenceBounded(t *testing.T) {
	cfg := testConfig()
	cfg.PersistPath, cfg.Capacity = filepath.Join(t.TempDir(), "peers.json"), 2
	h := newHost(t)
	m := New(h, nil, cfg)
	a, b, c := randomPeer(t, "/ip4/127.0.0.1/tcp/1"), randomPeer(t, "/ip4/127.0.0.1/tcp/2"), randomPeer(t, "/ip4/127.0.0.1/tcp/3")
	m.Add(a, state.DNS)
	m.connected(b.ID)
	h.Peerstore().AddAddrs(b.ID, b.Addrs, time.Hour)
	if err := h.Peerstore().AddProtocols(b.ID, relay.ProtocolID); err != nil {
		t.Fatal(err)
	}
	if err := h.Peerstore().Put(b.ID, "AgentVersion", "nwaku-test"); err != nil {
		t.Fatal(err)
	}
	m.save()
	m.connected(c.ID) // evicts the oldest
	m.save()
	b2, err := os.ReadFile(cfg.PersistPath)
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
	m.Close()
	h2 := newHost(t)
	m2 := New(h2, nil, cfg)
	defer m2.Close()
	relayPeers := m2.load()
	if len(relayPeers) != 1 || relayPeers[0].ID != b.ID || relayPeers[0].Addrs[0].String() != "/ip4/127.0.0.1/tcp/2" {
		t.Errorf("relay peers to reconnect: %v", relayPeers)
	}
	if o, ok := m2.Learned(b.ID); !ok || o != state.UnknownOrigin {
		t.Errorf("inbound peer: origin %q, known %v", o, ok)
	}
	// What /admin/v1/peers lists of it: its agent and protocols, restored
	// into the peerstore.
	agent, _ := h2.Peerstore().Get(b.ID, "AgentVersion")
	protos, _ := h2.Peerstore().GetProtocols(b.ID)
	if agent != "nwaku-test" || !slices.Equal(protos, []protocol.ID{relay.ProtocolID}) {
		t.Errorf("inbound peer after restart: agent %q, protocols %v", agent, protos)
	}
	if _, ok := m2.Learned(c.ID); !ok {
		t.Error("peer without addresses not kept")
	}
}
