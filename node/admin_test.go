package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/couriernet/courier/node/state"

	"github.com/couriernet/courier/internal/freeport"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/rest"
)

// restCall sends one request to the node's REST API and returns the status
// and body.
func restCall(t *testing.T, n *Node, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+n.HTTPAddrs()[0]+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// peerIDs returns the peer ids of peers, from their multiaddrs, and fails
// when a peer has no score (nwaku writes one for every relay peer).
func peerIDs(t *testing.T, peers []rest.Peer) []string {
	t.Helper()
	var out []string
	for _, p := range peers {
		if p.Score == nil {
			t.Errorf("relay peer %s without score", p.Multiaddr)
		}
		_, id, _ := strings.Cut(p.Multiaddr, "/p2p/")
		out = append(out, id)
	}
	return out
}

// TestAdminRelayMeshPeers runs nwaku's admin test setup
// (tests/wakunode_rest/test_rest_admin.nim: three relay nodes of cluster 1
// on shard 5, node 1 connecting to nodes 2 and 3 through POST
// /admin/v1/peers) and asks node 1 for its relay, mesh, service peers and
// stats: both peers on shard 5, with scores, and, as in nwaku's "get relay
// peers", no peers on shard 99; then node 3 stops and leaves them.
func TestAdminRelayMeshPeers(t *testing.T) {
	ctx := context.Background()
	start := func(rest bool) *Node {
		return startTestNode(t, Config{Relay: true, ClusterID: 1, Shards: []uint16{5}, REST: rest, RESTAdmin: rest, RESTAddress: "127.0.0.1"})
	}
	n1, n2, n3 := start(true), start(false), start(false)
	addrs, _ := json.Marshal([]string{n2.ListenAddresses()[0], n3.ListenAddresses()[0]})
	if code, body := restCall(t, n1, "POST", "/admin/v1/peers", string(addrs)); code != 200 || body != "OK" {
		t.Fatalf("POST /admin/v1/peers: %d %s", code, body)
	}
	id2, id3 := n2.Host().ID().String(), n3.Host().ID().String()
	both := func(ids []string) bool {
		return len(ids) == 2 && strings.Contains(strings.Join(ids, " "), id2) && strings.Contains(strings.Join(ids, " "), id3)
	}
	for _, kind := range []string{"relay", "mesh"} {
		testwait.Until(t, kind+" peers 2 and 3 on shard 5", func() bool {
			code, body := restCall(t, n1, "GET", "/admin/v1/peers/"+kind, "")
			var got []rest.PeersOfShard
			if code != 200 || json.Unmarshal([]byte(body), &got) != nil {
				t.Fatalf("GET /admin/v1/peers/%s: %d %s", kind, code, body)
			}
			if len(got) != 1 || got[0].Shard != 5 {
				t.Fatalf("GET /admin/v1/peers/%s: %s, want shard 5 only", kind, body)
			}
			return both(peerIDs(t, got[0].Peers))
		})
		code, body := restCall(t, n1, "GET", "/admin/v1/peers/"+kind+"/on/5", "")
		var on5 rest.PeersOfShard
		if code != 200 || json.Unmarshal([]byte(body), &on5) != nil || on5.Shard != 5 || !both(peerIDs(t, on5.Peers)) {
			t.Fatalf("GET /admin/v1/peers/%s/on/5: %d %s", kind, code, body)
		}
		if code, body := restCall(t, n1, "GET", "/admin/v1/peers/"+kind+"/on/99", ""); code != 200 || body != `{"shard":99,"peers":[]}` {
			t.Fatalf("GET /admin/v1/peers/%s/on/99: %d %s", kind, code, body)
		}
	}

	code, body := restCall(t, n1, "GET", "/admin/v1/peers/service", "")
	var service []rest.Peer
	if code != 200 || json.Unmarshal([]byte(body), &service) != nil || len(service) != 2 {
		t.Fatalf("GET /admin/v1/peers/service: %d %s", code, body)
	}
	for _, p := range service {
		if len(p.Protocols) != 1 || p.Protocols[0] != "/vac/waku/relay/2.0.0" || p.Score != nil {
			t.Errorf("service peer %+v, want relay only, no score", p)
		}
	}

	code, body = restCall(t, n1, "GET", "/admin/v1/peers/stats", "")
	var stats map[string]map[string]int
	if code != 200 || json.Unmarshal([]byte(body), &stats) != nil {
		t.Fatalf("GET /admin/v1/peers/stats: %d %s", code, body)
	}
	for group, want := range map[string]map[string]int{
		"Sum":              {"Total peers": 2},
		"By Connectedness": {"Connected": 2, "NotConnected": 0, "CannotConnect": 0, "CanConnect": 0},
		"Relay peers":      {"5": 2, "Total relay peers": 1},
		"Mesh peers":       {"5": 2, "Total mesh peers": 1},
	} {
		for k, v := range want {
			if stats[group][k] != v || len(stats[group]) != len(want) {
				t.Errorf("stats %s: %v, want %v", group, stats[group], want)
				break
			}
		}
	}
	if got := stats["By Protocols"]["/vac/waku/relay/2.0.0"]; got != 2 {
		t.Errorf("stats: %d relay peers by protocol, want 2", got)
	}
	if !strings.HasPrefix(body, `{"Sum":{"Total peers":2},"By Connectedness":{"Connected":2,`) {
		t.Errorf("stats not in nwaku's order: %s", body)
	}

	// Node 3 stops: it leaves node 1's mesh and relay peers.
	if err := n3.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"relay", "mesh"} {
		testwait.Until(t, "node 3 gone from the "+kind+" peers", func() bool {
			_, body := restCall(t, n1, "GET", "/admin/v1/peers/"+kind+"/on/5", "")
			var on5 rest.PeersOfShard
			if err := json.Unmarshal([]byte(body), &on5); err != nil {
				t.Fatalf("GET /admin/v1/peers/%s/on/5: %s", kind, body)
			}
			ids := peerIDs(t, on5.Peers)
			return len(ids) == 1 && ids[0] == id2
		})
	}
	testConnectednessAfterStop(t, n1, id3)
}

