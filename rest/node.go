package rest

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/node/state"
)

// Info is the body of GET /info and /debug/v1/info (nwaku debug/types.nim):
// {"listenAddresses": [multiaddr...], "enrUri"?: "enr:..."}.
type Info struct {
	ListenAddresses []string `json:"listenAddresses"`
	ENRURI          string   `json:"enrUri,omitempty"`
}

// Peer is one element of GET /admin/v1/peers (nwaku admin/types.nim
// WakuPeer), fields in nwaku's order. Shards come from the peer's metadata
// (metadata.Service.Peer). Score is the gossipsub score, omitted when nil:
// nwaku writes it for relay and mesh peers only.
type Peer struct {
	Multiaddr string              `json:"multiaddr"` // with /p2p/<peer id>
	Protocols []string            `json:"protocols"`
	Shards    []uint16            `json:"shards"`
	Connected state.Connectedness `json:"connected"`
	Agent     string              `json:"agent"`
	Origin    state.Origin        `json:"origin"`
	Score     *Score              `json:"score,omitempty"`
}

// Score is a gossipsub peer score. It marshals as nwaku writes a float64
// (nim-json-serialization writes Nim's $ of it): a whole number keeps its
// ".0" ("0.0", "-3.0"), where encoding/json would write "0" and "-3".
type Score float64

// MarshalJSON writes s as nwaku does; other values as encoding/json.
func (s Score) MarshalJSON() ([]byte, error) {
	f := float64(s)
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendFloat(nil, f, 'f', 1, 64), nil
	}
	return json.Marshal(f)
}

// Health is the body of GET /health, fields in nwaku v0.38.1's order
// (waku/rest_api/endpoint/health/types.nim writeValue of HealthReport):
//
//	{"nodeHealth": "READY", "connectionStatus": "Connected",
//	 "protocolsHealth": [{"Relay": "READY"}, {"Store": "NOT_READY", "desc": "..."}]}
type Health struct {
	NodeHealth       state.HealthStatus     `json:"nodeHealth"`
	ConnectionStatus state.ConnectionStatus `json:"connectionStatus"`
	ProtocolsHealth  []ProtocolHealth       `json:"protocolsHealth"`
}

// ProtocolHealth is the health of one protocol. It marshals as an object
// whose first key is the protocol name (nwaku: "Relay", "Store", "Filter",
// "Lightpush", ...) and whose "desc" is omitted when empty.
type ProtocolHealth struct {
	Protocol string
	Health   state.HealthStatus
	Desc     string
}

// MarshalJSON writes {"<Protocol>": "<Health>", "desc": "<Desc>"}.
func (p ProtocolHealth) MarshalJSON() ([]byte, error) {
	proto, err := json.Marshal(p.Protocol)
	if err != nil {
		return nil, err
	}
	health, err := json.Marshal(p.Health)
	if err != nil {
		return nil, err
	}
	b := append([]byte{'{'}, proto...)
	b = append(append(b, ':'), health...)
	if p.Desc != "" {
		desc, err := json.Marshal(p.Desc)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"desc":`...), desc...)
	}
	return append(b, '}'), nil
}

func (s *Server) getHealth(w http.ResponseWriter, _ *http.Request) {
	h := s.cfg.Node.Health()
	if h.ProtocolsHealth == nil {
		h.ProtocolsHealth = []ProtocolHealth{}
	}
	writeJSON(w, h)
}

func (s *Server) getInfo(w http.ResponseWriter, _ *http.Request) {
	info := s.cfg.Node.Info()
	if info.ListenAddresses == nil {
		info.ListenAddresses = []string{}
	}
	writeJSON(w, info)
}

func (s *Server) getVersion(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, s.cfg.Node.Version())
}

// getPeer answers GET /admin/v1/peer/{peerId} as nwaku
// (waku/rest_api/endpoint/admin/handlers.nim): 400 for a peer id that does
// not parse, 404 "Peer with ID <id> not found" for one the node does not
// know.
func (s *Server) getPeer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("peerId")
	if _, err := peer.Decode(id); err != nil {
		writeText(w, http.StatusBadRequest, "Invalid argument:peerid: incorrect PeerId string")
		return
	}
	for _, p := range s.adminPeers() {
		if strings.HasSuffix(p.Multiaddr, "/p2p/"+id) {
			writeJSON(w, p)
			return
		}
	}
	writeText(w, http.StatusNotFound, fmt.Sprintf("Peer with ID %s not found", id))
}

// getConnectedPeers answers GET /admin/v1/peers/connected and its
// /on/{shardId} form: the peers whose connectedness is Connected (and
// whose metadata lists the shard); a shard id that does not parse is
// answered 400 "Invalid shardId: <error>", as nwaku.
func (s *Server) getConnectedPeers(w http.ResponseWriter, r *http.Request) {
	onShard := -1
	if v := r.PathValue("shardId"); v != "" {
		n, err := parseShardID(v)
		if err != nil {
			writeText(w, http.StatusBadRequest, "Invalid shardId: "+err.Error())
			return
		}
		onShard = int(n)
	}
	out := []Peer{}
	for _, p := range s.adminPeers() {
		if p.Connected == state.Connected && (onShard < 0 || slices.Contains(p.Shards, uint16(onShard))) {
			out = append(out, p)
		}
	}
	writeJSON(w, out)
}

// adminPeers returns the admin backend's peers with empty lists, not null.
func (s *Server) adminPeers() []Peer { return withEmptyLists(s.cfg.Admin.Peers()) }

// withEmptyLists returns peers, never nil, with empty lists for nil
// Protocols and Shards, as nwaku writes them.
func withEmptyLists(peers []Peer) []Peer {
	out := make([]Peer, len(peers))
	for i, p := range peers {
		if p.Protocols == nil {
			p.Protocols = []string{}
		}
		if p.Shards == nil {
			p.Shards = []uint16{}
		}
		out[i] = p
	}
	return out
}

func (s *Server) getPeers(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.adminPeers()) }
