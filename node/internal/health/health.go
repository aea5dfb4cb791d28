// Package health computes the node's health report, GET /health, as
// nwaku v0.38.1 does (waku/node/health_monitor/node_health_monitor.nim):
// the state of each protocol mounted, by nwaku's rule for it, and the
// node's connectivity from them; Archive follows the archive's writes,
// which make Store NOT_READY while they fail.
package health

import (
	"maps"
	"sync"

	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/rest"
)

// Protocol names of /health, in the order nwaku v0.38.1 reports them
// (waku/common/waku_protocol.nim WakuProtocol;
// waku/node/health_monitor/node_health_monitor.nim getAllProtocolHealthInfo).
const (
	Relay                 = "Relay"
	Lightpush             = "Lightpush"
	LegacyLightpush       = "Legacy Lightpush"
	Filter                = "Filter"
	Store                 = "Store"
	PeerExchange          = "Peer Exchange"
	Rendezvous            = "Rendezvous"
	Mix                   = "Mix"
	LightpushClient       = "Lightpush Client"
	LegacyLightpushClient = "Legacy Lightpush Client"
	StoreClient           = "Store Client"
	FilterClient          = "Filter Client"
	RlnRelay              = "Rln Relay"
)

var healthOrder = []string{
	Relay, Lightpush, LegacyLightpush, Filter, Store, PeerExchange,
	Rendezvous, Mix, LightpushClient, LegacyLightpushClient, StoreClient,
	FilterClient, RlnRelay,
}

// relayDLow is gossipsub's D_low in nwaku's parameters: with at least this
// many relay peers the node is Connected, with fewer but some
// PartiallyConnected (node_health_monitor.nim calculateConnectionState).
const relayDLow = 4

// healthyThreshold is the number of service peers per client protocol an
// edge node (no relay peers) needs to be Connected
// (health_monitor/connection_status.nim HealthyThreshold).
const healthyThreshold = 2

// Monitor holds what the protocols have told /health: which are mounted
// and which libp2p protocol IDs their service peers speak. Its zero value
// has none mounted; it is safe for concurrent use.
type Monitor struct {
	mu      sync.Mutex
	mounted map[string][]protocol.ID
}

// Mount tells /health that protocol (one of the names above) is mounted
// on this node; its state then follows nwaku's rule for it:
//
//   - Lightpush, Legacy Lightpush, Filter: READY while Relay is READY, else
//     NOT_READY with nwaku's reason.
//   - Store: READY, as in nwaku, except while Node.ArchiveFailing says
//     the archive's writes fail: NOT_READY with that desc.
//   - Peer Exchange, Mix: READY.
//   - Lightpush Client, Legacy Lightpush Client, Filter Client, Rendezvous:
//     READY while some connected peer speaks one of codecs, else NOT_READY
//     with nwaku's reason.
//   - Store Client: READY while some connected peer speaks one of codecs or
//     Store is mounted.
//
// Relay's state comes from the relay itself.
func (m *Monitor) Mount(protocolName string, codecs ...protocol.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mounted == nil {
		m.mounted = map[string][]protocol.ID{}
	}
	m.mounted[protocolName] = codecs
}

// Node is what the report reads of the node at the time of a request.
type Node struct {
	// State is the node's own: Initializing, Ready or ShuttingDown.
	State state.HealthStatus
	// Relay says whether relay is mounted, RelayPeers how many gossipsub
	// peers it has.
	Relay      bool
	RelayPeers int
	// Capable counts the connected peers that speak one of codecs.
	Capable func(codecs []protocol.ID) int
	// ArchiveFailing, when not empty, says why the archive's writes fail
	// (a full disk): Store is then NOT_READY with it as desc.
	ArchiveFailing string
	// RLN is RLN relay's health and the reason when it is not READY
	// (nwaku getRlnRelayHealth); nil when RLN relay is off (NOT_MOUNTED).
	RLN func() (state.HealthStatus, string)
}

