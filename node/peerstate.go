package node

import (
	"context"
	"slices"

	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Peerstore metadata keys of what the node learned of a peer; they live
// as long as the peer's entry in the peerstore, as nwaku's books do.
const (
	// connectednessKey holds a state.Connectedness: CanConnect once the
	// peer's last connection closed, CannotConnect once a dial failed
	// (nwaku waku/node/peer_manager/peer_manager.nim onPeerEvent and
	// connectPeer write the same to their ConnectionBook).
	connectednessKey = "courier/connectedness"
	// shardsKey holds the []uint16 shards the peer reported in its
	// metadata, kept after it disconnects (nwaku's ShardBook).
	shardsKey = "courier/shards"
)

// watchConnectedness marks a peer CanConnect when its last connection
// closes.
func (n *Node) watchConnectedness() {
	n.host.Network().Notify(&network.NotifyBundle{DisconnectedF: func(nw network.Network, c network.Conn) {
		if id := c.RemotePeer(); len(nw.ConnsToPeer(id)) == 0 {
			n.host.Peerstore().Put(id, connectednessKey, state.CanConnect)
		}
	}})
}

// connect dials pi and marks it CannotConnect when the dial fails.
func (n *Node) connect(ctx context.Context, pi peer.AddrInfo) error {
	err := n.host.Connect(ctx, pi)
	if err != nil && n.host.Network().Connectedness(pi.ID) != network.Connected {
		n.host.Peerstore().Put(pi.ID, connectednessKey, state.CannotConnect)
	}
	return err
}

// connectedness returns how /admin/v1/peers names id's state: Connected
// while a connection is open, else what the last disconnection or failed
// dial left, else NotConnected (known but never dialled).
func (n *Node) connectedness(id peer.ID) state.Connectedness {
	if n.host.Network().Connectedness(id) == network.Connected {
		return state.Connected
	}
	if v, err := n.host.Peerstore().Get(id, connectednessKey); err == nil {
		if c, ok := v.(state.Connectedness); ok {
			return c
		}
	}
	return state.NotConnected
}

// keepShards records the shards id reported in its metadata.
func (n *Node) keepShards(id peer.ID, shards []uint16) {
	n.host.Peerstore().Put(id, shardsKey, slices.Clone(shards))
}

// knownShards returns the shards of id as nwaku's getShards
// (waku/waku_core/peers.nim) does: those of its metadata, current or last
// reported, else those of its ENR, else none.
func (n *Node) knownShards(id peer.ID) []uint16 {
	var shards []uint16
	if info, ok := n.metadata.Peer(id); ok {
		shards = info.Shards
	} else if v, err := n.host.Peerstore().Get(id, shardsKey); err == nil {
		shards, _ = v.([]uint16)
	} else if n.peers != nil {
		if rs, ok := n.peers.recordShards(id); ok {
			shards = rs.Shards
		}
	}
	if shards == nil {
		return []uint16{}
	}
	return shards
}
