//go:build unix

package jswaku

import (
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/node"
)

// enrResult is what enr.js prints.
type enrResult struct {
	Decoded struct {
		PeerID     string   `json:"peerId"`
		IP         string   `json:"ip"`
		TCP        int      `json:"tcp"`
		Multiaddrs []string `json:"multiaddrs"`
		Waku2      struct {
			Relay, Store, Filter, LightPush bool
		} `json:"waku2"`
		ShardInfo struct {
			ClusterID int   `json:"clusterId"`
			Shards    []int `json:"shards"`
		} `json:"shardInfo"`
	} `json:"decoded"`
	Made string `json:"made"`
}

// TestENRBothWays: @waku/enr 0.0.33 decodes a courier node's enrUri to the
// peer id, address, /ws multiaddr, capabilities and shards courier
// advertises, and courier decodes a record @waku/enr makes.
func TestENRBothWays(t *testing.T) {
	Require(t)
	n := StartNode(t, node.Config{Relay: true, ClusterID: 16, Shards: []uint16{0, 5}})
	key, _ := gcrypto.GenerateKey()
	var out enrResult
	Run(t, "enr.js", map[string]string{"enr": n.ENR(), "privateKey": hex.EncodeToString(gcrypto.FromECDSA(key))}, &out)

	d := out.Decoded
	if d.PeerID != n.Host().ID().String() {
		t.Errorf("peer id %s, want %s", d.PeerID, n.Host().ID())
	}
	var tcp, ws int
	for _, a := range n.Host().Addrs() {
		port, _ := a.ValueForProtocol(ma.P_TCP)
		if port == "0" || port == "" {
			continue // a listener not bound yet
		}
		if strings.Contains(a.String(), "/ws") {
			ws, _ = strconv.Atoi(port)
		} else {
			tcp, _ = strconv.Atoi(port)
		}
	}
	if d.IP != "127.0.0.1" || d.TCP != tcp {
		t.Errorf("ip %s tcp %d, want 127.0.0.1 %d", d.IP, d.TCP, tcp)
	}
	if want := []string{"/ip4/127.0.0.1/tcp/" + strconv.Itoa(ws) + "/ws"}; !slices.Equal(d.Multiaddrs, want) {
		t.Errorf("multiaddrs %q, want %q", d.Multiaddrs, want)
	}
	if !d.Waku2.Relay || d.Waku2.Store || d.Waku2.Filter || d.Waku2.LightPush {
		t.Errorf("waku2 %+v, want relay only", d.Waku2)
	}
	if d.ShardInfo.ClusterID != 16 || !slices.Equal(d.ShardInfo.Shards, []int{0, 5}) {
		t.Errorf("shards %+v", d.ShardInfo)
	}

	rec, err := discovery.ParseENR(out.Made)
	if err != nil {
		t.Fatalf("courier decoding @waku/enr's record %s: %v", out.Made, err)
	}
	p, err := discovery.DecodePeer(rec)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := discovery.PeerID(&key.PublicKey); p.ID != want {
		t.Errorf("peer id %s, want %s", p.ID, want)
	}
	var addrs []string
	for _, a := range p.Addrs {
		addrs = append(addrs, a.String())
	}
	if want := []string{"/ip4/10.1.2.3/tcp/60001", "/dns4/node.example.org/tcp/443/wss"}; !slices.Equal(addrs, want) {
		t.Errorf("addrs %q, want %q", addrs, want)
	}
	if p.Caps != discovery.Relay|discovery.Store|discovery.Lightpush || rec.UDP() != 9001 {
		t.Errorf("caps %v udp %d", p.Caps, rec.UDP())
	}
	if !p.HasShards || p.Shards.ClusterID != 16 || !slices.Equal(p.Shards.Shards, []uint16{0, 5}) {
		t.Errorf("shards %+v", p.Shards)
	}
}
