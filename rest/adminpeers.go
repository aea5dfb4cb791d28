package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/couriernet/courier/node/state"
)

// PeersOfShard is one element of GET /admin/v1/peers/relay and
// /admin/v1/peers/mesh, and the body of their /on/{shardId} forms (nwaku
// waku/rest_api/endpoint/admin/types.nim PeersOfShard):
//
//	{"shard": 5, "peers": [Peer...]}
type PeersOfShard struct {
	Shard uint16 `json:"shard"`
	Peers []Peer `json:"peers"`
}

const textRelayNotMounted = "Error: Relay Protocol is not mounted to the node"

// serviceCodecs are the protocols GET /admin/v1/peers/service lists peers
// of, in nwaku's order (installAdminV1GetPeersHandler; the ids are
// waku/waku_core/codecs.nim's WakuRelayCodec, WakuFilterSubscribeCodec,
// WakuStoreCodec, WakuLegacyLightPushCodec, WakuLightPushCodec,
// WakuPeerExchangeCodec, WakuReconciliationCodec, WakuTransferCodec).
var serviceCodecs = []string{
	"/vac/waku/relay/2.0.0",
	"/vac/waku/filter-subscribe/2.0.0-beta1",
	"/vac/waku/store-query/3.0.0",
	"/vac/waku/lightpush/2.0.0-beta1",
	"/vac/waku/lightpush/3.0.0",
	"/vac/waku/peer-exchange/2.0.0-alpha1",
	"/vac/waku/reconciliation/1.0.0",
	"/vac/waku/transfer/1.0.0",
}

// statsCodecs are the protocols the "By Protocols" group of GET
// /admin/v1/peers/stats counts, in nwaku's order (the filter push id is
// WakuFilterPushCodec).
var statsCodecs = []string{
	"/vac/waku/relay/2.0.0",
	"/vac/waku/filter-subscribe/2.0.0-beta1",
	"/vac/waku/filter-push/2.0.0-beta1",
	"/vac/waku/store-query/3.0.0",
	"/vac/waku/lightpush/3.0.0",
	"/vac/waku/lightpush/2.0.0-beta1",
	"/vac/waku/peer-exchange/2.0.0-alpha1",
	"/vac/waku/reconciliation/1.0.0",
}

// getServicePeers answers GET /admin/v1/peers/service as nwaku's
// populateAdminPeerInfoForCodecs: for each service protocol in turn, every
// known peer (connected or not) that supports it, once per multiaddr, its
// protocols only the service protocols it supports, without score.
func (s *Server) getServicePeers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, servicePeers(s.adminPeers()))
}

func servicePeers(peers []Peer) []Peer {
	out := []Peer{}
	at := map[string]int{}
	for _, codec := range serviceCodecs {
		for _, p := range peers {
			if !slices.Contains(p.Protocols, codec) {
				continue
			}
			if i, ok := at[p.Multiaddr]; ok {
				out[i].Protocols = append(out[i].Protocols, codec)
				continue
			}
			at[p.Multiaddr] = len(out)
			p.Protocols, p.Score = []string{codec}, nil
			out = append(out, p)
		}
	}
	return out
}

// relayPeers returns the relay's RelayPeers with empty lists, not null;
// ok is false without relay.
func (s *Server) relayPeers(mesh bool) (shards []PeersOfShard, ok bool) {
	if s.cfg.Relay == nil {
		return nil, false
	}
	shards = s.cfg.Relay.RelayPeers(mesh)
	out := make([]PeersOfShard, len(shards))
	for i, ps := range shards {
		out[i] = PeersOfShard{Shard: ps.Shard, Peers: withEmptyLists(ps.Peers)}
	}
	return out, true
}

// getRelayPeers answers GET /admin/v1/peers/relay (mesh false) or
// /admin/v1/peers/mesh (mesh true) as nwaku's getRelayPeers and
// getMeshPeers: one PeersOfShard per subscribed shard, ascending.
func (s *Server) getRelayPeers(mesh bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		shards, ok := s.relayPeers(mesh)
		if !ok {
			writeText(w, http.StatusServiceUnavailable, textRelayNotMounted)
			return
		}
		writeJSON(w, shards)
	}
}

