package node

import (
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/rest"
)

// healthReport computes GET /health as nwaku v0.38.1 does, from what the
// parts told n.health as they were mounted (health.Monitor.Mount), with
// Store NOT_READY while the archive's writes fail.
func (n *Node) healthReport() rest.Health {
	hn := health.Node{State: state.HealthStatus(n.getState()), Relay: n.relay != nil, Capable: n.capablePeers, RLN: n.rlnHealth()}
	if n.relay != nil {
		hn.RelayPeers = len(n.relay.TopicPeers("")) // "": every gossipsub peer
	}
	if n.store.health != nil {
		_, hn.ArchiveFailing = n.store.health.Status()
	}
	return n.health.Report(hn)
}

// capablePeers counts the connected peers that speak one of codecs.
func (n *Node) capablePeers(codecs []protocol.ID) int {
	return len(peers.ConnectedWith(n.host, codecs...))
}
