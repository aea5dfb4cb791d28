package peers

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/peerexchange"
)

// Config is what the manager needs to know, parsed: the node resolves it
// from its own configuration (node.Config, node.DiscoveryConfig).
type Config struct {
	// ClusterID and Shards are the node's cluster and the shards it relays
	// by configuration: its ENR announces them and discovery keeps the
	// peers of the cluster on one of them (discovery.WakuFilter).
	ClusterID uint16
	Shards    []uint16
	// MaxConnections and RelayShare (0..1, --relay-service-ratio) give the
	// relay peers' targets: a third of the relay share dialled out, the
	// rest left to inbound peers (nwaku peer_manager.nim).
	MaxConnections int
	RelayShare     float64
	// ColocationLimit is the most connected peers from one IP address;
	// 0 or less means no limit. Static nodes are exempt.
	ColocationLimit int
	// Capacity bounds the peers kept (--peer-store-capacity).
	Capacity int
	// PersistPath is the file the known peers are kept in across
	// restarts (--peer-persistence), "" for none.
	PersistPath string
	// Static are the static nodes, kept connected with a backoff from
	// RedialMin to RedialMax.
	Static               []peer.AddrInfo
	RedialMin, RedialMax time.Duration
	// Announce decides the announced addresses and the ENR's.
	Announce Announce
	// Discv5 runs discovery v5 on Discv5UDPPort from Bootstrap, letting it
	// update the ENR's IP with ENRAutoUpdate.
	Discv5        bool
	Discv5UDPPort int
	Bootstrap     []*enode.Node
	ENRAutoUpdate bool
	// DNSDiscoveryURL is an EIP-1459 tree fetched at start, "" for none,
	// from DNSNameServers ("" means nwaku's).
	DNSDiscoveryURL string
	DNSNameServers  []string
	// PeerExchange serves peer exchange within PeerExchangeLimit;
	// PeerExchangeNode, when set, is asked for peers every
	// PeerExchangeInterval.
	PeerExchange         bool
	PeerExchangeLimit    ratelimit.Setting
	PeerExchangeNode     *peer.AddrInfo
	PeerExchangeInterval time.Duration
	Logger               *slog.Logger
}

// discoveryParts are what Start and Run make; Close releases them.
type discoveryParts struct {
	mu       sync.Mutex
	record   *discovery.LocalRecord
	dns4IP   net.IP // DNS4DomainName resolved at start, nil without it or with an ExtIP
	discv5   *discovery.Discv5
	pxServer *peerexchange.Server
	pxClient *peerexchange.Client
}

// Start resolves the node's DNS4DomainName, binds the discv5 socket when
// discv5 is on, signs the node's ENR, logs it, fetches the DNS
// tree and starts discv5. A name that does not resolve fails the start,
// as in nwaku (waku/factory/internal_config.nim networkConfiguration); a
// DNS tree that cannot be fetched is logged and counted.
func (m *Manager) Start() error {
	ek, err := discovery.ECDSAKey(m.key)
	if err != nil {
		return fmt.Errorf("node: ENR: %w", err)
	}
	if err := m.resolveDNS4(); err != nil {
		return err
	}
	var conn *net.UDPConn
	udpPort := 0
	listen := m.cfg.Announce.ListenAddress
	if m.cfg.Discv5 {
		conn, err = net.ListenUDP(IPNetwork("udp", listen.String()), &net.UDPAddr{IP: listen, Port: m.cfg.Discv5UDPPort})
		if err != nil {
			return fmt.Errorf("node: discv5 UDP port %d: %w", m.cfg.Discv5UDPPort, err)
		}
		udpPort = conn.LocalAddr().(*net.UDPAddr).Port
	}
	if err := m.startRecord(ek, udpPort); err != nil {
		if conn != nil {
			conn.Close()
		}
		return err
	}
	boot := append(m.dnsDiscovery(), m.cfg.Bootstrap...)
	if !m.cfg.Discv5 {
		return nil
	}
	d, err := discovery.StartDiscv5(ek, m.disc.record, conn, discovery.Discv5Config{
		Bootnodes: boot,
		Filter:    discovery.WakuFilter(m.cfg.ClusterID, m.cfg.Shards),
		Found:     func(p discovery.Peer) { m.Add(p, state.Discv5) },
		Logger:    m.log,
	})
	if err != nil {
		return err
	}
	m.disc.mu.Lock()
	m.disc.discv5 = d
	m.disc.mu.Unlock()
	return nil
}

