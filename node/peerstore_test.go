package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/node/state"
)

// Peers that connect once and leave are forgotten down to
// --peer-store-capacity, as nwaku's prunePeerStore does: 40 of them with a
// capacity of 10 left all 40 in the libp2p peerstore before (about 7 kB
// each, without end as new identities come). A peer the manager keeps and
// a connected one stay.
func TestPeerstorePrunedToCapacity(t *testing.T) {
	const capacity, visitors = 10, 40
	n := startTestNode(t, Config{Discovery: DiscoveryConfig{PeerStoreCapacity: capacity}})
	target := peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}
	_, pub, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	keptID, _ := peer.IDFromPublicKey(pub)
	n.peers.Add(discovery.Peer{ID: keptID, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/192.0.2.1/tcp/1")}, HasCaps: true, Caps: discovery.Relay}, state.Static)
	stay, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer stay.Close()
	// It passes the node's metadata check, so it stays connected.
	if _, err := metadata.New(stay, metadata.Config{Shards: func() []uint16 { return []uint16{0} }}); err != nil {
		t.Fatal(err)
	}
	if err := stay.Connect(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	for range visitors {
		h, err := libp2p.New(libp2p.NoListenAddrs)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Connect(context.Background(), target); err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	ps := n.Host().Peerstore()
	deadline := time.Now().Add(20 * time.Second)
	for len(ps.Peers())-1 > capacity {
		if time.Now().After(deadline) {
			t.Fatalf("peerstore holds %d peers after %d visitors left, want at most %d (--peer-store-capacity)", len(ps.Peers())-1, visitors, capacity)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(ps.Addrs(keptID)) == 0 {
		t.Errorf("the managed peer %s lost its addresses", keptID)
	}
	if n.Host().Network().Connectedness(stay.ID()) != network.Connected || ps.PubKey(stay.ID()) == nil {
		t.Errorf("the connected peer %s was forgotten", stay.ID())
	}
}
