package peers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/relay"
)

// savedPeer is one line of peers.json.
type savedPeer struct {
	ID        string       `json:"id"`
	Addrs     []string     `json:"addrs"`
	Origin    state.Origin `json:"origin"`
	ENR       string       `json:"enr,omitempty"`
	Protocols []string     `json:"protocols,omitempty"`
	Agent     string       `json:"agent,omitempty"` // identify's agent version
}

// save writes the known peers to peers.json when they changed: at most
// --peer-store-capacity of them, as the manager keeps no more. A peer's
// addresses are those it was learned with, else those the peerstore holds
// (identify's, or those POST /admin/v1/peers gave); its protocols are
// those identify reported, else those saved before; so is its agent.
func (m *Manager) save() {
	if m.path == "" {
		return
	}
	m.mu.Lock()
	if !m.dirty {
		m.mu.Unlock()
		return
	}
	ps := m.h.Peerstore()
	var out []savedPeer
	for id, mp := range m.peers {
		sp := savedPeer{ID: id.String(), Origin: mp.origin, Protocols: mp.protos, Agent: mp.agent}
		if v, err := ps.Get(id, "AgentVersion"); err == nil {
			sp.Agent, _ = v.(string)
		}
		if mp.record != nil {
			sp.ENR = mp.record.String()
		}
		addrs := mp.addrs
		if len(addrs) == 0 {
			addrs = ps.Addrs(id)
		}
		for _, a := range addrs {
			sp.Addrs = append(sp.Addrs, a.String())
		}
		if protos, err := ps.GetProtocols(id); err == nil && len(protos) > 0 {
			sp.Protocols = sp.Protocols[:0:0]
			for _, p := range protos {
				sp.Protocols = append(sp.Protocols, string(p))
			}
			slices.Sort(sp.Protocols)
		}
		out = append(out, sp)
	}
	m.dirty = false
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b savedPeer) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.MarshalIndent(out, "", " ")
	if err == nil {
		tmp := m.path + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, m.path)
		}
	}
	if err != nil {
		m.log.Warn("peer persistence: write failed", "path", m.path, "err", err)
	}
}

// load reads peers.json; entries that do not parse are skipped and logged.
// It returns the saved peers with addresses whose saved protocols include
// relay, those the node reconnects to at start.
func (m *Manager) load() []peer.AddrInfo {
	if m.path == "" {
		return nil
	}
	b, err := os.ReadFile(m.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var saved []savedPeer
	if err == nil {
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		m.log.Warn("peer persistence: unreadable, starting without saved peers", "path", m.path, "err", err)
		return nil
	}
	loaded := 0
	var relayPeers []peer.AddrInfo
	for _, sp := range saved {
		id, err := peer.Decode(sp.ID)
		if err != nil || id == m.h.ID() {
			continue
		}
		p := discovery.Peer{ID: id}
		for _, s := range sp.Addrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				p.Addrs = append(p.Addrs, a)
			}
		}
		if sp.ENR != "" {
			if n, err := discovery.ParseENR(sp.ENR); err == nil {
				if dp, err := discovery.DecodePeer(n); err == nil && dp.ID == id {
					p = dp
				}
			}
		}
		if !m.restore(p, sp) {
			continue
		}
		loaded++
		if len(p.Addrs) > 0 && slices.Contains(sp.Protocols, string(relay.ProtocolID)) {
			relayPeers = append(relayPeers, peer.AddrInfo{ID: id, Addrs: p.Addrs})
		}
	}
	m.log.Info("peer persistence: loaded peers", "path", m.path, "peers", loaded, "of", len(saved), "relay", len(relayPeers))
	return relayPeers
}

// restore keeps a saved peer with its origin, protocols and agent, as
// nwaku's loadFromStorage fills its peer store books; a peer saved without
// addresses (an inbound light client) is known but never dialled. It
// reports false when the store is full.
func (m *Manager) restore(p discovery.Peer, sp savedPeer) bool {
	origin, protos := sp.Origin, sp.Protocols
	if len(p.Addrs) > 0 {
		m.Add(p, origin)
	} else {
		m.connected(p.ID)
	}
	m.mu.Lock()
	mp, ok := m.peers[p.ID]
	if ok {
		if mp.origin != state.Static {
			mp.origin = origin
		}
		if protos != nil {
			mp.protos = slices.Clone(protos)
		}
		mp.agent = sp.Agent
	}
	m.mu.Unlock()
	if ok && sp.Agent != "" {
		_ = m.h.Peerstore().Put(p.ID, "AgentVersion", sp.Agent)
	}
	if ok && len(protos) > 0 {
		ids := make([]protocol.ID, len(protos))
		for i, s := range protos {
			ids[i] = protocol.ID(s)
		}
		_ = m.h.Peerstore().AddProtocols(p.ID, ids...)
	}
	return ok
}

// reconnect dials the saved relay peers at start, as nwaku's startRelay
// reconnects the relay peers of its peer storage
// (waku/node/waku_node.nim, peer_manager.nim reconnectPeers). nwaku first
// waits out gossipsub's prune backoff; a restarted node held no mesh to
// be pruned from, so these dials go out at once.
func (m *Manager) reconnect(ctx context.Context, peers []peer.AddrInfo) {
	if len(peers) == 0 {
		return
	}
	var unconnected []peer.AddrInfo
	for _, pi := range peers {
		if m.h.Network().Connectedness(pi.ID) != network.Connected {
			unconnected = append(unconnected, pi)
		}
	}
	m.dialAll(ctx, unconnected)
	m.log.Info("peer persistence: reconnected to saved relay peers", "peers", len(peers))
}