// Report computes GET /health of n as nwaku v0.38.1 does
// (node_health_monitor.nim getNodeHealthReport).
func (m *Monitor) Report(n Node) rest.Health {
	if n.State == state.Initializing || n.State == state.ShuttingDown {
		return rest.Health{NodeHealth: n.State, ConnectionStatus: state.StatusDisconnected}
	}
	m.mu.Lock()
	mounted := maps.Clone(m.mounted)
	m.mu.Unlock()

	relayPeers := 0
	relay := rest.ProtocolHealth{Protocol: Relay, Health: state.NotMounted}
	if n.Relay {
		relayPeers = n.RelayPeers
		relay.Health = state.Ready
		if relayPeers == 0 {
			relay.Health, relay.Desc = state.NotReady, "No connected peers"
		}
	}
	strength := map[string]int{Relay: relayPeers}
	report := make([]rest.ProtocolHealth, 0, len(healthOrder))
	for _, name := range healthOrder {
		if name == Relay {
			report = append(report, relay)
			continue
		}
		if name == RlnRelay {
			p := rest.ProtocolHealth{Protocol: name, Health: state.NotMounted}
			if n.RLN != nil {
				p.Health, p.Desc = n.RLN()
			}
			report = append(report, p)
			continue
		}
		p := rest.ProtocolHealth{Protocol: name, Health: state.NotMounted}
		codecs, ok := mounted[name]
		if ok {
			peers := 0
			if len(codecs) > 0 {
				peers = n.Capable(codecs)
			}
			strength[name] = peers
			p.Health, p.Desc = protocolHealth(name, relay.Health == state.Ready, peers, mounted)
			if name == Store && n.ArchiveFailing != "" {
				p.Health, p.Desc = state.NotReady, n.ArchiveFailing
			}
		}
		report = append(report, p)
	}
	return rest.Health{
		NodeHealth:       state.Ready,
		ConnectionStatus: connectionStatus(report, strength),
		ProtocolsHealth:  report,
	}
}

// protocolHealth is nwaku's rule for a mounted protocol other than Relay.
func protocolHealth(name string, relayReady bool, peers int, mounted map[string][]protocol.ID) (state.HealthStatus, string) {
	needRelay := func(desc string) (state.HealthStatus, string) {
		if relayReady {
			return state.Ready, ""
		}
		return state.NotReady, desc
	}
	needPeers := func(desc string) (state.HealthStatus, string) {
		if peers > 0 {
			return state.Ready, ""
		}
		return state.NotReady, desc
	}
	switch name {
	case Lightpush, LegacyLightpush:
		return needRelay("Node has no relay peers to fullfill push requests")
	case Filter:
		return needRelay("Relay is not ready, filter will not be able to sort out messages")
	case LightpushClient, LegacyLightpushClient:
		return needPeers("No Lightpush service peer available yet")
	case FilterClient:
		return needPeers("No Filter service peer available yet")
	case Rendezvous:
		return needPeers("No Rendezvous peers are available yet")
	case StoreClient:
		if _, store := mounted[Store]; store {
			return state.Ready, ""
		}
		return needPeers("No Store service peer available yet, neither Store service set up for the node")
	}
	return state.Ready, ""
}

// connectionStatus is nwaku's calculateConnectionState: relay peers
// decide for a relay node; otherwise an edge node needs lightpush, filter
// and store service peers.
func connectionStatus(report []rest.ProtocolHealth, strength map[string]int) state.ConnectionStatus {
	var relay, lightpush, filter, store int
	for _, p := range report {
		if p.Health != state.Ready {
			continue
		}
		s := strength[p.Protocol]
		switch p.Protocol {
		case Relay:
			relay = max(relay, s)
		case StoreClient:
			store = max(store, s)
		case LightpushClient, LegacyLightpushClient:
			lightpush = max(lightpush, s)
		case FilterClient:
			filter = max(filter, s)
		}
	}
	switch {
	case relay >= relayDLow:
		return state.StatusConnected
	case relay > 0:
		return state.StatusPartiallyConnected
	case lightpush == 0 || filter == 0 || store == 0:
		return state.StatusDisconnected
	case lightpush >= healthyThreshold && filter >= healthyThreshold && store >= healthyThreshold:
		return state.StatusConnected
	}
	return state.StatusPartiallyConnected
}
