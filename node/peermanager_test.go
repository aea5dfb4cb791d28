package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/relay"
)

func TestRelayTargetsFromRatio(t *testing.T) {
	for _, tc := range []struct {
		ratio     string
		share     float64
		wantError bool
	}{{"50:50", 0.5, false}, {"60:40", 0.6, false}, {"50:40", 0, true}, {"x", 0, true}} {
		cfg := Config{ListenAddress: "127.0.0.1", NoListen: true, Discovery: DiscoveryConfig{RelayServiceRatio: tc.ratio}}
		p, err := cfg.resolve()
		if tc.wantError {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("%s: %v", tc.ratio, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The targets of the share: peers.TestRelayTargetsFromShare.
		if p.peers.RelayShare != tc.share {
			t.Errorf("%s: relay share %v, want %v", tc.ratio, p.peers.RelayShare, tc.share)
		}
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
	var warned atomic.Int64
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, StaticNodes: other.ListenAddresses()[:1],
		StaticRedialMin: time.Millisecond, StaticRedialMax: time.Millisecond,
		Logger: slog.New(countingHandler{"not dialling it again", &warned})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(ctx) })
	// n's own dials of other are counted on n, where a connection is
	// notified before the dial returns: other may learn of one only after
	// n has been refused, logged it and counted.
	var dialled atomic.Int64
	n.Host().Network().Notify(&network.NotifyBundle{ConnectedF: func(_ network.Network, c network.Conn) {
		if c.RemotePeer() == other.Host().ID() && c.Stat().Direction == network.DirOutbound {
			dialled.Add(1)
		}
	}})
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the static node refused", func() bool { return warned.Load() == 1 })
	dials := dialled.Load()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := dialled.Load(); got != dials || dials == 0 || warned.Load() != 1 {
		t.Errorf("%d dials after the refusal, %d before; warned %d times, want once", got, dials, warned.Load())
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
	if err := n1.restAPI().ConnectPeer(ctx, viaAdmin.ListenAddresses()[0]); err != nil {
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
	for _, p := range n1.restAPI().Peers() {
		_, id, _ := strings.Cut(p.Multiaddr, "/p2p/")
		known[id] = p.Origin
	}
	for _, id := range ids {
		if o, ok := known[id.String()]; !ok || o != state.UnknownOrigin {
			t.Errorf("peer %s after restart: origin %q, listed %v", id, o, ok)
		}
	}
}
