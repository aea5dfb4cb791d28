package peers

import (
	"context"
	"slices"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/node/state"
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

// ConnectedWith returns the connected peers that speak one of codecs, as
// identify reported them, in the order of h.Network().Peers.
func ConnectedWith(h host.Host, codecs ...protocol.ID) []peer.ID {
	var out []peer.ID
	for _, id := range h.Network().Peers() {
		if h.Network().Connectedness(id) != network.Connected {
			continue
		}
		if got, err := h.Peerstore().SupportsProtocols(id, codecs...); err == nil && len(got) > 0 {
			out = append(out, id)
		}
	}
	return out
}

// watchConnectedness marks a peer CanConnect when its last connection
// closes.
func watchConnectedness(h host.Host) {
	h.Network().Notify(&network.NotifyBundle{DisconnectedF: func(nw network.Network, c network.Conn) {
		if id := c.RemotePeer(); len(nw.ConnsToPeer(id)) == 0 {
			h.Peerstore().Put(id, connectednessKey, state.CanConnect)
		}
	}})
}

// Connect dials pi and marks it CannotConnect when the dial fails.
func (m *Manager) Connect(ctx context.Context, pi peer.AddrInfo) error {
	err := m.h.Connect(ctx, pi)
	if err != nil && m.h.Network().Connectedness(pi.ID) != network.Connected {
		m.h.Peerstore().Put(pi.ID, connectednessKey, state.CannotConnect)
	}
	return err
}

// Connectedness returns how /admin/v1/peers names id's state: Connected
// while a connection is open, else what the last disconnection or failed
// dial left, else NotConnected (known but never dialled).
func (m *Manager) Connectedness(id peer.ID) state.Connectedness {
	if m.h.Network().Connectedness(id) == network.Connected {
		return state.Connected
	}
	if v, err := m.h.Peerstore().Get(id, connectednessKey); err == nil {
		if c, ok := v.(state.Connectedness); ok {
			return c
		}
	}
	return state.NotConnected
}

// KnownShards returns the shards of id as nwaku's getShards
// (waku/waku_core/peers.nim) does: those of its metadata, current
// (metadata, when ok) or last reported, else those of its ENR, else none.
func (m *Manager) KnownShards(id peer.ID, metadata []uint16, ok bool) []uint16 {
	var shards []uint16
	if ok {
		shards = metadata
	} else if v, err := m.h.Peerstore().Get(id, shardsKey); err == nil {
		shards, _ = v.([]uint16)
	} else if rs, ok := m.RecordShards(id); ok {
		shards = rs.Shards
	}
	if shards == nil {
		return []uint16{}
	}
	return shards
}

// MetadataChecked records what the metadata check of id found: on
// success the shards it reported (kept after it disconnects); on failure
// the peer is forgotten and, for a static node refused for its cluster,
// not dialled again.
func (m *Manager) MetadataChecked(id peer.ID, shards []uint16, err error) {
	if err == nil {
		m.h.Peerstore().Put(id, shardsKey, slices.Clone(shards))
		return
	}
	m.refuseStatic(id, err)
	m.forget(id, err)
}
