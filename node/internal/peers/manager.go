package peers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/relay"
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
	origin     state.Origin
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

// Stats counts the peer manager's work.
type Stats struct {
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

// Manager keeps the node connected to its target of relay peers,
// dialling the peers discovery finds, as nwaku's PeerManager does: out
// target a third of the relay share of MaxConnections, backoff of failed
// peers, removal after five failures, removal of peers that fail the
// metadata check, an IP colocation limit. It keeps the static nodes
// connected (static.go), runs discovery (discovery.go) and knows what the
// node learned of each peer (state.go).
type Manager struct {
	h         host.Host
	key       crypto.PrivKey
	cfg       Config
	log       *slog.Logger
	outTarget int
	inTarget  int
	coloc     int    // 0: no limit
	path      string // peers.json, "" without persistence
	// static holds the static nodes' ids; it does not change after New.
	static map[peer.ID]bool

	mu    sync.Mutex
	peers map[peer.ID]*managedPeer
	dirty bool
	// refused holds the static nodes the metadata check disconnected for
	// their cluster, with the reason; they are not dialled again.
	refused map[peer.ID]error

	kick  chan struct{}
	stats struct {
		added, dials, dialFailures, removed, metadataPruned, colocation, inboundPruned, storeFull, dnsFailures, dnsRejected atomic.Uint64
	}
	// sameIDWarned is set once a peer with the node's own id was warned of.
	sameIDWarned atomic.Bool

	disc discoveryParts
	// cancel ends the goroutines Start began; wg waits for them.
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New returns the manager of h's peers, whose node key (key) signs the
// ENR. It marks a peer CanConnect when its last connection closes from now
// on; it dials nothing before Run.
func New(h host.Host, key crypto.PrivKey, cfg Config) *Manager {
	relayPeers := int(math.Ceil(float64(cfg.MaxConnections) * cfg.RelayShare))
	m := &Manager{
		h: h, key: key, cfg: cfg, log: cfg.Logger,
		outTarget: max(1, relayPeers/3), inTarget: relayPeers - relayPeers/3,
		coloc: max(0, cfg.ColocationLimit), path: cfg.PersistPath,
		static: map[peer.ID]bool{}, peers: map[peer.ID]*managedPeer{}, refused: map[peer.ID]error{}, kick: make(chan struct{}, 1),
	}
	for _, pi := range cfg.Static {
		m.static[pi.ID] = true
	}
	watchConnectedness(h)
	return m
}

// Add records a peer learned from origin and wakes the dialler. A peer
// already known keeps its origin unless the new one is Static.
func (m *Manager) Add(p discovery.Peer, origin state.Origin) {
	if p.ID == m.h.ID() {
		m.sameID(p.Addrs, string(origin))
		return
	}
	if len(p.Addrs) == 0 {
		return
	}
	m.mu.Lock()
	mp, ok := m.peers[p.ID]
	if !ok {
		if len(m.peers) >= m.cfg.Capacity && !m.evictLocked() {
			m.mu.Unlock()
			m.stats.storeFull.Add(1)
			return
		}
		mp = &managedPeer{origin: origin, added: time.Now()}
		m.peers[p.ID] = mp
		m.stats.added.Add(1)
	}
	if origin == state.Static {
		mp.origin = origin
	}
	mp.addrs, mp.caps, mp.hasCaps, mp.shards, mp.hasShards = p.Addrs, p.Caps, p.HasCaps, p.Shards, p.HasShards
	if p.Node != nil {
		mp.record = p.Node
	}
	m.dirty = true
	m.mu.Unlock()
	m.h.Peerstore().AddAddrs(p.ID, p.Addrs, peerstore.AddressTTL)
	if !ok {
		m.log.Debug("peer added", "peer", p.ID, "origin", origin, "addrs", fmt.Sprint(p.Addrs))
	}
	m.wake()
}

// connected records a peer on each connection, and disconnected marks the
// peers changed, as nwaku's onPeerEvent writes every peer to its peer
// storage on Joined and Left (waku/node/peer_manager/peer_manager.nim): a
// peer not yet known (an inbound one, or one dialled through POST
// /admin/v1/peers) is kept with origin UnknownOrigin, nwaku's addPeer
// default; its addresses are those identify leaves in the peerstore, read
// when the peers are saved.
func (m *Manager) connected(id peer.ID) {
	if id == m.h.ID() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirty = true
	if _, ok := m.peers[id]; ok {
		return
	}
	if len(m.peers) >= m.cfg.Capacity && !m.evictLocked() {
		m.stats.storeFull.Add(1)
		return
	}
	m.peers[id] = &managedPeer{origin: state.UnknownOrigin, added: time.Now()}
	m.stats.added.Add(1)
}

func (m *Manager) disconnected() {
	m.mu.Lock()
	m.dirty = true
	m.mu.Unlock()
}

// evictLocked forgets the not-connected, non-static peer with the most
// failures (the oldest among equals); false when there is none.
func (m *Manager) evictLocked() bool {
	var victim peer.ID
	var worst *managedPeer
	for id, mp := range m.peers {
		if mp.origin == state.Static || m.h.Network().Connectedness(id) == network.Connected {
			continue
		}
		if worst == nil || mp.failed > worst.failed || (mp.failed == worst.failed && mp.added.Before(worst.added)) {
			victim, worst = id, mp
		}
	}
	if worst == nil {
		return false
	}
	delete(m.peers, victim)
	return true
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Origin returns how the node learned of id, as /admin/v1/peers shows
// it: Static for a static node, UnknownOrigin for a peer not known.
func (m *Manager) Origin(id peer.ID) state.Origin {
	if m.isStatic(id) {
		return state.Static
	}
	o, _ := m.Learned(id)
	return o
}

// Learned returns how the manager learned of id; ok is false when it
// does not know id.
func (m *Manager) Learned(id peer.ID) (o state.Origin, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mp, ok := m.peers[id]; ok {
		return mp.origin, true
	}
	return state.UnknownOrigin, false
}

// RecordShards returns the relay shards id's discovery record (ENR)
// announces, when the manager has one.
func (m *Manager) RecordShards(id peer.ID) (discovery.RelayShards, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mp, ok := m.peers[id]; ok && mp.hasShards {
		return mp.shards, true
	}
	return discovery.RelayShards{}, false
}

// withCaps returns the known peers whose discovery record (ENR) announces
// every capability of c, as nwaku's peer store lists them under the codecs
// of their record's capabilities (waku_core/peers.nim toRemotePeerInfo).
func (m *Manager) withCaps(c discovery.Capabilities) []peer.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []peer.ID
	for id, mp := range m.peers {
		if mp.hasCaps && mp.caps.Has(c) {
			out = append(out, id)
		}
	}
	return out
}

// ServicePeer picks a random known peer that supports codec, connected or
// not, as nwaku v0.38.1's PeerManager.selectPeer does without a service
// slot (waku/node/peer_manager/peer_manager.nim): one identify said speaks
// codec or, when c is not 0, one whose discovery record announces c (nwaku
// maps ENR capabilities to the filter and lightpush v3 codecs only). The
// node itself never counts. ok is false when there is no such peer.
func (m *Manager) ServicePeer(codec protocol.ID, c discovery.Capabilities) (id peer.ID, ok bool) {
	seen := map[peer.ID]bool{m.h.ID(): true}
	var candidates []peer.ID
	for _, id := range m.h.Peerstore().Peers() {
		if seen[id] {
			continue
		}
		if got, err := m.h.Peerstore().SupportsProtocols(id, codec); err == nil && len(got) > 0 {
			seen[id] = true
			candidates = append(candidates, id)
		}
	}
	if c != 0 {
		for _, id := range m.withCaps(c) {
			if !seen[id] {
				seen[id] = true
				candidates = append(candidates, id)
			}
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	return candidates[rand.IntN(len(candidates))], true
}

// forget removes id, as after a failed metadata check (nwaku
// onPeerMetadata disconnects and the pruning loop drops the peer).
func (m *Manager) forget(id peer.ID, reason error) {
	if m.isStatic(id) {
		return
	}
	m.mu.Lock()
	_, ok := m.peers[id]
	delete(m.peers, id)
	m.dirty = m.dirty || ok
	m.mu.Unlock()
	if ok {
		m.stats.metadataPruned.Add(1)
		m.log.Info("peer forgotten: metadata check failed", "peer", id, "reason", reason)
	}
	m.h.Peerstore().ClearAddrs(id)
}

// prunePeerstore forgets, when the libp2p peerstore holds more than
// --peer-store-capacity peers, disconnected peers the manager does not
// keep, down to the capacity, as nwaku's prunePeerStore does
// (waku/node/peer_manager/peer_manager.nim): without it every identity
// that ever connected stays there (keys, protocols, agent), about 7 kB
// each. It runs after every round, so the peerstore holds at most the
// capacity plus the peers connected or met since the last round.
func (m *Manager) prunePeerstore() {
	ps := m.h.Peerstore()
	ids := ps.Peers()
	excess := len(ids) - 1 - m.cfg.Capacity // less the node itself
	if m.cfg.Capacity <= 0 || excess <= 0 {
		return
	}
	m.mu.Lock()
	managed := make(map[peer.ID]bool, len(m.peers))
	for id := range m.peers {
		managed[id] = true
	}
	m.mu.Unlock()
	for _, id := range ids {
		if excess == 0 {
			break
		}
		if id == m.h.ID() || managed[id] || m.h.Network().Connectedness(id) == network.Connected {
			continue
		}
		ps.RemovePeer(id)
		ps.ClearAddrs(id)
		excess--
	}
}

// run keeps the relay connections at target until ctx ends.
func (m *Manager) run(ctx context.Context) {
	relayPeers := m.load()
	m.h.Network().Notify(&network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) {
			m.checkColocation(c)
			if m.path != "" {
				m.connected(c.RemotePeer())
			}
		},
		DisconnectedF: func(network.Network, network.Conn) {
			if m.path != "" {
				m.disconnected()
			}
		},
	})
	m.reconnect(ctx, relayPeers)
	lastSave := time.Now()
	for {
		below := m.round(ctx)
		m.prunePeerstore()
		if m.path != "" && time.Since(lastSave) >= persistInterval {
			m.save()
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
			m.save()
			return
		case <-m.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// relayConns counts connected relay peers by the direction of their first
// connection.
func (m *Manager) relayConns() (in, out []peer.ID) {
	for _, id := range m.h.Network().Peers() {
		if ok, _ := m.h.Peerstore().SupportsProtocols(id, relay.ProtocolID); len(ok) == 0 {
			continue
		}
		conns := m.h.Network().ConnsToPeer(id)
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
func (m *Manager) round(ctx context.Context) bool {
	in, out := m.relayConns()
	if excess := len(in) - m.inTarget; excess > 0 {
		for _, id := range in {
			if excess == 0 {
				break
			}
			if m.isStatic(id) {
				continue
			}
			m.h.Network().ClosePeer(id)
			m.stats.inboundPruned.Add(1)
			excess--
		}
	}
	need := m.outTarget - len(out)
	if need <= 0 {
		return false
	}
	cands := m.candidates()
	if len(cands) == 0 {
		return true
	}
	m.dialAll(ctx, cands[:min(len(cands), need)])
	return true
}

// dialAll dials peers, maxParallelDials at a time, and returns when every
// dial has ended.
func (m *Manager) dialAll(ctx context.Context, peers []peer.AddrInfo) {
	sem := make(chan struct{}, maxParallelDials)
	var wg sync.WaitGroup
	for _, pi := range peers {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			m.dial(ctx, pi)
		}()
	}
	wg.Wait()
}

// candidates are known relay peers not connected, out of backoff, whose
// IP is under the colocation limit, in random order.
func (m *Manager) candidates() []peer.AddrInfo {
	ipCount := m.connectedIPs()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []peer.AddrInfo
	for id, mp := range m.peers {
		if mp.origin == state.Static || len(mp.addrs) == 0 || (mp.hasCaps && !mp.caps.Has(discovery.Relay)) ||
			(mp.protos != nil && !slices.Contains(mp.protos, string(relay.ProtocolID))) {
			continue
		}
		if m.h.Network().Connectedness(id) == network.Connected {
			continue
		}
		if mp.failed > 0 && now.Before(mp.lastFailed.Add(backoff(mp.failed))) {
			continue
		}
		if m.coloc > 0 && ipCount[firstIP(mp.addrs)] >= m.coloc {
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

func (m *Manager) dial(ctx context.Context, pi peer.AddrInfo) {
	m.stats.dials.Add(1)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	err := m.Connect(dctx, pi)
	cancel()
	if ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	mp, ok := m.peers[pi.ID]
	if !ok {
		return
	}
	if err == nil {
		mp.failed = 0
		m.log.Debug("connected to discovered peer", "peer", pi.ID, "origin", mp.origin)
		return
	}
	m.stats.dialFailures.Add(1)
	mp.failed++
	mp.lastFailed = time.Now()
	if mp.failed >= maxFailedAttempts {
		delete(m.peers, pi.ID)
		m.dirty = true
		m.stats.removed.Add(1)
		m.log.Info("peer removed after failed dials", "peer", pi.ID, "failures", mp.failed, "err", err)
		return
	}
	m.log.Debug("dial failed", "peer", pi.ID, "failures", mp.failed, "retry_in", backoff(mp.failed), "err", err)
}

// connectedIPs counts connected peers per remote IP.
func (m *Manager) connectedIPs() map[string]int {
	out := map[string]int{}
	for _, c := range m.h.Network().Conns() {
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
func (m *Manager) checkColocation(c network.Conn) {
	if m.coloc <= 0 || m.isStatic(c.RemotePeer()) {
		return
	}
	ip, err := manet.ToIP(c.RemoteMultiaddr())
	if err != nil {
		return
	}
	peers := map[peer.ID]bool{}
	for _, other := range m.h.Network().Conns() {
		if oip, err := manet.ToIP(other.RemoteMultiaddr()); err == nil && oip.Equal(ip) {
			peers[other.RemotePeer()] = true
		}
	}
	if len(peers) > m.coloc {
		m.stats.colocation.Add(1)
		m.log.Info("closing connection: too many peers from one IP", "peer", c.RemotePeer(), "ip", ip, "limit", m.coloc)
		go c.Close()
	}
}

// ExchangePool returns the records peer exchange hands out, as nwaku's
// poolFilter chooses them: peers found by discv5 whose record is not of
// another cluster and whose last dial did not fail.
func (m *Manager) ExchangePool() []*enode.Node {
	cluster := m.cfg.ClusterID
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*enode.Node
	for _, mp := range m.peers {
		if mp.origin != state.Discv5 || mp.record == nil || mp.failed > 0 {
			continue
		}
		if mp.hasShards && mp.shards.ClusterID != cluster {
			continue
		}
		out = append(out, mp.record)
	}
	return out
}

// Stats returns a copy of the manager's counters.
func (m *Manager) Stats() Stats {
	s := &m.stats
	return Stats{Added: s.added.Load(), Dials: s.dials.Load(), DialFailures: s.dialFailures.Load(), Removed: s.removed.Load(),
		MetadataPruned: s.metadataPruned.Load(), Colocation: s.colocation.Load(), InboundPruned: s.inboundPruned.Load(), StoreFull: s.storeFull.Load(),
		DNSFailures: s.dnsFailures.Load(), DNSRejected: s.dnsRejected.Load()}
}
