package node

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/rest"
)

// Protocol names of /health, in the order nwaku v0.38.1 reports them
// (waku/common/waku_protocol.nim WakuProtocol;
// waku/node/health_monitor/node_health_monitor.nim getAllProtocolHealthInfo).
const (
	HealthRelay                 = "Relay"
	HealthLightpush             = "Lightpush"
	HealthLegacyLightpush       = "Legacy Lightpush"
	HealthFilter                = "Filter"
	HealthStore                 = "Store"
	HealthPeerExchange          = "Peer Exchange"
	HealthRendezvous            = "Rendezvous"
	HealthMix                   = "Mix"
	HealthLightpushClient       = "Lightpush Client"
	HealthLegacyLightpushClient = "Legacy Lightpush Client"
	HealthStoreClient           = "Store Client"
	HealthFilterClient          = "Filter Client"
	HealthRlnRelay              = "Rln Relay"
)

var healthOrder = []string{
	HealthRelay, HealthLightpush, HealthLegacyLightpush, HealthFilter, HealthStore, HealthPeerExchange,
	HealthRendezvous, HealthMix, HealthLightpushClient, HealthLegacyLightpushClient, HealthStoreClient,
	HealthFilterClient, HealthRlnRelay,
}

// relayDLow is gossipsub's D_low in nwaku's parameters: with at least this
// many relay peers the node is Connected, with fewer but some
// PartiallyConnected (node_health_monitor.nim calculateConnectionState).
const relayDLow = 4

// healthyThreshold is the number of service peers per client protocol an
// edge node (no relay peers) needs to be Connected
// (health_monitor/connection_status.nim HealthyThreshold).
const healthyThreshold = 2

// health holds what the protocols have told /health: which are mounted and
// which libp2p protocol IDs their service peers speak.
type health struct {
	mu      sync.Mutex
	mounted map[string][]protocol.ID
}

// MarkMounted tells /health that protocol (one of the Health* names) is
// mounted on this node; its state then follows nwaku's rule for it:
//
//   - Lightpush, Legacy Lightpush, Filter: READY while Relay is READY, else
//     NOT_READY with nwaku's reason.
//   - Store: READY, as in nwaku, except while the archive's writes fail
//     (a full disk): NOT_READY with the error, until a write succeeds.
//   - Peer Exchange, Mix: READY.
//   - Lightpush Client, Legacy Lightpush Client, Filter Client, Rendezvous:
//     READY while some connected peer speaks one of codecs, else NOT_READY
//     with nwaku's reason.
//   - Store Client: READY while some connected peer speaks one of codecs or
//     Store is mounted.
//
// Relay's state comes from the relay itself. Call it when the protocol
// starts serving (from New or Start); it is safe to call concurrently.
func (n *Node) MarkMounted(protocolName string, codecs ...protocol.ID) {
	n.health.mu.Lock()
	defer n.health.mu.Unlock()
	if n.health.mounted == nil {
		n.health.mounted = map[string][]protocol.ID{}
	}
	n.health.mounted[protocolName] = codecs
}

