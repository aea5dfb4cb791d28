//go:build unix

package jswaku

import (
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/node"
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
	// The first node hands out what discv5 found: wait for both.
	deadline := time.Now().Add(time.Minute)
	for {
		found := 0
		for _, p := range first.Host().Peerstore().Peers() {
			if slices.Contains(ids, p.String()) {
				found++
			}
		}
		if found == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first node found %d of the others, stats %+v", found, first.PeerStats())
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	if srv, _ := first.PeerExchangeStats(); srv.Requests == 0 || srv.PeersSent < 2 {
		t.Errorf("peer exchange server stats %+v", srv)
	}
}
