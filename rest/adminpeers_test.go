package rest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/couriernet/courier/node/state"
)

// relayFake is a node with relay peers: A and B connected on shards 0
// and 5, C known but not connected.
type relayFake struct {
	*fakeBackend
}

const (
	peerA = "/ip4/127.0.0.1/tcp/60001/p2p/16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD"
	peerB = "/ip4/127.0.0.1/tcp/60002/p2p/16Uiu2HAmVFXtAfSj4EiR7mL2KvL4EE2wztuQgUSBoj2Jx2KeXFLN"
	peerC = "/ip4/127.0.0.1/tcp/60003/p2p/16Uiu2HAm6HZZr7aToTvEBPpiys4UxajCTU97zj5v7RNR2gbniy1D"
)

func (f *relayFake) Peers() []Peer {
	return []Peer{
		{Multiaddr: peerA, Protocols: []string{"/vac/waku/relay/2.0.0", "/vac/waku/store-query/3.0.0",
			"/vac/waku/filter-subscribe/2.0.0-beta1", "/vac/waku/metadata/1.0.0"}, Shards: []uint16{0, 5}, Connected: state.Connected, Agent: "nwaku", Origin: state.Static},
		{Multiaddr: peerB, Protocols: []string{"/vac/waku/peer-exchange/2.0.0-alpha1", "/vac/waku/lightpush/3.0.0",
			"/vac/waku/lightpush/2.0.0-beta1", "/vac/waku/relay/2.0.0"}, Shards: []uint16{5}, Connected: state.Connected, Agent: "courier", Origin: state.Discv5},
		{Multiaddr: peerC, Protocols: []string{"/vac/waku/store-query/3.0.0"}, Connected: state.NotConnected, Origin: state.DNS},
	}
}

func (f *relayFake) RelayPeers(mesh bool) []PeersOfShard {
	zero, five := f.peersOn(0, mesh), f.peersOn(5, mesh)
	return []PeersOfShard{{Shard: 0, Peers: zero}, {Shard: 5, Peers: five}}
}

func (f *relayFake) ShardPeers(shard uint16, mesh bool) []Peer { return f.peersOn(shard, mesh) }

// peersOn: relay peers are A and B on shard 0 and B on shard 5; the
// mesh is A on shard 0. Scores as gossipsub gives them.
func (f *relayFake) peersOn(shard uint16, mesh bool) []Peer {
	ps := f.Peers()
	a, b := ps[0], ps[1]
	sa, sb := Score(0.25), Score(-3)
	a.Score, b.Score = &sa, &sb
	switch {
	case shard == 0 && mesh:
		return []Peer{a}
	case shard == 0:
		return []Peer{a, b}
	case shard == 5 && !mesh:
		return []Peer{b}
	}
	return nil
}

// adminServer serves f's admin routes, with f as the relay unless noRelay.
func adminServer(t *testing.T, f *relayFake, noRelay bool) *Server {
	t.Helper()
	cfg := Config{Node: f, Relay: f, Admin: f}
	if noRelay {
		cfg.Relay = nil
	}
	return mustNew(t, cfg)
}

