//go:build unix

package jswaku

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/couriernet/courier/internal/testcert"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/mplex"
	"github.com/couriernet/courier/node"
)

// connectResult is what connect.js prints.
type connectResult struct {
	PeerID       string   `json:"peerId"`
	RemotePeer   string   `json:"remotePeer"`
	RemoteAddr   string   `json:"remoteAddr"`
	Multiplexer  string   `json:"multiplexer"`
	Encryption   string   `json:"encryption"`
	Protocols    []string `json:"protocols"`
	AgentVersion string   `json:"agentVersion"`
	Metadata     struct {
		ClusterID *int   `json:"clusterId"`
		Shards    []int  `json:"shards"`
		Error     string `json:"error"`
	} `json:"metadata"`
}

var cluster0 = map[string]any{"clusterId": 0}

// checkConnect asserts what a cluster-0 light node reports of a default
// node: mplex over Noise, the node's protocols from identify, and cluster 0
// with shard 0 from the metadata exchange.
func checkConnect(t *testing.T, n *node.Node, got connectResult, transport string) {
	t.Helper()
	if got.RemotePeer != n.Host().ID().String() {
		t.Errorf("remote peer %s, want %s", got.RemotePeer, n.Host().ID())
	}
	if !strings.Contains(got.RemoteAddr, transport) {
		t.Errorf("remote address %s, want one over %s", got.RemoteAddr, transport)
	}
	if got.Multiplexer != mplex.ID || got.Encryption != "/noise" {
		t.Errorf("muxer %q encryption %q, want %s and /noise", got.Multiplexer, got.Encryption, mplex.ID)
	}
	for _, p := range []string{"/ipfs/id/1.0.0", "/ipfs/ping/1.0.0", string(metadata.ProtocolID), "/vac/waku/relay/2.0.0"} {
		if !slices.Contains(got.Protocols, p) {
			t.Errorf("identify lists %q, missing %s", got.Protocols, p)
		}
	}
	if got.AgentVersion != node.Version {
		t.Errorf("agent %q, want %q", got.AgentVersion, node.Version)
	}
	md := got.Metadata
	if md.Error != "" || md.ClusterID == nil || *md.ClusterID != 0 || !slices.Equal(md.Shards, []int{0}) {
		t.Errorf("metadata %+v, want cluster 0 shards [0]", md)
	}
}

// A light node on cluster 0 connects over /ws with mplex; identify lists
// courier's protocols and the metadata exchange agrees on cluster and
// shards.
func TestLightNodeOverWebSocket(t *testing.T) {
	Require(t)
	n := StartNode(t, node.Config{Relay: true})
	var got connectResult
	Run(t, "connect.js", map[string]any{"addr": WebSocketAddr(t, n), "networkConfig": cluster0}, &got)
	checkConnect(t, n, got, "/ws")
}

// The same over /wss, with a self-signed certificate the client is told
// to trust (NODE_EXTRA_CA_CERTS).
func TestLightNodeOverSecureWebSocket(t *testing.T) {
	Require(t)
	certPath, keyPath, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := StartNode(t, node.Config{Relay: true, WebSocketSecure: true, WebSocketSecureCertPath: certPath, WebSocketSecureKeyPath: keyPath})
	addr := WebSocketAddr(t, n)
	if !strings.Contains(addr, "/wss/") {
		t.Fatalf("address %s is not /wss", addr)
	}
	var got connectResult
	Run(t, "connect.js", map[string]any{"addr": addr, "networkConfig": cluster0}, &got, "NODE_EXTRA_CA_CERTS="+certPath)
	checkConnect(t, n, got, "/wss")
}

// A light node left at js-waku's default cluster (1) is dropped by a
// cluster-0 node after the metadata exchange.
func TestDefaultClusterDropped(t *testing.T) {
	Require(t)
	n := StartNode(t, node.Config{Relay: true})
	var got struct {
		PeerID        string `json:"peerId"`
		ClusterID     int    `json:"clusterId"`
		Connected     bool   `json:"connected"`
		ClosedAfterMs int    `json:"closedAfterMs"`
	}
	Run(t, "stay.js", map[string]any{"addr": WebSocketAddr(t, n), "waitMs": 20000}, &got)
	if got.ClusterID != 1 || got.Connected || got.ClosedAfterMs < 0 {
		t.Fatalf("client on cluster %d: connected %v, closed after %d ms; want cluster 1, dropped", got.ClusterID, got.Connected, got.ClosedAfterMs)
	}
	if st := n.Metadata().Stats(); st.ClusterMismatch != 1 {
		t.Fatalf("metadata stats %+v, want one cluster mismatch", st)
	}
}

// 50 connects and hang-ups of a light node leave no connection, stream
// or goroutine behind on the node.
func TestReconnectLeavesNothingBehind(t *testing.T) {
	Require(t)
	n := StartNode(t, node.Config{Relay: true})
	addr := WebSocketAddr(t, n)
	args := map[string]any{"addr": addr, "networkConfig": cluster0, "times": 1}
	Run(t, "reconnect.js", args, nil) // warm up: lazily started goroutines
	before, _ := settle(t, n, -1)
	args["times"] = 50
	var got struct {
		Rounds int `json:"rounds"`
	}
	Run(t, "reconnect.js", args, &got)
	if got.Rounds != 50 {
		t.Fatalf("%d rounds, want 50", got.Rounds)
	}
	after, st := settle(t, n, before)
	if after > before || st.NumStreamsInbound != 0 || st.NumStreamsOutbound != 0 || st.NumConnsInbound != 0 {
		t.Fatalf("after 50 rounds: %d goroutines (%d before), resource manager %+v", after, before, st)
	}
	t.Logf("goroutines %d before, %d after 50 rounds", before, after)
}

// settle waits until the node has no connections and, when want >= 0, no
// more than want goroutines (or a minute passed), then returns the
// goroutine count and the resource manager's system scope.
func settle(t *testing.T, n *node.Node, want int) (int, network.ScopeStat) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var st network.ScopeStat
	for {
		n.Host().Network().ResourceManager().ViewSystem(func(s network.ResourceScope) error {
			st = s.Stat()
			return nil
		})
		g := runtime.NumGoroutine()
		idle := len(n.Host().Network().Conns()) == 0 && st.NumConnsInbound == 0 && st.NumStreamsInbound == 0
		if idle && (want < 0 || g <= want) || ctx.Err() != nil {
			return g, st
		}
		time.Sleep(50 * time.Millisecond)
	}
}
