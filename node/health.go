package node

import (
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/rest"
)

// Protocol names of /health, in the order nwaku v0.38.1 reports them
// (waku/common/waku_protocol.nim WakuProtocol;
// waku/node/health_monitor/node_health_monitor.nim getAllProtocolHealthInfo).
const (
	HealthRelay                 = health.Relay
	HealthLightpush             = health.Lightpush
	HealthLegacyLightpush       = health.LegacyLightpush
	HealthFilter                = health.Filter
	HealthStore                 = health.Store
	HealthPeerExchange          = health.PeerExchange
	HealthRendezvous            = health.Rendezvous
	HealthMix                   = health.Mix
	HealthLightpushClient       = health.LightpushClient
	HealthLegacyLightpushClient = health.LegacyLightpushClient
	HealthStoreClient           = health.StoreClient
	HealthFilterClient          = health.FilterClient
	HealthRlnRelay              = health.RlnRelay
)

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
	n.health.Mount(protocolName, codecs...)
}

// healthReport computes GET /health as nwaku v0.38.1 does.
func (n *Node) healthReport() rest.Health {
	hn := health.Node{State: state.HealthStatus(n.getState()), Relay: n.relay != nil, Capable: n.capablePeers}
	if n.relay != nil {
		hn.RelayPeers = len(n.relay.TopicPeers("")) // "": every gossipsub peer
	}
	if n.store.health != nil {
		_, hn.ArchiveFailing = n.store.health.status()
	}
	return n.health.Report(hn)
}

// capablePeers counts the connected peers that speak one of codecs.
func (n *Node) capablePeers(codecs []protocol.ID) int {
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
