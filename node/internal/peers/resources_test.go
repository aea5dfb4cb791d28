package peers

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/couriernet/courier/mplex"
)

// TestResourceLimits: the node's connection limits reach go-libp2p's
// resource manager, and a peer may open as many streams as mplex allows.
func TestResourceLimits(t *testing.T) {
	limits, _ := resourceLimits(150, 5)
	p := limits.ToPartialLimitConfig()
	if p.System.Conns != 150 || p.System.ConnsInbound != 150 || p.System.ConnsOutbound != 150 {
		t.Errorf("system connections %v/%v/%v, want 150", p.System.Conns, p.System.ConnsInbound, p.System.ConnsOutbound)
	}
	if p.PeerDefault.StreamsInbound != rcmgr.LimitVal(mplex.DefaultMaxInboundStreams) || p.PeerDefault.Streams <= p.PeerDefault.StreamsInbound {
		t.Errorf("per-peer streams inbound %v, all %v; want mplex's %d and more", p.PeerDefault.StreamsInbound, p.PeerDefault.Streams, mplex.DefaultMaxInboundStreams)
	}
}

// TestResourceManagerRefuses: a host with the node's resource manager for
// two connections accepts two peers and refuses the third; one that allows
// two per IP refuses the third from one address even with room in all.
func TestResourceManagerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name            string
		maxConns, coloc int
		ip              string
	}{
		{"max-connections", 2, -1, "127.0.0.1"},
		{"colocation", 100, 1, "127.0.0.1"}, // 2 per IP
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits, subnets := resourceLimits(tc.maxConns, tc.coloc)
			// go-libp2p exempts 127.0.0.0/8 by a network-prefix limit; one
			// for a documentation prefix instead makes loopback count as any
			// other address.
			other := rcmgr.WithNetworkPrefixLimit([]rcmgr.NetworkPrefixLimit{{Network: netip.MustParsePrefix("192.0.2.0/24"), ConnCount: 1}}, nil)
			rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits), subnets, other)
			if err != nil {
				t.Fatal(err)
			}
			server, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/"+tc.ip+"/tcp/0"), libp2p.ResourceManager(rm))
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			connected := 0
			for i := range 3 {
				c, err := libp2p.New(libp2p.NoListenAddrs)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = c.Connect(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()})
				cancel()
				if err == nil {
					// A refused connection may complete the dial and close at once.
					time.Sleep(200 * time.Millisecond)
					if c.Network().Connectedness(server.ID()) == network.Connected {
						connected++
					}
				}
				t.Logf("client %d: %v", i, err)
			}
			if connected != 2 {
				t.Errorf("%d of 3 clients connected, want 2", connected)
			}
		})
	}
}
