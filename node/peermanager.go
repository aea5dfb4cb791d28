package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
)

// Peer manager constants of nwaku v0.38.1 (waku/node/peer_manager/peer_manager.nim).
const (
	// maxFailedAttempts failed dials remove a discovered peer.
	maxFailedAttempts = 5
	// initialBackoff is the wait after the first failed dial; each further
	// failure multiplies it by backoffFactor (120 s, 480 s, 1920 s ...).
	initialBackoff = 120 * time.Second
	backoffFactor  = 4
	// maxParallelDials bounds the dials of one connectivity round.
	maxParallelDials = 10
	// connectivityInterval is the pause between rounds when the node holds
	// its target; below it the manager tries again after shortInterval.
	connectivityInterval = 30 * time.Second
	shortInterval        = 2 * time.Second
	// dialTimeout bounds one dial.
	dialTimeout = 10 * time.Second
	// persistInterval is how often known peers are written when they
	// changed (--peer-persistence).
	persistInterval = time.Minute
)

// managedPeer is what the manager knows of one peer.
type managedPeer struct {
	origin     rest.Origin
	addrs      []ma.Multiaddr
	record     *enode.Node
	caps       discovery.Capabilities
	hasCaps    bool
	shards     discovery.RelayShards
	hasShards  bool
	failed     int
	lastFailed time.Time
	added      time.Time
	// protos and agent are the protocols and agent saved in peers.json,
	// until identify on a new connection replaces them in the peerstore.
	protos []string
	agent  string
}

// PeerStats counts the peer manager's work. Take a copy with
// Node.PeerStats.
type PeerStats struct {
	Added          uint64 // peers learned (any origin)
	Dials          uint64 // dials of discovered peers
	DialFailures   uint64 // of which failed
	Removed        uint64 // peers forgotten after maxFailedAttempts failures
	MetadataPruned uint64 // peers forgotten after failing the metadata check
	Colocation     uint64 // connections closed over the IP colocation limit
	InboundPruned  uint64 // inbound relay connections closed over the target
	StoreFull      uint64 // peers not kept: the store was full of connected ones
	DNSFailures    uint64 // DNS trees that could not be fetched or verified
	DNSRejected    uint64 // records of DNS trees whose Waku fields did not decode
}

// peerManager keeps the node connected to its target of relay peers,
// dialling the peers discovery finds, as nwaku's PeerManager does: out
// target a third of the relay share of MaxConnections, backoff of failed
// peers, removal after five failures, removal of peers that fail the
// metadata check, an IP colocation limit. Static peers are dialled by the
// node's own loop and never pruned here.
type peerManager struct {
	n         *Node
	h         host.Host
	log       *slog.Logger
	outTarget int
	inTarget  int
	coloc     int // 0: no limit
	capacity  int
	path      string // peers.json, "" without persistence

	mu    sync.Mutex
	peers map[peer.ID]*managedPeer
	dirty bool

	kick  chan struct{}
	stats struct {
		added, dials, dialFailures, removed, metadataPruned, colocation, inboundPruned, storeFull, dnsFailures, dnsRejected atomic.Uint64
	}
}

func newPeerManager(n *Node) *peerManager {
	dc := n.cfg.Discovery
	relayShare, _, _ := parseRatio(dc.RelayServiceRatio)
	relayPeers := int(math.Ceil(float64(n.cfg.MaxConnections) * relayShare))
	pm := &peerManager{
		n: n, h: n.host, log: n.cfg.Logger,
		outTarget: max(1, relayPeers/3), inTarget: relayPeers - relayPeers/3,
		coloc: max(0, dc.IPColocationLimit), capacity: dc.PeerStoreCapacity,
		peers: map[peer.ID]*managedPeer{}, kick: make(chan struct{}, 1),
	}
	if dc.PeerPersistence {
		pm.path = filepath.Join(n.cfg.DataDir, "peers.json")
	}
	return pm
}

