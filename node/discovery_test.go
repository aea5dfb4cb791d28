package node

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/network"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/freeport"
	"github.com/couriernet/courier/rest"
)

func decodeENR(t *testing.T, text string) discovery.Peer {
	t.Helper()
	n, err := discovery.ParseENR(text)
	if err != nil {
		t.Fatalf("ENR %q: %v", text, err)
	}
	p, err := discovery.DecodePeer(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addrStrings(as []ma.Multiaddr) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

// TestNodeENRInInfo starts a node with REST and checks that enrUri of
// /debug/v1/info names the node's key, listen address, capabilities and
// shards.
func TestNodeENRInInfo(t *testing.T) {
	cfg := Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 16, Shards: []uint16{1, 32}, REST: true, RESTAddress: "127.0.0.1"}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + n.HTTPAddrs()[0] + "/debug/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		ListenAddresses []string `json:"listenAddresses"`
		ENRURI          string   `json:"enrUri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	p := decodeENR(t, info.ENRURI)
	if p.ID != n.Host().ID() {
		t.Errorf("ENR peer %s, node %s", p.ID, n.Host().ID())
	}
	tcp, _ := peers.BoundPorts(n.Host())
	if got, want := addrStrings(p.Addrs), []string{"/ip4/127.0.0.1/tcp/" + strconv.Itoa(tcp)}; !slices.Equal(got, want) {
		t.Errorf("ENR addrs %q, want %q", got, want)
	}
	if p.Caps != discovery.Relay {
		t.Errorf("waku2 %v, want relay", p.Caps)
	}
	if !p.HasShards || p.Shards.ClusterID != 16 || !slices.Equal(p.Shards.Shards, []uint16{1, 32}) {
		t.Errorf("shards %+v", p.Shards)
	}
}

// TestRecordConfigAddresses checks which addresses the record announces
// for the external-address settings (nwaku net_config.nim).
func TestRecordConfigAddresses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dc        DiscoveryConfig
		ws        bool
		ip        string
		tcp       int
		multiaddr []string
	}{
		{name: "listen address", ip: "127.0.0.1", tcp: -1},
		{name: "nat extip", dc: DiscoveryConfig{NAT: "extip:203.0.113.7"}, ip: "203.0.113.7", tcp: -1},
		{name: "ext tcp and wss", dc: DiscoveryConfig{ExtMultiaddrs: []string{"/ip4/198.51.100.2/tcp/30303", "/dns4/node.example.org/tcp/443/wss"}},
			ip: "198.51.100.2", tcp: 30303, multiaddr: []string{"/dns4/node.example.org/tcp/443/wss"}},
		{name: "dns4 name with ws", ws: true, dc: DiscoveryConfig{DNS4DomainName: "node.example.org"}, ip: "127.0.0.1", tcp: -1,
			multiaddr: []string{"/dns4/node.example.org/tcp/TCP", "/dns4/node.example.org/tcp/WS/ws"}},
		{name: "ext only", dc: DiscoveryConfig{ExtMultiaddrOnly: true, ExtMultiaddrs: []string{"/dns4/node.example.org/tcp/443/wss"}},
			multiaddr: []string{"/dns4/node.example.org/tcp/443/wss"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ListenAddress: "127.0.0.1", Relay: true, Discovery: tc.dc}
			if tc.ws {
				cfg.WebSocket, cfg.WebSocketPort = true, freeport.Get(t, 1)[0]
			}
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Stop(context.Background())
			rc := n.peers.RecordConfig(9000)
			tcp, ws := peers.BoundPorts(n.Host())
			wantTCP := tc.tcp
			if wantTCP == -1 {
				wantTCP = tcp
			}
			if (rc.IP == nil) != (tc.ip == "") || (rc.IP != nil && rc.IP.String() != tc.ip) || rc.TCPPort != wantTCP {
				t.Errorf("ip %v tcp %d, want %q %d", rc.IP, rc.TCPPort, tc.ip, wantTCP)
			}
			var want []string
			for _, m := range tc.multiaddr {
				m = strings.ReplaceAll(m, "TCP", strconv.Itoa(tcp))
				want = append(want, strings.ReplaceAll(m, "WS", strconv.Itoa(ws)))
			}
			if got := addrStrings(rc.Multiaddrs); !slices.Equal(got, want) {
				t.Errorf("multiaddrs %q, want %q", got, want)
			}
		})
	}
	for _, bad := range []DiscoveryConfig{{NAT: "stun"}, {NAT: "extip:host"}, {ExtMultiaddrs: []string{"nope"}}, {ExtMultiaddrOnly: true}} {
		cfg := Config{Discovery: bad}
		if _, err := cfg.resolve(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// discv5Node starts an in-process node on 127.0.0.1 with discv5 on a free
// UDP port, bootstrapping from boot.
func discv5Node(t *testing.T, cluster uint16, boot ...string) *Node {
	t.Helper()
	return startTestNode(t, Config{Relay: true, ClusterID: cluster, REST: true, RESTAddress: "127.0.0.1", RESTAdmin: true,
		Discovery: DiscoveryConfig{Discv5: true, Discv5BootstrapNodes: boot, PeerExchange: true}})
}

// TestDiscv5PeerManagerMeshes starts a bootstrap node and three nodes that
// know only its ENR, plus one node of another cluster: each of the three
// reaches the other three through discv5 and the peer manager, the node of
// the other cluster is filtered out (its record's shards) and
// /admin/v1/peers says Discv5.
func TestDiscv5PeerManagerMeshes(t *testing.T) {
	boot := discv5Node(t, 16)
	other := discv5Node(t, 17, boot.ENR())
	nodes := []*Node{boot}
	for range 3 {
		nodes = append(nodes, discv5Node(t, 16, boot.ENR()))
	}
	topic := "/waku/2/rs/16/0"
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range nodes[1:] {
		for len(n.Relay().TopicPeers(topic)) < 3 {
			if time.Now().After(deadline) {
				t.Fatalf("node %s has %d relay peers, stats %+v", n.Host().ID(), len(n.Relay().TopicPeers(topic)), n.PeerStats())
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, id := range n.Relay().TopicPeers(topic) {
			if id == other.Host().ID() {
				t.Errorf("node of cluster 17 reached a node of cluster 16")
			}
		}
	}
	for _, n := range nodes[1:] {
		if got := adminOrigins(t, n)["Discv5"]; got < 1 {
			t.Errorf("node %s: /admin/v1/peers has no connected peer of origin Discv5", n.Host().ID())
		}
	}
	n := nodes[3]
	if st := n.peers.DiscoveryStats().Discv5; st.Found == 0 {
		t.Errorf("discv5 stats %+v", st)
	}
	if v := metricValue(t, n, "courier_discv5_records_total", "result", "kept"); v < 1 {
		t.Errorf("courier_discv5_records_total{result=kept} = %v", v)
	}
}

// adminOrigins counts the connected peers of /admin/v1/peers by origin.
func adminOrigins(t *testing.T, n *Node) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddrs()[0] + "/admin/v1/peers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var peers []struct {
		Origin    string `json:"origin"`
		Connected string `json:"connected"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&peers); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range peers {
		if p.Connected == "Connected" {
			out[p.Origin]++
		}
	}
	return out
}

