//go:build unix

package jswaku

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/peerexchange"
)

type pxResult struct {
	Known     []string `json:"known"`
	Connected []string `json:"connected"`
}

// TestLightNodePeerExchange: three courier nodes find each other with
// discv5; a js-waku light node told only of the first, with peer exchange
// on, learns the other two from it.
func TestLightNodePeerExchange(t *testing.T) {
	Require(t)
	discv5 := func(boot ...string) node.Config {
		cfg := node.Config{Relay: true}
		cfg.Discovery = node.DiscoveryConfig{Discv5: true, Discv5BootstrapNodes: boot, PeerExchange: true}
		return cfg
	}
	first := StartNode(t, discv5())
	others := []*node.Node{StartNode(t, discv5(first.ENR())), StartNode(t, discv5(first.ENR()))}
	var ids []string
	for _, o := range others {
		ids = append(ids, o.Host().ID().String())
	}
	// The first node hands out the peers its own discv5 found, which may
	// come after the others have dialed it (and so after its peer store
	// holds them): ask it by peer exchange until it hands out both.
	waitExchangePool(t, first, others[0], ids)
	before, _ := first.PeerExchangeStats()
	var out pxResult
	Run(t, "px.js", map[string]any{"addr": WebSocketAddr(t, first), "others": ids, "networkConfig": cluster0}, &out)
	slices.Sort(out.Known)
	slices.Sort(ids)
	if !slices.Equal(out.Known, ids) {
		t.Errorf("light node knows %q of %q", out.Known, ids)
	}
	// js-waku 0.0.36's connection manager does not always dial the peers
	// it learns within the script's time; what it did is reported, not
	// asserted.
	t.Logf("light node learned %d peers by peer exchange and connected to %d of them", len(out.Known), len(out.Connected))
	if srv, _ := first.PeerExchangeStats(); srv.Requests == before.Requests || srv.PeersSent < before.PeersSent+2 {
		t.Errorf("peer exchange server stats %+v, before the light node %+v", srv, before)
	}
}

// waitExchangePool asks server by peer exchange, from asker, until the
// peers it hands out include every one of ids, for at most a minute.
func waitExchangePool(t *testing.T, server, asker *node.Node, ids []string) {
	t.Helper()
	client := peerexchange.NewClient(asker.Host(), nil)
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := client.Request(ctx, server.Host().ID(), peerexchange.MaxPeers)
		cancel()
		var handed []string
		for _, p := range got {
			handed = append(handed, p.ID.String())
		}
		if !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(handed, id) }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first node hands out %q by peer exchange (%v), want %q; stats %+v", handed, err, ids, server.PeerStats())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