// add records a peer learned from origin and wakes the dialler. A peer
// already known keeps its origin unless the new one is Static.
func (pm *peerManager) add(p discovery.Peer, origin rest.Origin) {
	if p.ID == pm.h.ID() {
		pm.n.sameID(p.Addrs, string(origin))
		return
	}
	if len(p.Addrs) == 0 {
		return
	}
	pm.mu.Lock()
	mp, ok := pm.peers[p.ID]
	if !ok {
		if len(pm.peers) >= pm.capacity && !pm.evictLocked() {
			pm.mu.Unlock()
			pm.stats.storeFull.Add(1)
			return
		}
		mp = &managedPeer{origin: origin, added: time.Now()}
		pm.peers[p.ID] = mp
		pm.stats.added.Add(1)
	}
	if origin == rest.Static {
		mp.origin = origin
	}
	mp.addrs, mp.caps, mp.hasCaps, mp.shards, mp.hasShards = p.Addrs, p.Caps, p.HasCaps, p.Shards, p.HasShards
	if p.Node != nil {
		mp.record = p.Node
	}
	pm.dirty = true
	pm.mu.Unlock()
	pm.h.Peerstore().AddAddrs(p.ID, p.Addrs, peerstore.AddressTTL)
	if !ok {
		pm.log.Debug("peer added", "peer", p.ID, "origin", origin, "addrs", fmt.Sprint(p.Addrs))
	}
	pm.wake()
}

// connected records a peer on each connection, and disconnected marks the
// peers changed, as nwaku's onPeerEvent writes every peer to its peer
// storage on Joined and Left (waku/node/peer_manager/peer_manager.nim): a
// peer not yet known (an inbound one, or one dialled through POST
// /admin/v1/peers) is kept with origin UnknownOrigin, nwaku's addPeer
// default; its addresses are those identify leaves in the peerstore, read
// when the peers are saved.
func (pm *peerManager) connected(id peer.ID) {
	if id == pm.h.ID() {
		return
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.dirty = true
	if _, ok := pm.peers[id]; ok {
		return
	}
	if len(pm.peers) >= pm.capacity && !pm.evictLocked() {
		pm.stats.storeFull.Add(1)
		return
	}
	pm.peers[id] = &managedPeer{origin: rest.UnknownOrigin, added: time.Now()}
	pm.stats.added.Add(1)
}

func (pm *peerManager) disconnected() {
	pm.mu.Lock()
	pm.dirty = true
	pm.mu.Unlock()
}

// evictLocked forgets the not-connected, non-static peer with the most
// failures (the oldest among equals); false when there is none.
func (pm *peerManager) evictLocked() bool {
	var victim peer.ID
	var worst *managedPeer
	for id, mp := range pm.peers {
		if mp.origin == rest.Static || pm.h.Network().Connectedness(id) == network.Connected {
			continue
		}
		if worst == nil || mp.failed > worst.failed || (mp.failed == worst.failed && mp.added.Before(worst.added)) {
			victim, worst = id, mp
		}
	}
	if worst == nil {
		return false
	}
	delete(pm.peers, victim)
	return true
}

func (pm *peerManager) wake() {
	select {
	case pm.kick <- struct{}{}:
	default:
	}
}

// origin returns how the node learned of id.
func (pm *peerManager) origin(id peer.ID) (rest.Origin, bool) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if mp, ok := pm.peers[id]; ok {
		return mp.origin, true
	}
	return rest.UnknownOrigin, false
}

// recordShards returns the relay shards id's discovery record (ENR)
// announces, when the manager has one.
func (pm *peerManager) recordShards(id peer.ID) (discovery.RelayShards, bool) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if mp, ok := pm.peers[id]; ok && mp.hasShards {
		return mp.shards, true
	}
	return discovery.RelayShards{}, false
}

// withCaps returns the known peers whose discovery record (ENR) announces
// every capability of c, as nwaku's peer store lists them under the codecs
// of their record's capabilities (waku_core/peers.nim toRemotePeerInfo).
func (pm *peerManager) withCaps(c discovery.Capabilities) []peer.ID {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	var out []peer.ID
	for id, mp := range pm.peers {
		if mp.hasCaps && mp.caps.Has(c) {
			out = append(out, id)
		}
	}
	return out
}