// TestPeerExchangeLearnsDiscv5Peers: a node without discv5, given only
// --peer-exchange-node of a discv5 node, learns the other discv5 nodes
// from it, connects to them, and lists them with origin PeerExchange;
// /health reports Peer Exchange READY on the server.
func TestPeerExchangeLearnsDiscv5Peers(t *testing.T) {
	boot := discv5Node(t, 16)
	others := []*Node{discv5Node(t, 16, boot.ENR()), discv5Node(t, 16, boot.ENR())}
	// Wait until the bootstrap node has found both through discv5.
	deadline := time.Now().Add(60 * time.Second)
	for len(boot.peers.ExchangePool()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("bootstrap node's exchange pool: %d", len(boot.peers.ExchangePool()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cfg := Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 16, REST: true, RESTAddress: "127.0.0.1", RESTAdmin: true}
	cfg.Discovery = DiscoveryConfig{PeerExchangeNode: boot.ListenAddresses()[0]}
	light, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer light.Stop(context.Background())
	if err := light.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, o := range others {
		for light.peers.Origin(o.Host().ID()) != state.PeerExchange || light.Host().Network().Connectedness(o.Host().ID()) != network.Connected {
			if time.Now().After(deadline) {
				t.Fatalf("light node: peer %s origin %s, stats %+v", o.Host().ID(), light.peers.Origin(o.Host().ID()), light.PeerStats())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if got := adminOrigins(t, light)["PeerExchange"]; got < 2 {
		t.Errorf("/admin/v1/peers: %d connected peers of origin PeerExchange", got)
	}
	srv, _ := boot.PeerExchangeStats()
	if srv.Requests == 0 || srv.PeersSent < 2 {
		t.Errorf("server stats %+v", srv)
	}
	if v := metricValue(t, boot, "waku_px_peers_sent_total", "", ""); v < 2 {
		t.Errorf("waku_px_peers_sent_total = %v", v)
	}
	pxHealth := func(n *Node) rest.ProtocolHealth {
		for _, p := range n.healthReport().ProtocolsHealth {
			if p.Protocol == health.PeerExchange {
				return p
			}
		}
		return rest.ProtocolHealth{}
	}
	if h := pxHealth(boot); h.Health != state.Ready {
		t.Errorf("health %+v", h)
	}
	if h := pxHealth(light); h.Health != state.NotMounted {
		t.Errorf("light node health %+v", h)
	}
}

// metricValue returns the value of the metric name with the label pair
// (label "" for none) from n's registry, summed over matching series.
func metricValue(t *testing.T, n *Node, name, label, value string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					match = true
				}
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestAnnouncedAddresses checks the listenAddresses of /debug/v1/info for
// the external-address settings: nwaku's NetConfig announces the extip or
// dns4 host address, the WebSocket one, then every --ext-multiaddr
// (waku/node/net_config.nim init; tests/test_waku_netconfig.nim).
func TestAnnouncedAddresses(t *testing.T) {
	for _, tc := range []struct {
		name string
		dc   DiscoveryConfig
		ws   bool
		want []string
	}{
		{name: "listen address", want: []string{"/ip4/127.0.0.1/tcp/TCP"}},
		{name: "nat extip", dc: DiscoveryConfig{NAT: "extip:203.0.113.7"}, want: []string{"/ip4/203.0.113.7/tcp/TCP"}},
		{name: "nat extip with ws", ws: true, dc: DiscoveryConfig{NAT: "extip:203.0.113.7"},
			want: []string{"/ip4/203.0.113.7/tcp/TCP", "/ip4/203.0.113.7/tcp/WS/ws"}},
		{name: "ext multiaddrs", dc: DiscoveryConfig{ExtMultiaddrs: []string{"/ip4/198.51.100.2/tcp/30303", "/dns4/node.example.org/tcp/443/wss"}},
			want: []string{"/ip4/127.0.0.1/tcp/TCP", "/ip4/198.51.100.2/tcp/30303", "/dns4/node.example.org/tcp/443/wss"}},
		{name: "ws listen address left out for an ext ws", ws: true, dc: DiscoveryConfig{ExtMultiaddrs: []string{"/dns4/node.example.org/tcp/443/wss"}},
			want: []string{"/ip4/127.0.0.1/tcp/TCP", "/dns4/node.example.org/tcp/443/wss"}},
		{name: "extip and ext multiaddr", dc: DiscoveryConfig{NAT: "extip:203.0.113.7", ExtMultiaddrs: []string{"/ip4/198.51.100.2/tcp/30303"}},
			want: []string{"/ip4/203.0.113.7/tcp/TCP", "/ip4/198.51.100.2/tcp/30303"}},
		{name: "dns4 name with ws", ws: true, dc: DiscoveryConfig{DNS4DomainName: "node.example.org"},
			want: []string{"/dns4/node.example.org/tcp/TCP", "/dns4/node.example.org/tcp/WS/ws"}},
		{name: "ext only", dc: DiscoveryConfig{ExtMultiaddrOnly: true, ExtMultiaddrs: []string{"/dns4/node.example.org/tcp/443/wss"}},
			want: []string{"/dns4/node.example.org/tcp/443/wss"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ListenAddress: "127.0.0.1", Relay: true, Discovery: tc.dc}
			if tc.ws {
				cfg.WebSocket, cfg.WebSocketPort = true, freeport.Get(t, 1)[0]
			}
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Stop(context.Background())
			tcp, ws := peers.BoundPorts(n.Host())
			var want []string
			for _, m := range tc.want {
				m = strings.ReplaceAll(m, "TCP", strconv.Itoa(tcp))
				want = append(want, strings.ReplaceAll(m, "WS", strconv.Itoa(ws))+"/p2p/"+n.Host().ID().String())
			}
			if got := n.peers.Announced(); !slices.Equal(got, want) {
				t.Errorf("announced %q, want %q", got, want)
			}
		})
	}
}