// resolveDNS4 resolves DNS4DomainName, when given without an ExtIP, into
// the external IP the ENR announces.
func (m *Manager) resolveDNS4() error {
	an := m.cfg.Announce
	if an.ExtIP != nil || an.DNS4DomainName == "" {
		return nil
	}
	ip, err := discovery.ResolveIPv4(an.DNS4DomainName, discovery.DNSConfig{NameServers: m.cfg.DNSNameServers, Logger: m.log})
	if err != nil {
		return fmt.Errorf("node: --dns4-domain-name %s: could not resolve the external IP: %w", an.DNS4DomainName, err)
	}
	m.disc.dns4IP = ip
	return nil
}

// startRecord signs the node's ENR and logs it.
func (m *Manager) startRecord(ek *ecdsa.PrivateKey, udpPort int) error {
	rc := m.RecordConfig(udpPort)
	rc.AutoUpdate = m.cfg.ENRAutoUpdate
	rec, err := discovery.NewLocalRecord(ek, rc)
	if err != nil {
		return fmt.Errorf("node: ENR: %w", err)
	}
	m.disc.mu.Lock()
	m.disc.record = rec
	m.disc.mu.Unlock()
	if len(rec.Dropped) > 0 {
		m.log.Warn("addresses left out of the ENR to keep it within 300 bytes", "dropped", fmt.Sprint(rec.Dropped))
	}
	m.log.Info("node record", "enrUri", rec.Text(), "ip", rc.IP, "tcp", rc.TCPPort, "udp", udpPort,
		"waku2", rc.Caps.String(), "multiaddrs", fmt.Sprint(rc.Multiaddrs))
	return nil
}

// ENR returns the node's current record in its text form, "enr:...", or ""
// before Start.
func (m *Manager) ENR() string {
	m.disc.mu.Lock()
	defer m.disc.mu.Unlock()
	if m.disc.record == nil {
		return ""
	}
	return m.disc.record.Text()
}

// Announced returns the node's announced addresses (Announce.Announced).
func (m *Manager) Announced() []string { return m.cfg.Announce.Announced(m.h) }

// Protocol ids whose handlers give the bits of the waku2 field
// (nwaku waku_core/codecs.nim).
var capabilityProtocols = []struct {
	cap   discovery.Capabilities
	proto []protocol.ID
}{
	{discovery.Relay, []protocol.ID{"/vac/waku/relay/2.0.0"}},
	{discovery.Store, []protocol.ID{"/vac/waku/store-query/3.0.0"}},
	{discovery.Filter, []protocol.ID{"/vac/waku/filter-subscribe/2.0.0-beta1"}},
	{discovery.Lightpush, []protocol.ID{"/vac/waku/lightpush/3.0.0", "/vac/waku/lightpush/2.0.0-beta1"}},
	{discovery.Sync, []protocol.ID{"/vac/waku/reconciliation/1.0.0"}},
}

// capabilities returns the waku2 bits of the protocols the host serves.
func (m *Manager) capabilities() discovery.Capabilities {
	mounted := m.h.Mux().Protocols()
	var c discovery.Capabilities
	for _, cp := range capabilityProtocols {
		for _, p := range cp.proto {
			if slices.Contains(mounted, p) {
				c |= cp.cap
			}
		}
	}
	return c
}