// testConnectednessAfterStop checks what n1 says of node 3 once it left: as
// nwaku's peer manager, CanConnect after the peer disconnected
// (waku/node/peer_manager/peer_manager.nim onPeerEvent, Left) with the
// shards it reported in its metadata kept (nwaku's ShardBook); then a dial
// that fails through POST /admin/v1/peers leaves the peer CannotConnect
// (peer_manager.nim connectPeer; tests/wakunode_rest/test_rest_admin.nim
// "Set wrong peer": connected == CannotConnect).
func testConnectednessAfterStop(t *testing.T, n1 *Node, id3 string) {
	peerOf := func(id string) rest.Peer {
		t.Helper()
		code, body := restCall(t, n1, "GET", "/admin/v1/peer/"+id, "")
		var p rest.Peer
		if code != 200 || json.Unmarshal([]byte(body), &p) != nil {
			t.Fatalf("GET /admin/v1/peer/%s: %d %s", id, code, body)
		}
		return p
	}
	testwait.Until(t, "node 3 CanConnect", func() bool { return peerOf(id3).Connected == state.CanConnect })
	if p := peerOf(id3); !slices.Equal(p.Shards, []uint16{5}) {
		t.Errorf("node 3 after it left: shards %v, want [5]", p.Shards)
	}

	wrongID := "16Uiu2HAm6HZZr7aToTvEBPpiys4UxajCTU97zj5v7RNR2gbniy1D" // nwaku's test's
	wrong := "/ip4/127.0.0.1/tcp/" + strconv.Itoa(freeport.Get(t, 1)[0]) + "/p2p/" + wrongID
	if code, body := restCall(t, n1, "POST", "/admin/v1/peers", `["`+wrong+`"]`); code != 400 || body != "Failed to connect to peer at index: 0 - "+wrong {
		t.Fatalf("POST /admin/v1/peers %s: %d %s", wrong, code, body)
	}
	if p := peerOf(wrongID); p.Connected != state.CannotConnect || p.Multiaddr != wrong {
		t.Errorf("peer of the failed dial: %+v, want CannotConnect at %s", p, wrong)
	}

	code, body := restCall(t, n1, "GET", "/admin/v1/peers/stats", "")
	if code != 200 || !strings.HasPrefix(body, `{"Sum":{"Total peers":3},"By Connectedness":{"Connected":1,"NotConnected":0,"CannotConnect":1,"CanConnect":1},`) {
		t.Errorf("GET /admin/v1/peers/stats: %d %s", code, body)
	}
	// Protocols are listed sorted, the same on every call.
	code, body = restCall(t, n1, "GET", "/admin/v1/peers", "")
	var peers []rest.Peer
	if code != 200 || json.Unmarshal([]byte(body), &peers) != nil {
		t.Fatalf("GET /admin/v1/peers: %d %s", code, body)
	}
	for _, p := range peers {
		if !slices.IsSorted(p.Protocols) {
			t.Errorf("peer %s: protocols %q not sorted", p.Multiaddr, p.Protocols)
		}
	}
}

// TestAdminRelayOff: without relay the relay and mesh routes answer nwaku's
// 503 text (waku/rest_api/endpoint/admin/handlers.nim).
func TestAdminRelayOff(t *testing.T) {
	ctx := context.Background()
	n, err := New(Config{ListenAddress: "127.0.0.1", REST: true, RESTAdmin: true, RESTAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/admin/v1/peers/relay", "/admin/v1/peers/mesh/on/0"} {
		if code, body := restCall(t, n, "GET", path, ""); code != 503 || body != "Error: Relay Protocol is not mounted to the node" {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
}