// healthReport computes GET /health as nwaku v0.38.1 does
// (node_health_monitor.nim getNodeHealthReport).
func (n *Node) healthReport() rest.Health {
	state := rest.HealthStatus(n.getState())
	if state == rest.Initializing || state == rest.ShuttingDown {
		return rest.Health{NodeHealth: state, ConnectionStatus: rest.StatusDisconnected}
	}
	n.health.mu.Lock()
	mounted := make(map[string][]protocol.ID, len(n.health.mounted))
	for k, v := range n.health.mounted {
		mounted[k] = v
	}
	n.health.mu.Unlock()

	relayPeers := 0
	relay := rest.ProtocolHealth{Protocol: HealthRelay, Health: rest.NotMounted}
	if n.relay != nil {
		relayPeers = len(n.relay.TopicPeers("")) // "": every gossipsub peer
		relay.Health = rest.Ready
		if relayPeers == 0 {
			relay.Health, relay.Desc = rest.NotReady, "No connected peers"
		}
	}
	strength := map[string]int{HealthRelay: relayPeers}
	report := make([]rest.ProtocolHealth, 0, len(healthOrder))
	for _, name := range healthOrder {
		if name == HealthRelay {
			report = append(report, relay)
			continue
		}
		p := rest.ProtocolHealth{Protocol: name, Health: rest.NotMounted}
		codecs, ok := mounted[name]
		if ok {
			peers := n.capablePeers(codecs)
			strength[name] = peers
			p.Health, p.Desc = protocolHealth(name, relay.Health == rest.Ready, peers, mounted)
			if name == HealthStore && n.archiveHealth != nil {
				if failing, desc := n.archiveHealth.status(); failing {
					p.Health, p.Desc = rest.NotReady, desc
				}
			}
		}
		report = append(report, p)
	}
	return rest.Health{
		NodeHealth:       rest.Ready,
		ConnectionStatus: connectionStatus(report, strength),
		ProtocolsHealth:  report,
	}
}

// protocolHealth is nwaku's rule for a mounted protocol other than Relay.
func protocolHealth(name string, relayReady bool, peers int, mounted map[string][]protocol.ID) (rest.HealthStatus, string) {
	needRelay := func(desc string) (rest.HealthStatus, string) {
		if relayReady {
			return rest.Ready, ""
		}
		return rest.NotReady, desc
	}
	needPeers := func(desc string) (rest.HealthStatus, string) {
		if peers > 0 {
			return rest.Ready, ""
		}
		return rest.NotReady, desc
	}
	switch name {
	case HealthLightpush, HealthLegacyLightpush:
		return needRelay("Node has no relay peers to fullfill push requests")
	case HealthFilter:
		return needRelay("Relay is not ready, filter will not be able to sort out messages")
	case HealthLightpushClient, HealthLegacyLightpushClient:
		return needPeers("No Lightpush service peer available yet")
	case HealthFilterClient:
		return needPeers("No Filter service peer available yet")
	case HealthRendezvous:
		return needPeers("No Rendezvous peers are available yet")
	case HealthStoreClient:
		if _, store := mounted[HealthStore]; store {
			return rest.Ready, ""
		}
		return needPeers("No Store service peer available yet, neither Store service set up for the node")
	}
	return rest.Ready, ""
}

// connectionStatus is nwaku's calculateConnectionState: relay peers
// decide for a relay node; otherwise an edge node needs lightpush, filter
// and store service peers.
func connectionStatus(report []rest.ProtocolHealth, strength map[string]int) rest.ConnectionStatus {
	var relay, lightpush, filter, store int
	for _, p := range report {
		if p.Health != rest.Ready {
			continue
		}
		s := strength[p.Protocol]
		switch p.Protocol {
		case HealthRelay:
			relay = max(relay, s)
		case HealthStoreClient:
			store = max(store, s)
		case HealthLightpushClient, HealthLegacyLightpushClient:
			lightpush = max(lightpush, s)
		case HealthFilterClient:
			filter = max(filter, s)
		}
	}
	switch {
	case relay >= relayDLow:
		return rest.StatusConnected
	case relay > 0:
		return rest.StatusPartiallyConnected
	case lightpush == 0 || filter == 0 || store == 0:
		return rest.StatusDisconnected
	case lightpush >= healthyThreshold && filter >= healthyThreshold && store >= healthyThreshold:
		return rest.StatusConnected
	}
	return rest.StatusPartiallyConnected
}

// capablePeers counts the connected peers that speak one of codecs.
func (n *Node) capablePeers(codecs []protocol.ID) int {
	if len(codecs) == 0 {
		return 0
	}
	count := 0
	for _, id := range n.host.Network().Peers() {
		if n.host.Network().Connectedness(id) != network.Connected {
			continue
		}
		if got, err := n.host.Peerstore().SupportsProtocols(id, codecs...); err == nil && len(got) > 0 {
			count++
		}
	}
	return count
}