// TestAdminRelayPeers checks GET /admin/v1/peers/relay and /mesh and their
// /on/{shardId} forms. The shapes are nwaku's PeersOfShard and WakuPeer
// with its score (waku/rest_api/endpoint/admin/types.nim); a shard the
// node has no peers on answers 200 with no peers and an unparsable shard
// id 400 "Invalid shardId: <error>" (waku/rest_api/endpoint/admin/handlers.nim,
// tests/wakunode_rest/test_rest_admin.nim "get relay peers": shard 99 has
// no peers), with nim-stew base10.nim's error texts.
func TestAdminRelayPeers(t *testing.T) {
	f := &relayFake{fakeBackend: newFake(t)}
	s := adminServer(t, f, false)
	const a = `{"multiaddr":"` + peerA + `","protocols":["/vac/waku/relay/2.0.0","/vac/waku/store-query/3.0.0","/vac/waku/filter-subscribe/2.0.0-beta1","/vac/waku/metadata/1.0.0"],"shards":[0,5],"connected":"Connected","agent":"nwaku","origin":"Static","score":0.25}`
	const b = `{"multiaddr":"` + peerB + `","protocols":["/vac/waku/peer-exchange/2.0.0-alpha1","/vac/waku/lightpush/3.0.0","/vac/waku/lightpush/2.0.0-beta1","/vac/waku/relay/2.0.0"],"shards":[5],"connected":"Connected","agent":"courier","origin":"Discv5","score":-3.0}`
	expect(t, s, "GET", "/admin/v1/peers/relay", "", 200, golden(t, "relay_peers.json"))
	expect(t, s, "GET", "/admin/v1/peers/mesh", "", 200, `[{"shard":0,"peers":[`+a+`]},{"shard":5,"peers":[]}]`)
	expect(t, s, "GET", "/admin/v1/peers/relay/on/0", "", 200, `{"shard":0,"peers":[`+a+`,`+b+`]}`)
	expect(t, s, "GET", "/admin/v1/peers/relay/on/005", "", 200, `{"shard":5,"peers":[`+b+`]}`)
	expect(t, s, "GET", "/admin/v1/peers/mesh/on/0", "", 200, `{"shard":0,"peers":[`+a+`]}`)
	for _, kind := range []string{"relay", "mesh"} {
		on := "/admin/v1/peers/" + kind + "/on/"
		expect(t, s, "GET", on+"99", "", 200, `{"shard":99,"peers":[]}`)
		expect(t, s, "GET", on+"65535", "", 200, `{"shard":65535,"peers":[]}`)
		expect(t, s, "GET", on+"65536", "", 400, "Invalid shardId: Integer overflow")
		expect(t, s, "GET", on+"-1", "", 400, "Invalid shardId: Non-decimal character encountered")
		expect(t, s, "GET", on+"abc", "", 400, "Invalid shardId: Non-decimal character encountered")
		expect(t, s, "GET", on+"%201", "", 400, "Invalid shardId: Non-decimal character encountered")
	}
	expect(t, s, "GET", "/admin/v1/peers/connected/on/x", "", 400, "Invalid shardId: Non-decimal character encountered")
	// Without relay, nwaku answers 503 (parsing the shard id first).
	s = adminServer(t, f, true)
	for _, path := range []string{"/admin/v1/peers/relay", "/admin/v1/peers/mesh", "/admin/v1/peers/relay/on/0", "/admin/v1/peers/mesh/on/99"} {
		expect(t, s, "GET", path, "", 503, "Error: Relay Protocol is not mounted to the node")
	}
	expect(t, s, "GET", "/admin/v1/peers/mesh/on/x", "", 400, "Invalid shardId: Non-decimal character encountered")
	plain := newFake(t)
	expect(t, mustNew(t, Config{Node: plain, Admin: plain}), "GET", "/admin/v1/peers/relay", "", 503, "Error: Relay Protocol is not mounted to the node")
}

// TestAdminServicePeers checks GET /admin/v1/peers/service: per service
// protocol in nwaku's order, the peers supporting it, each peer once with
// only its service protocols and no score, connected or not
// (waku/rest_api/endpoint/admin/handlers.nim populateAdminPeerInfoForCodecs
// and types.nim add).
func TestAdminServicePeers(t *testing.T) {
	f := &relayFake{fakeBackend: newFake(t)}
	s := adminServer(t, f, false)
	expect(t, s, "GET", "/admin/v1/peers/service", "", 200, golden(t, "service_peers.json"))
	g := newFake(t)
	empty := newServer(t, g, Config{Admin: g})
	expect(t, empty, "GET", "/admin/v1/peers/service", "", 200, `[{"multiaddr":"/ip4/127.0.0.1/tcp/60001/p2p/16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD","protocols":["/vac/waku/relay/2.0.0"],"shards":[0,3],"connected":"Connected","agent":"nwaku","origin":"Static"}]`)
}