// getShardPeers answers the /on/{shardId} form of GET /admin/v1/peers/relay
// or /mesh: 400 "Invalid shardId: <error>" for a shard id that does not
// parse, else one PeersOfShard for the shard of the node's cluster, with no
// peers for a shard the relay does not know, as nwaku.
func (s *Server) getShardPeers(mesh bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		shard, err := parseShardID(r.PathValue("shardId"))
		if err != nil {
			writeText(w, http.StatusBadRequest, "Invalid shardId: "+err.Error())
			return
		}
		if s.cfg.Relay == nil {
			writeText(w, http.StatusServiceUnavailable, textRelayNotMounted)
			return
		}
		writeJSON(w, PeersOfShard{Shard: shard, Peers: withEmptyLists(s.cfg.Relay.ShardPeers(shard, mesh))})
	}
}

// shardIDError is a shard id path segment that is not a uint16.
type shardIDError string

func (e shardIDError) Error() string { return string(e) }

// parseShardID reads a {shardId} path segment as nwaku's REST server does
// (waku/rest_api/endpoint/serdes.nim decodeString of uint16, which is
// nim-stew's stew/base10.nim Base10.decode): decimal digits only, no sign or
// space, at most 65535. Its errors carry Base10.decode's texts.
func parseShardID(s string) (uint16, error) {
	if s == "" {
		return 0, shardIDError("Missing decimal value")
	}
	var v uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, shardIDError("Non-decimal character encountered")
		}
		v = v*10 + uint32(c-'0')
		if v > 0xffff {
			return 0, shardIDError("Integer overflow")
		}
	}
	return uint16(v), nil
}

// getPeerStats answers GET /admin/v1/peers/stats with nwaku's groups and
// counters, in nwaku's order (installAdminV1GetPeersHandler,
// ROUTE_ADMIN_V1_PEERS_STATS):
//
//	{"Sum": {"Total peers": n},
//	 "By Connectedness": {"Connected": n, "NotConnected": n, "CannotConnect": n, "CanConnect": n},
//	 "Relay peers": {"<shard>": n, ..., "Total relay peers": shards},
//	 "Mesh peers": {"<shard>": n, ..., "Total mesh peers": shards},
//	 "By Protocols": {"<protocol id>": n, ...}}
//
// "Total relay peers" and "Total mesh peers" count the shards listed, not
// the peers: nwaku v0.38.1 writes relayPeers.len there, and its answer is
// kept.
func (s *Server) getPeerStats(w http.ResponseWriter, _ *http.Request) {
	peers := s.adminPeers()
	count := func(keep func(Peer) bool) int {
		n := 0
		for _, p := range peers {
			if keep(p) {
				n++
			}
		}
		return n
	}
	byConn := object{}
	for _, c := range []state.Connectedness{state.Connected, state.NotConnected, state.CannotConnect, state.CanConnect} {
		byConn = append(byConn, member{string(c), count(func(p Peer) bool { return p.Connected == c })})
	}
	byProto := object{}
	for _, codec := range statsCodecs {
		byProto = append(byProto, member{codec, count(func(p Peer) bool { return slices.Contains(p.Protocols, codec) })})
	}
	relayed, _ := s.relayPeers(false)
	meshed, _ := s.relayPeers(true)
	writeJSON(w, object{
		{"Sum", object{{"Total peers", len(peers)}}},
		{"By Connectedness", byConn},
		{"Relay peers", shardCounts(relayed, "Total relay peers")},
		{"Mesh peers", shardCounts(meshed, "Total mesh peers")},
		{"By Protocols", byProto},
	})
}

// shardCounts is {"<shard>": peers, ..., total: number of shards}.
func shardCounts(shards []PeersOfShard, total string) object {
	o := make(object, 0, len(shards)+1)
	for _, ps := range shards {
		o = append(o, member{strconv.Itoa(int(ps.Shard)), len(ps.Peers)})
	}
	return append(o, member{total, len(shards)})
}

// object is a JSON object whose members keep their order, as nwaku's
// OrderedTable does.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