// forget removes id, as after a failed metadata check (nwaku
// onPeerMetadata disconnects and the pruning loop drops the peer).
func (pm *peerManager) forget(id peer.ID, reason error) {
	if pm.n.isStatic(id) {
		return
	}
	pm.mu.Lock()
	_, ok := pm.peers[id]
	delete(pm.peers, id)
	pm.dirty = pm.dirty || ok
	pm.mu.Unlock()
	if ok {
		pm.stats.metadataPruned.Add(1)
		pm.log.Info("peer forgotten: metadata check failed", "peer", id, "reason", reason)
	}
	pm.h.Peerstore().ClearAddrs(id)
}

// run keeps the relay connections at target until ctx ends.
func (pm *peerManager) run(ctx context.Context) {
	relayPeers := pm.load()
	pm.h.Network().Notify(&network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			pm.checkColocation(c)
			if pm.path != "" {
				pm.connected(c.RemotePeer())
			}
		},
		DisconnectedF: func(network.Network, network.Conn) {
			if pm.path != "" {
				pm.disconnected()
			}
		},
	})
	pm.reconnect(ctx, relayPeers)
	lastSave := time.Now()
	for {
		below := pm.round(ctx)
		if pm.path != "" && time.Since(lastSave) >= persistInterval {
			pm.save()
			lastSave = time.Now()
		}
		wait := connectivityInterval
		if below {
			wait = shortInterval
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			pm.save()
			return
		case <-pm.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// relayConns counts connected relay peers by the direction of their first
// connection.
func (pm *peerManager) relayConns() (in, out []peer.ID) {
	for _, id := range pm.h.Network().Peers() {
		if ok, _ := pm.h.Peerstore().SupportsProtocols(id, relay.ProtocolID); len(ok) == 0 {
			continue
		}
		conns := pm.h.Network().ConnsToPeer(id)
		if len(conns) == 0 {
			continue
		}
		if conns[0].Stat().Direction == network.DirOutbound {
			out = append(out, id)
		} else {
			in = append(in, id)
		}
	}
	return in, out
}

// round prunes inbound relay peers over their target, then dials
// discovered relay peers until the out target (nwaku connectToRelayPeers).
// It reports whether the node is still below its out target.
func (pm *peerManager) round(ctx context.Context) bool {
	in, out := pm.relayConns()
	if excess := len(in) - pm.inTarget; excess > 0 {
		for _, id := range in {
			if excess == 0 {
				break
			}
			if pm.n.isStatic(id) {
				continue
			}
			pm.h.Network().ClosePeer(id)
			pm.stats.inboundPruned.Add(1)
			excess--
		}
	}
	need := pm.outTarget - len(out)
	if need <= 0 {
		return false
	}
	cands := pm.candidates()
	if len(cands) == 0 {
		return true
	}
	pm.dialAll(ctx, cands[:min(len(cands), need)])
	return true
}

// dialAll dials peers, maxParallelDials at a time, and returns when every
// dial has ended.
func (pm *peerManager) dialAll(ctx context.Context, peers []peer.AddrInfo) {
	sem := make(chan struct{}, maxParallelDials)
	var wg sync.WaitGroup
	for _, pi := range peers {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pm.dial(ctx, pi)
		}()
	}
	wg.Wait()
}

// candidates are known relay peers not connected, out of backoff, whose
// IP is under the colocation limit, in random order.
func (pm *peerManager) candidates() []peer.AddrInfo {
	ipCount := pm.connectedIPs()
	now := time.Now()
	pm.mu.Lock()
	defer pm.mu.Unlock()
	var out []peer.AddrInfo
	for id, mp := range pm.peers {
		if mp.origin == rest.Static || len(mp.addrs) == 0 || (mp.hasCaps && !mp.caps.Has(discovery.Relay)) ||
			(mp.protos != nil && !slices.Contains(mp.protos, string(relay.ProtocolID))) {
			continue
		}
		if pm.h.Network().Connectedness(id) == network.Connected {
			continue
		}
		if mp.failed > 0 && now.Before(mp.lastFailed.Add(backoff(mp.failed))) {
			continue
		}
		if pm.coloc > 0 && ipCount[firstIP(mp.addrs)] >= pm.coloc {
			continue
		}
		out = append(out, peer.AddrInfo{ID: id, Addrs: mp.addrs})
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// backoff is nwaku's calculateBackoff: initialBackoff * factor^(failed-1).
func backoff(failed int) time.Duration {
	d := initialBackoff
	for range failed - 1 {
		d *= backoffFactor
	}
	return d
}

func (pm *peerManager) dial(ctx context.Context, pi peer.AddrInfo) {
	pm.stats.dials.Add(1)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	err := pm.n.connect(dctx, pi)
	cancel()
	if ctx.Err() != nil {
		return
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	mp, ok := pm.peers[pi.ID]
	if !ok {
		return
	}
	if err == nil {
		mp.failed = 0
		pm.log.Debug("connected to discovered peer", "peer", pi.ID, "origin", mp.origin)
		return
	}
	pm.stats.dialFailures.Add(1)
	mp.failed++
	mp.lastFailed = time.Now()
	if mp.failed >= maxFailedAttempts {
		delete(pm.peers, pi.ID)
		pm.dirty = true
		pm.stats.removed.Add(1)
		pm.log.Info("peer removed after failed dials", "peer", pi.ID, "failures", mp.failed, "err", err)
		return
	}
	pm.log.Debug("dial failed", "peer", pi.ID, "failures", mp.failed, "retry_in", backoff(mp.failed), "err", err)
}

// connectedIPs counts connected peers per remote IP.
func (pm *peerManager) connectedIPs() map[string]int {
	out := map[string]int{}
	for _, c := range pm.h.Network().Conns() {
		if ip, err := manet.ToIP(c.RemoteMultiaddr()); err == nil {
			out[ip.String()]++
		}
	}
	return out
}

func firstIP(addrs []ma.Multiaddr) string {
	for _, a := range addrs {
		if ip, err := manet.ToIP(a); err == nil {
			return ip.String()
		}
	}
	return ""
}

// checkColocation closes c when its IP already has more than the limit of
// connected peers (nwaku onPeerEvent); static peers are exempt.
func (pm *peerManager) checkColocation(c network.Conn) {
	if pm.coloc <= 0 || pm.n.isStatic(c.RemotePeer()) {
		return
	}
	ip, err := manet.ToIP(c.RemoteMultiaddr())
	if err != nil {
		return
	}
	peers := map[peer.ID]bool{}
	for _, other := range pm.h.Network().Conns() {
		if oip, err := manet.ToIP(other.RemoteMultiaddr()); err == nil && oip.Equal(ip) {
			peers[other.RemotePeer()] = true
		}
	}
	if len(peers) > pm.coloc {
		pm.stats.colocation.Add(1)
		pm.log.Info("closing connection: too many peers from one IP", "peer", c.RemotePeer(), "ip", ip, "limit", pm.coloc)
		go c.Close()
	}
}

// exchangePool returns the records peer exchange hands out, as nwaku's
// poolFilter chooses them: peers found by discv5 whose record is not of
// another cluster and whose last dial did not fail.
func (pm *peerManager) exchangePool() []*enode.Node {
	cluster := pm.n.cfg.ClusterID
	pm.mu.Lock()
	defer pm.mu.Unlock()
	var out []*enode.Node
	for _, mp := range pm.peers {
		if mp.origin != rest.Discv5 || mp.record == nil || mp.failed > 0 {
			continue
		}
		if mp.hasShards && mp.shards.ClusterID != cluster {
			continue
		}
		out = append(out, mp.record)
	}
	return out
}

func (pm *peerManager) snapshot() PeerStats {
	s := &pm.stats
	return PeerStats{Added: s.added.Load(), Dials: s.dials.Load(), DialFailures: s.dialFailures.Load(), Removed: s.removed.Load(),
		MetadataPruned: s.metadataPruned.Load(), Colocation: s.colocation.Load(), InboundPruned: s.inboundPruned.Load(), StoreFull: s.storeFull.Load(),
		DNSFailures: s.dnsFailures.Load(), DNSRejected: s.dnsRejected.Load()}
}

// savedPeer is one line of peers.json.
type savedPeer struct {
	ID        string      `json:"id"`
	Addrs     []string    `json:"addrs"`
	Origin    rest.Origin `json:"origin"`
	ENR       string      `json:"enr,omitempty"`
	Protocols []string    `json:"protocols,omitempty"`
	Agent     string      `json:"agent,omitempty"` // identify's agent version
}

// save writes the known peers to peers.json when they changed: at most
// --peer-store-capacity of them, as the manager keeps no more. A peer's
// addresses are those it was learned with, else those the peerstore holds
// (identify's, or those POST /admin/v1/peers gave); its protocols are
// those identify reported, else those saved before; so is its agent.
func (pm *peerManager) save() {
	if pm.path == "" {
		return
	}
	pm.mu.Lock()
	if !pm.dirty {
		pm.mu.Unlock()
		return
	}
	ps := pm.h.Peerstore()
	var out []savedPeer
	for id, mp := range pm.peers {
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
	pm.dirty = false
	pm.mu.Unlock()
	slices.SortFunc(out, func(a, b savedPeer) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.MarshalIndent(out, "", " ")
	if err == nil {
		tmp := pm.path + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, pm.path)
		}
	}
	if err != nil {
		pm.log.Warn("peer persistence: write failed", "path", pm.path, "err", err)
	}
}

// load reads peers.json; entries that do not parse are skipped and logged.
// It returns the saved peers with addresses whose saved protocols include
// relay, those the node reconnects to at start.
func (pm *peerManager) load() []peer.AddrInfo {
	if pm.path == "" {
		return nil
	}
	b, err := os.ReadFile(pm.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var saved []savedPeer
	if err == nil {
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		pm.log.Warn("peer persistence: unreadable, starting without saved peers", "path", pm.path, "err", err)
		return nil
	}
	loaded := 0
	var relayPeers []peer.AddrInfo
	for _, sp := range saved {
		id, err := peer.Decode(sp.ID)
		if err != nil || id == pm.h.ID() {
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
		if !pm.restore(p, sp) {
			continue
		}
		loaded++
		if len(p.Addrs) > 0 && slices.Contains(sp.Protocols, string(relay.ProtocolID)) {
			relayPeers = append(relayPeers, peer.AddrInfo{ID: id, Addrs: p.Addrs})
		}
	}
	pm.log.Info("peer persistence: loaded peers", "path", pm.path, "peers", loaded, "of", len(saved), "relay", len(relayPeers))
	return relayPeers
}

// restore keeps a saved peer with its origin, protocols and agent, as
// nwaku's loadFromStorage fills its peer store books; a peer saved without
// addresses (an inbound light client) is known but never dialled. It
// reports false when the store is full.
func (pm *peerManager) restore(p discovery.Peer, sp savedPeer) bool {
	origin, protos := sp.Origin, sp.Protocols
	if len(p.Addrs) > 0 {
		pm.add(p, origin)
	} else {
		pm.connected(p.ID)
	}
	pm.mu.Lock()
	mp, ok := pm.peers[p.ID]
	if ok {
		if mp.origin != rest.Static {
			mp.origin = origin
		}
		if protos != nil {
			mp.protos = slices.Clone(protos)
		}
		mp.agent = sp.Agent
	}
	pm.mu.Unlock()
	if ok && sp.Agent != "" {
		_ = pm.h.Peerstore().Put(p.ID, "AgentVersion", sp.Agent)
	}
	if ok && len(protos) > 0 {
		ids := make([]protocol.ID, len(protos))
		for i, s := range protos {
			ids[i] = protocol.ID(s)
		}
		_ = pm.h.Peerstore().AddProtocols(p.ID, ids...)
	}
	return ok
}

// reconnect dials the saved relay peers at start, as nwaku's startRelay
// reconnects the relay peers of its peer storage
// (waku/node/waku_node.nim, peer_manager.nim reconnectPeers). nwaku first
// waits out gossipsub's prune backoff; a restarted node held no mesh to
// be pruned from, so these dials go out at once.
func (pm *peerManager) reconnect(ctx context.Context, peers []peer.AddrInfo) {
	if len(peers) == 0 {
		return
	}
	var unconnected []peer.AddrInfo
	for _, pi := range peers {
		if pm.h.Network().Connectedness(pi.ID) != network.Connected {
			unconnected = append(unconnected, pi)
		}
	}
	pm.dialAll(ctx, unconnected)
	pm.log.Info("peer persistence: reconnected to saved relay peers", "peers", len(peers))
}