// RecordConfig chooses what the node's ENR says, with discv5 on udpPort, as nwaku's NetConfig
// (waku/node/net_config.nim) does: the IP is the ExtIP, else the address
// DNS4DomainName resolves to, else an /ip4/.../tcp/... ExtAddrs, else the
// listen address when it is specific, else the host's primary interface
// address; /ws, /wss and /dns4 addresses go in the multiaddrs field.
func (m *Manager) RecordConfig(udpPort int) discovery.RecordConfig {
	an := m.cfg.Announce
	rc := discovery.RecordConfig{UDPPort: udpPort, Caps: m.capabilities()}
	if len(m.cfg.Shards) > 0 {
		rc.Shards = discovery.RelayShards{ClusterID: m.cfg.ClusterID, Shards: slices.Clone(m.cfg.Shards)}
	}
	tcpPort, wsPort := BoundPorts(m.h)
	extIP := an.ExtIP
	if extIP == nil {
		extIP = m.disc.dns4IP
	}
	var extTCP ma.Multiaddr
	for _, a := range an.ExtAddrs {
		if isPlainTCP(a) && extTCP == nil {
			extTCP = a
			continue
		}
		rc.Multiaddrs = append(rc.Multiaddrs, a)
	}
	switch {
	case extTCP != nil:
		ip, _ := manet.ToIP(extTCP)
		port, _ := extTCP.ValueForProtocol(ma.P_TCP)
		rc.IP = ip
		fmt.Sscan(port, &rc.TCPPort)
	case an.ExtOnly:
		// Only the given addresses, none of them a plain TCP one.
	case extIP != nil:
		rc.IP, rc.TCPPort = extIP, tcpPort
	default:
		rc.IP, rc.TCPPort = ListenIP(an.ListenAddress), tcpPort
	}
	if an.ExtOnly {
		return rc
	}
	if an.DNS4DomainName != "" {
		// The name was checked with this very form (node's resolve).
		if a, err := ma.NewMultiaddr(fmt.Sprintf("/dns4/%s/tcp/%d", an.DNS4DomainName, tcpPort)); err == nil {
			rc.Multiaddrs = append(rc.Multiaddrs, a)
		}
	}
	if wsPort != 0 && !slices.ContainsFunc(an.ExtAddrs, IsWS) {
		host := "/ip4/" + rc.IP.String()
		if an.DNS4DomainName != "" {
			host = "/dns4/" + an.DNS4DomainName
		}
		scheme := "ws"
		if an.WebSocketSecure {
			scheme = "wss"
		}
		if a, err := ma.NewMultiaddr(fmt.Sprintf("%s/tcp/%d/%s", host, wsPort, scheme)); err == nil && rc.IP != nil {
			rc.Multiaddrs = append(rc.Multiaddrs, a)
		}
	}
	return rc
}

// dnsDiscovery fetches the DNS tree when configured, hands its peers to
// the manager with origin Dns and returns their records. A failure is
// logged and counted; the node starts without them.
func (m *Manager) dnsDiscovery() []*enode.Node {
	url := m.cfg.DNSDiscoveryURL
	if url == "" {
		return nil
	}
	peers, malformed, err := discovery.ResolveTree(url, discovery.DNSConfig{NameServers: m.cfg.DNSNameServers, Logger: m.log})
	m.stats.dnsRejected.Add(uint64(malformed))
	if err != nil {
		m.stats.dnsFailures.Add(1)
		m.log.Warn("DNS discovery failed; starting without its peers", "url", url, "err", err)
		return nil
	}
	keep := discovery.WakuFilter(m.cfg.ClusterID, m.cfg.Shards)
	var out []*enode.Node
	for _, p := range peers {
		out = append(out, p.Node)
		if keep(p) {
			m.Add(p, state.DNS)
		}
	}
	m.log.Info("DNS discovery", "url", url, "records", len(peers), "rejected", malformed)
	return out
}

