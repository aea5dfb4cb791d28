package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/metadata"
)

// TestNodeUsesResourceManager: a node's host is built with the node's
// resource manager: with MaxConnections 2 it holds two peers and refuses a
// third (go-libp2p's default would take it).
func TestNodeUsesResourceManager(t *testing.T) {
	n := startTestNode(t, Config{Relay: true, MaxConnections: 2})
	connected := 0
	for i := range 3 {
		c, err := libp2p.New(libp2p.NoListenAddrs)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The node disconnects a peer that does not answer Waku metadata
		// for its cluster.
		md, err := metadata.New(c, metadata.Config{Shards: func() []uint16 { return []uint16{0} }})
		if err != nil {
			t.Fatal(err)
		}
		defer md.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = c.Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()})
		cancel()
		if err == nil {
			// A refused connection may complete the dial and close at once.
			time.Sleep(200 * time.Millisecond)
			if c.Network().Connectedness(n.Host().ID()) == network.Connected {
				connected++
			}
		}
		t.Logf("client %d: %v", i, err)
	}
	if connected != 2 {
		t.Errorf("%d of 3 clients connected, want 2", connected)
	}
}