// TestAdminPeerStats checks GET /admin/v1/peers/stats: nwaku's groups and
// keys in nwaku's order, "Total relay peers" and "Total mesh peers" being
// the number of shards as nwaku v0.38.1 counts them
// (waku/rest_api/endpoint/admin/handlers.nim ROUTE_ADMIN_V1_PEERS_STATS,
// types.nim writeValue of OrderedTable).
func TestAdminPeerStats(t *testing.T) {
	f := &relayFake{fakeBackend: newFake(t)}
	s := adminServer(t, f, false)
	expect(t, s, "GET", "/admin/v1/peers/stats", "", 200, golden(t, "peer_stats.json"))
	s = adminServer(t, f, true)
	expect(t, s, "GET", "/admin/v1/peers/stats", "", 200, `{"Sum":{"Total peers":3},`+
		`"By Connectedness":{"Connected":2,"NotConnected":1,"CannotConnect":0,"CanConnect":0},`+
		`"Relay peers":{"Total relay peers":0},"Mesh peers":{"Total mesh peers":0},`+
		`"By Protocols":{"/vac/waku/relay/2.0.0":2,"/vac/waku/filter-subscribe/2.0.0-beta1":1,"/vac/waku/filter-push/2.0.0-beta1":0,`+
		`"/vac/waku/store-query/3.0.0":2,"/vac/waku/lightpush/3.0.0":1,"/vac/waku/lightpush/2.0.0-beta1":1,`+
		`"/vac/waku/peer-exchange/2.0.0-alpha1":1,"/vac/waku/reconciliation/1.0.0":0}}`)
}

func TestParseShardID(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint16
		err  string
	}{
		{"0", 0, ""}, {"7", 7, ""}, {"0099", 99, ""}, {"65535", 65535, ""},
		{"", 0, "Missing decimal value"}, {"65536", 0, "Integer overflow"}, {"1000000x", 0, "Integer overflow"},
		{"+1", 0, "Non-decimal character encountered"}, {"1 ", 0, "Non-decimal character encountered"}, {"0x10", 0, "Non-decimal character encountered"},
	} {
		got, err := parseShardID(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("parseShardID(%q) = %d, %v; want %d", c.in, got, err, c.want)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("parseShardID(%q) error %v, want %q", c.in, err, c.err)
		}
	}
}

// TestScoreJSON: scores are written as nwaku writes a float64 (Nim's $,
// through nim-json-serialization's writer): whole numbers with ".0".
func TestScoreJSON(t *testing.T) {
	for _, c := range []struct {
		in   Score
		want string
	}{{0, "0.0"}, {-3, "-3.0"}, {100, "100.0"}, {0.25, "0.25"}, {-12.5, "-12.5"}, {1e-3, "0.001"}} {
		got, err := json.Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Score(%v) = %s %v, want %s", float64(c.in), got, err, c.want)
		}
	}
}

// FuzzParseShardID: a shard id parses exactly when it is one or more ASCII
// digits of value at most 65535, to that value, as nim-stew's
// Base10.decode reads it.
func FuzzParseShardID(f *testing.F) {
	for _, s := range []string{"0", "5", "65535", "65536", "0099", "", "-1", "+1", "1e3", " 1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseShardID(s)
		digits := s != "" && strings.Trim(s, "0123456789") == ""
		v, perr := strconv.ParseUint(s, 10, 16)
		switch {
		case digits && perr == nil:
			if err != nil || uint64(got) != v {
				t.Fatalf("parseShardID(%q) = %d, %v; want %d", s, got, err, v)
			}
		case err == nil:
			t.Fatalf("parseShardID(%q) = %d, want an error", s, got)
		}
	})
}