// Run starts, until ctx ends or Close, the loops that keep the node's
// peers: the static nodes' re-dials, the peer exchange server and client
// as configured, and the manager's own rounds.
func (m *Manager) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	m.disc.mu.Lock()
	m.cancel = cancel
	if m.cfg.PeerExchange {
		m.disc.pxServer = peerexchange.NewServer(m.h, peerexchange.Config{
			Peers:     m.ExchangePool,
			RateLimit: m.cfg.PeerExchangeLimit,
			Logger:    m.log.With("protocol", "peer-exchange"),
		})
	}
	m.disc.pxClient = peerexchange.NewClient(m.h, m.log.With("protocol", "peer-exchange"))
	m.disc.mu.Unlock()
	for _, pi := range m.cfg.Static {
		m.goRun(func() { m.keepConnected(ctx, pi) })
	}
	for _, pi := range m.cfg.Static {
		m.Add(discovery.Peer{ID: pi.ID, Addrs: pi.Addrs}, state.Static)
	}
	if pi := m.cfg.PeerExchangeNode; pi != nil {
		m.goRun(func() { m.askPeerExchange(ctx, *pi) })
	}
	m.goRun(func() { m.run(ctx) })
}

// goRun runs f in a goroutine Close waits for.
func (m *Manager) goRun(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// askPeerExchange asks pi for peers now and every PeerExchangeInterval
// (10 s after a failure) until ctx ends, and hands the ones of our cluster
// and shards to the manager.
func (m *Manager) askPeerExchange(ctx context.Context, pi peer.AddrInfo) {
	m.h.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	keep := discovery.WakuFilter(m.cfg.ClusterID, m.cfg.Shards)
	client := m.disc.pxClient // set by Run before this loop starts
	for {
		wait := m.cfg.PeerExchangeInterval
		peers, err := client.Request(ctx, pi.ID, uint64(min(m.outTarget, peerexchange.MaxPeers)))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Info("peer exchange request failed", "peer", pi.ID, "err", err)
			wait = min(wait, 10*time.Second)
		}
		kept := 0
		for _, p := range peers {
			if keep(p) {
				m.Add(p, state.PeerExchange)
				kept++
			}
		}
		if err == nil {
			m.log.Info("peers from peer exchange", "peer", pi.ID, "received", len(peers), "kept", kept)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// DiscoveryStats are the counters of the peer exchange server and client
// and of discv5, zero for what does not run.
type DiscoveryStats struct {
	PxServer peerexchange.ServerStats
	PxClient peerexchange.ClientStats
	Discv5   discovery.Discv5Stats
	// Discv5Running says whether discv5 runs.
	Discv5Running bool
}

// DiscoveryStats returns a copy of the discovery counters.
func (m *Manager) DiscoveryStats() DiscoveryStats {
	m.disc.mu.Lock()
	defer m.disc.mu.Unlock()
	var s DiscoveryStats
	if m.disc.pxServer != nil {
		s.PxServer = m.disc.pxServer.Stats()
	}
	if m.disc.pxClient != nil {
		s.PxClient = m.disc.pxClient.Stats()
	}
	if m.disc.discv5 != nil {
		s.Discv5, s.Discv5Running = m.disc.discv5.Stats(), true
	}
	return s
}

// Discv5Running reports whether discv5 runs.
func (m *Manager) Discv5Running() bool {
	m.disc.mu.Lock()
	defer m.disc.mu.Unlock()
	return m.disc.discv5 != nil
}

// Close ends what Run started and waits for it (the known peers are
// saved on the way out), stops discv5 and peer exchange and releases the
// record. It may be called whether or not Start and Run were, and more
// than once; later calls do nothing.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.disc.mu.Lock()
		cancel := m.cancel
		m.disc.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		m.wg.Wait()
		m.disc.mu.Lock()
		defer m.disc.mu.Unlock()
		if m.disc.pxServer != nil {
			m.disc.pxServer.Close()
		}
		if m.disc.discv5 != nil {
			m.disc.discv5.Close()
		}
		if m.disc.record != nil {
			m.disc.record.Close()
		}
	})
}
