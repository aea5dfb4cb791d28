package node

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/ethereum/go-ethereum/p2p/dnsdisc"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/peerexchange"
)

// DiscoveryConfig configures how the node says where it is (its ENR) and
// how it finds peers. Field names follow nwaku v0.38.1's flags
// (tools/confutils/cli_args.nim); the zero value of each field means its
// documented default.
type DiscoveryConfig struct {
	// ExtMultiaddrs are addresses others reach the node at
	// (--ext-multiaddr), announced besides the listen addresses. An
	// /ip4/<ip>/tcp/<port> one gives the record's ip and tcp; the others
	// (/dns4, /ws, /wss ...) go in its multiaddrs field.
	ExtMultiaddrs []string
	// ExtMultiaddrOnly announces only ExtMultiaddrs (--ext-multiaddr-only).
	ExtMultiaddrOnly bool
	// NAT is how the node learns its public address (--nat): "none" (the
	// default; nwaku's default "any" probes UPnP and NAT-PMP routers),
	// "extip:<IPv4>" (that address), or "any", "upnp" or "pmp" (go-libp2p's
	// port mapping, which tries both protocols).
	NAT string
	// DNS4DomainName is a domain name resolving to the node's public IPv4
	// address (--dns4-domain-name); it is announced as /dns4/<name>/tcp/...
	DNS4DomainName string

	// Discv5 runs discovery v5 (--discv5-discovery).
	Discv5 bool
	// Discv5UDPPort is its UDP port (--discv5-udp-port). DefaultConfig sets
	// 9000, as nwaku; 0 picks a free port.
	Discv5UDPPort int
	// Discv5BootstrapNodes are ENRs in text form to start from
	// (--discv5-bootstrap-node).
	Discv5BootstrapNodes []string
	// Discv5ENRAutoUpdate lets discv5 replace the record's IP with the one
	// peers report (--discv5-enr-auto-update).
	Discv5ENRAutoUpdate bool
	// Discv5TableIPLimit, Discv5BucketIPLimit and Discv5BitsPerHop are
	// nwaku's routing-table tunables (defaults 10, 2 and 1). go-ethereum's
	// table has the same limits built in (10 per /24 in the table, 2 per
	// /24 in a bucket, LAN addresses exempt) and one bit per hop; other
	// values are refused.
	Discv5TableIPLimit, Discv5BucketIPLimit, Discv5BitsPerHop int

	// RelayServiceRatio splits MaxConnections between relay and service
	// peers (--relay-service-ratio), "relay:service" summing to 100.
	// Default "50:50", as nwaku v0.38.1. A third of the relay share is
	// dialled out, the rest left to inbound peers (nwaku peer_manager.nim).
	RelayServiceRatio string
	// IPColocationLimit is the most connected peers from one IP address
	// (--ip-colocation-limit). 0 means nwaku's default 5; negative means no
	// limit (nwaku's 0). Static peers are exempt.
	IPColocationLimit int
	// PeerStoreCapacity bounds the peers the manager keeps
	// (--peer-store-capacity). Default 1000.
	PeerStoreCapacity int
	// PeerPersistence keeps the known peers in DataDir/peers.json across
	// restarts (--peer-persistence).
	PeerPersistence bool

	// DNSDiscovery fetches DNSDiscoveryURL at start (--dns-discovery): its
	// records are dialled (origin Dns) and, with discv5 on, bootstrap it.
	DNSDiscovery bool
	// DNSDiscoveryURL is an EIP-1459 tree, enrtree://<key>@<domain>
	// (--dns-discovery-url).
	DNSDiscoveryURL string
	// DNSNameServers are the name servers asked (--dns-addrs-name-server):
	// IP addresses (port 53, as nwaku) or, courier's extension, IP:port.
	// Empty means nwaku's 1.1.1.1 and 1.0.0.1.
	DNSNameServers []string

	// PeerExchange serves peer exchange (--peer-exchange). Default true via
	// DefaultDiscoveryConfig, as nwaku; a Config built by hand has it off.
	PeerExchange bool
	// PeerExchangeNode is a multiaddr with /p2p/<id> asked for peers at
	// start and every PeerExchangeInterval after (--peer-exchange-node).
	PeerExchangeNode string
	// PeerExchangeInterval is the pause between two requests to
	// PeerExchangeNode. Default 5 minutes; a failed request is retried
	// after 10 s.
	PeerExchangeInterval time.Duration
}

// DefaultDiscoveryConfig returns nwaku v0.38.1's defaults with courier's
// --nat=none.
func DefaultDiscoveryConfig() DiscoveryConfig {
	return DiscoveryConfig{NAT: natNone, Discv5UDPPort: 9000, RelayServiceRatio: "50:50", PeerExchange: true}
}

// natNone is courier's default --nat: no probes leave the machine.
const natNone = "none"

func (c *DiscoveryConfig) setDefaults() {
	if c.NAT == "" {
		c.NAT = natNone
	}
	if c.Discv5TableIPLimit == 0 {
		c.Discv5TableIPLimit = 10
	}
	if c.Discv5BucketIPLimit == 0 {
		c.Discv5BucketIPLimit = 2
	}
	if c.Discv5BitsPerHop == 0 {
		c.Discv5BitsPerHop = 1
	}
	if c.RelayServiceRatio == "" {
		c.RelayServiceRatio = "50:50"
	}
	if c.IPColocationLimit == 0 {
		c.IPColocationLimit = 5
	}
	if c.PeerStoreCapacity == 0 {
		c.PeerStoreCapacity = 1000
	}
	if c.PeerExchangeInterval == 0 {
		c.PeerExchangeInterval = 5 * time.Minute
	}
}

func (c *DiscoveryConfig) validate() error {
	if _, err := c.extIP(); err != nil {
		return err
	}
	for _, s := range c.ExtMultiaddrs {
		if _, err := ma.NewMultiaddr(s); err != nil {
			return fmt.Errorf("%w: --ext-multiaddr %q: %w", ErrConfig, s, err)
		}
	}
	if c.ExtMultiaddrOnly && len(c.ExtMultiaddrs) == 0 {
		return fmt.Errorf("%w: --ext-multiaddr-only needs --ext-multiaddr", ErrConfig)
	}
	if c.DNS4DomainName != "" && strings.ContainsAny(c.DNS4DomainName, "/ ") {
		return fmt.Errorf("%w: --dns4-domain-name %q is not a domain name", ErrConfig, c.DNS4DomainName)
	}
	if c.Discv5UDPPort < 0 || c.Discv5UDPPort > 65535 {
		return fmt.Errorf("%w: --discv5-udp-port %d", ErrConfig, c.Discv5UDPPort)
	}
	for _, b := range c.Discv5BootstrapNodes {
		if _, err := discovery.ParseENR(b); err != nil {
			return fmt.Errorf("%w: --discv5-bootstrap-node %q: %w", ErrConfig, b, err)
		}
	}
	if c.Discv5TableIPLimit != 10 || c.Discv5BucketIPLimit != 2 || c.Discv5BitsPerHop != 1 {
		return fmt.Errorf("%w: --discv5-table-ip-limit, --discv5-bucket-ip-limit and --discv5-bits-per-hop: go-ethereum's discv5 table has 10, 2 and 1 built in", ErrConfig)
	}
	if _, _, err := parseRatio(c.RelayServiceRatio); err != nil {
		return err
	}
	if c.PeerExchangeNode != "" {
		if _, err := peer.AddrInfoFromString(c.PeerExchangeNode); err != nil {
			return fmt.Errorf("%w: --peer-exchange-node %q needs a multiaddr with /p2p/<id>: %w", ErrConfig, c.PeerExchangeNode, err)
		}
	}
	if c.DNSDiscovery && c.DNSDiscoveryURL == "" {
		return fmt.Errorf("%w: --dns-discovery needs --dns-discovery-url enrtree://<key>@<domain>", ErrConfig)
	}
	if c.DNSDiscoveryURL != "" {
		// The tree's public key and domain, as the client will read them.
		if _, _, err := dnsdisc.ParseURL(c.DNSDiscoveryURL); err != nil {
			return fmt.Errorf("%w: --dns-discovery-url %q: %w (want enrtree://<base32 public key>@<domain>)", ErrConfig, c.DNSDiscoveryURL, err)
		}
	}
	if c.PeerStoreCapacity < 0 {
		return fmt.Errorf("%w: --peer-store-capacity %d", ErrConfig, c.PeerStoreCapacity)
	}
	return nil
}

// parseRatio parses "relay:service", two numbers summing to 100
// (nwaku parseRelayServiceRatio).
func parseRatio(s string) (relay, service float64, err error) {
	r, sv, ok := strings.Cut(s, ":")
	if ok {
		_, err1 := fmt.Sscan(r, &relay)
		_, err2 := fmt.Sscan(sv, &service)
		ok = err1 == nil && err2 == nil && relay >= 0 && service >= 0 && relay+service == 100
	}
	if !ok {
		return 0, 0, fmt.Errorf("%w: --relay-service-ratio %q: want two numbers summing to 100, as 50:50", ErrConfig, s)
	}
	return relay / 100, service / 100, nil
}

// extIP returns the address of --nat=extip:<IPv4>, or nil.
func (c *DiscoveryConfig) extIP() (net.IP, error) {
	switch {
	case c.NAT == natNone || c.portMapping():
		return nil, nil
	case strings.HasPrefix(c.NAT, "extip:"):
		ip := net.ParseIP(strings.TrimPrefix(c.NAT, "extip:"))
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("%w: --nat %q: want extip:<IPv4 address>", ErrConfig, c.NAT)
		}
		return ip, nil
	}
	return nil, fmt.Errorf("%w: --nat %q: want none, any, upnp, pmp or extip:<IPv4 address>", ErrConfig, c.NAT)
}

// portMapping reports whether --nat asks for UPnP or NAT-PMP port mapping.
func (c *DiscoveryConfig) portMapping() bool {
	return c.NAT == "any" || c.NAT == "upnp" || c.NAT == "pmp"
}

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
func (n *Node) capabilities() discovery.Capabilities {
	mounted := n.host.Mux().Protocols()
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

// resolveDNS4 resolves --dns4-domain-name, when given without
// --nat=extip:, into the external IP the ENR announces; a name that does
// not resolve fails the start, as in nwaku (waku/factory/internal_config.nim
// networkConfiguration).
func (n *Node) resolveDNS4() error {
	dc := n.cfg.Discovery
	if ip, _ := dc.extIP(); ip != nil || dc.DNS4DomainName == "" {
		return nil
	}
	ip, err := discovery.ResolveIPv4(dc.DNS4DomainName, discovery.DNSConfig{NameServers: dc.DNSNameServers, Logger: n.cfg.Logger})
	if err != nil {
		return fmt.Errorf("node: --dns4-domain-name %s: could not resolve the external IP: %w", dc.DNS4DomainName, err)
	}
	n.dns4IP = ip
	return nil
}

// recordConfig chooses what the node's ENR says, as nwaku's NetConfig
// (waku/node/net_config.nim) does: the IP is the --nat=extip: one, else the
// address --dns4-domain-name resolves to, else an
// /ip4/.../tcp/... --ext-multiaddr, else the listen address when it is
// specific, else the host's primary interface address; /ws, /wss and /dns4
// addresses go in the multiaddrs field.
func (n *Node) recordConfig(udpPort int) (discovery.RecordConfig, error) {
	dc := n.cfg.Discovery
	rc := discovery.RecordConfig{UDPPort: udpPort, Caps: n.capabilities()}
	if len(n.cfg.Shards) > 0 {
		rc.Shards = discovery.RelayShards{ClusterID: n.cfg.ClusterID, Shards: slices.Clone(n.cfg.Shards)}
	}
	tcpPort, wsPort := n.boundPorts()
	var ext []ma.Multiaddr
	for _, s := range dc.ExtMultiaddrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return rc, fmt.Errorf("%w: --ext-multiaddr %q: %w", ErrConfig, s, err)
		}
		ext = append(ext, a)
	}
	extIP, _ := dc.extIP()
	if extIP == nil {
		extIP = n.dns4IP
	}
	var extTCP ma.Multiaddr
	for _, a := range ext {
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
	case dc.ExtMultiaddrOnly:
		// Only the given addresses, none of them a plain TCP one.
	case extIP != nil:
		rc.IP, rc.TCPPort = extIP, tcpPort
	default:
		rc.IP, rc.TCPPort = n.listenIP(), tcpPort
	}
	if dc.ExtMultiaddrOnly {
		return rc, nil
	}
	if dc.DNS4DomainName != "" {
		a, err := ma.NewMultiaddr(fmt.Sprintf("/dns4/%s/tcp/%d", dc.DNS4DomainName, tcpPort))
		if err != nil {
			return rc, fmt.Errorf("%w: --dns4-domain-name: %w", ErrConfig, err)
		}
		rc.Multiaddrs = append(rc.Multiaddrs, a)
	}
	if wsPort != 0 && !slices.ContainsFunc(ext, isWS) {
		host := "/ip4/" + rc.IP.String()
		if dc.DNS4DomainName != "" {
			host = "/dns4/" + dc.DNS4DomainName
		}
		scheme := "ws"
		if n.cfg.WebSocketSecure {
			scheme = "wss"
		}
		if a, err := ma.NewMultiaddr(fmt.Sprintf("%s/tcp/%d/%s", host, wsPort, scheme)); err == nil && rc.IP != nil {
			rc.Multiaddrs = append(rc.Multiaddrs, a)
		}
	}
	return rc, nil
}

// boundPorts returns the TCP ports the host listens on for plain TCP and
// for WebSocket (0 when it does not).
func (n *Node) boundPorts() (tcpPort, wsPort int) {
	for _, a := range n.host.Network().ListenAddresses() {
		p, err := a.ValueForProtocol(ma.P_TCP)
		if err != nil {
			continue
		}
		var port int
		fmt.Sscan(p, &port)
		switch {
		case isWS(a):
			if wsPort == 0 {
				wsPort = port
			}
		case isPlainTCP(a):
			if tcpPort == 0 {
				tcpPort = port
			}
		}
	}
	return tcpPort, wsPort
}

// listenIP returns the listen address when it is specific, else the
// address of the interface that routes outward, else the first
// non-loopback interface address, else the loopback address; of the
// listen address's family, as the host listens on that family only.
func (n *Node) listenIP() net.IP {
	ip := net.ParseIP(n.cfg.ListenAddress)
	if ip != nil && !ip.IsUnspecified() {
		return ip
	}
	v6 := ip != nil && ip.To4() == nil
	network, probe, loopback := "udp4", "192.0.2.1:9", net.IPv4(127, 0, 0, 1)
	if v6 {
		network, probe, loopback = "udp6", "[2001:db8::1]:9", net.IPv6loopback
	}
	// A UDP "connection" only picks the route; nothing is sent.
	if c, err := net.Dial(network, probe); err == nil {
		defer c.Close()
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() {
			return a.IP
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if in, ok := a.(*net.IPNet); ok && (in.IP.To4() == nil) == v6 && !in.IP.IsLoopback() && !in.IP.IsLinkLocalUnicast() {
			return in.IP
		}
	}
	return loopback
}

func isWS(a ma.Multiaddr) bool {
	for _, c := range a {
		if code := c.Protocol().Code; code == ma.P_WS || code == ma.P_WSS {
			return true
		}
	}
	return false
}

// isPlainTCP reports whether a is /ip4|ip6/<ip>/tcp/<port> and nothing else.
func isPlainTCP(a ma.Multiaddr) bool {
	a = withoutP2P(a)
	return len(a) == 2 && (a[0].Protocol().Code == ma.P_IP4 || a[0].Protocol().Code == ma.P_IP6) && a[1].Protocol().Code == ma.P_TCP
}

func withoutP2P(a ma.Multiaddr) ma.Multiaddr {
	var out ma.Multiaddr
	for _, c := range a {
		if c.Protocol().Code != ma.P_P2P {
			out = append(out, c)
		}
	}
	return out
}

// startDiscovery binds the discv5 socket when discv5 is on, signs the
// node's ENR, logs it and starts discv5.
func (n *Node) startDiscovery() error {
	dc := n.cfg.Discovery
	ek, err := discovery.ECDSAKey(n.key)
	if err != nil {
		return fmt.Errorf("node: ENR: %w", err)
	}
	if err := n.resolveDNS4(); err != nil {
		return err
	}
	var conn *net.UDPConn
	udpPort := 0
	if dc.Discv5 {
		conn, err = net.ListenUDP(ipNetwork("udp", n.cfg.ListenAddress), &net.UDPAddr{IP: net.ParseIP(n.cfg.ListenAddress), Port: dc.Discv5UDPPort})
		if err != nil {
			return fmt.Errorf("node: discv5 UDP port %d: %w", dc.Discv5UDPPort, err)
		}
		udpPort = conn.LocalAddr().(*net.UDPAddr).Port
	}
	if err := n.startRecord(ek, udpPort); err != nil {
		if conn != nil {
			conn.Close()
		}
		return err
	}
	if !dc.Discv5 {
		n.dnsDiscovery()
		return nil
	}
	boot := n.dnsDiscovery()
	for _, b := range dc.Discv5BootstrapNodes {
		bn, err := discovery.ParseENR(b)
		if err != nil {
			conn.Close()
			return fmt.Errorf("%w: --discv5-bootstrap-node: %w", ErrConfig, err)
		}
		boot = append(boot, bn)
	}
	n.discv5, err = discovery.StartDiscv5(ek, n.record, conn, discovery.Discv5Config{
		Bootnodes: boot,
		Filter:    discovery.WakuFilter(n.cfg.ClusterID, n.cfg.Shards),
		Found:     func(p discovery.Peer) { n.peers.add(p, state.Discv5) },
		Logger:    n.cfg.Logger,
	})
	return err
}

// dnsDiscovery fetches the DNS tree when configured, hands its peers to
// the peer manager with origin Dns and returns their records. A failure is
// logged and counted; the node starts without them.
func (n *Node) dnsDiscovery() []*enode.Node {
	dc := n.cfg.Discovery
	if !dc.DNSDiscovery {
		return nil
	}
	peers, malformed, err := discovery.ResolveTree(dc.DNSDiscoveryURL, discovery.DNSConfig{NameServers: dc.DNSNameServers, Logger: n.cfg.Logger})
	n.peers.stats.dnsRejected.Add(uint64(malformed))
	if err != nil {
		n.peers.stats.dnsFailures.Add(1)
		n.cfg.Logger.Warn("DNS discovery failed; starting without its peers", "url", dc.DNSDiscoveryURL, "err", err)
		return nil
	}
	keep := discovery.WakuFilter(n.cfg.ClusterID, n.cfg.Shards)
	var out []*enode.Node
	for _, p := range peers {
		out = append(out, p.Node)
		if keep(p) {
			n.peers.add(p, state.DNS)
		}
	}
	n.cfg.Logger.Info("DNS discovery", "url", dc.DNSDiscoveryURL, "records", len(peers), "rejected", malformed)
	return out
}

// runPeerManager starts the peer manager with the static peers known, and
// the peer exchange server and client as configured.
func (n *Node) runPeerManager(ctx context.Context, static []peer.AddrInfo) error {
	for _, pi := range static {
		n.peers.add(discovery.Peer{ID: pi.ID, Addrs: pi.Addrs}, state.Static)
	}
	dc := n.cfg.Discovery
	if dc.PeerExchange {
		limits, err := ratelimit.Parse(n.cfg.RateLimit)
		if err != nil {
			return fmt.Errorf("%w: --rate-limit: %w", ErrConfig, err)
		}
		n.pxServer = peerexchange.NewServer(n.host, peerexchange.Config{
			Peers:     n.peers.exchangePool,
			RateLimit: limits.Get(ratelimit.PeerExchange),
			Logger:    n.cfg.Logger.With("protocol", "peer-exchange"),
		})
		n.MarkMounted(HealthPeerExchange, peerexchange.ProtocolID)
	}
	n.pxClient = peerexchange.NewClient(n.host, n.cfg.Logger.With("protocol", "peer-exchange"))
	if dc.PeerExchangeNode != "" {
		pi, err := peer.AddrInfoFromString(dc.PeerExchangeNode)
		if err != nil {
			return fmt.Errorf("%w: --peer-exchange-node: %w", ErrConfig, err)
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.askPeerExchange(ctx, *pi)
		}()
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.peers.run(ctx)
	}()
	return nil
}

// askPeerExchange asks pi for peers now and every PeerExchangeInterval
// (10 s after a failure) until ctx ends, and hands the ones of our cluster
// and shards to the peer manager.
func (n *Node) askPeerExchange(ctx context.Context, pi peer.AddrInfo) {
	n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	keep := discovery.WakuFilter(n.cfg.ClusterID, n.cfg.Shards)
	for {
		wait := n.cfg.Discovery.PeerExchangeInterval
		peers, err := n.pxClient.Request(ctx, pi.ID, uint64(min(n.peers.outTarget, peerexchange.MaxPeers)))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.cfg.Logger.Info("peer exchange request failed", "peer", pi.ID, "err", err)
			wait = min(wait, 10*time.Second)
		}
		kept := 0
		for _, p := range peers {
			if keep(p) {
				n.peers.add(p, state.PeerExchange)
				kept++
			}
		}
		if err == nil {
			n.cfg.Logger.Info("peers from peer exchange", "peer", pi.ID, "received", len(peers), "kept", kept)
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

// PeerExchangeStats returns the peer exchange server's and client's
// counters (zero values for what does not run).
func (n *Node) PeerExchangeStats() (peerexchange.ServerStats, peerexchange.ClientStats) {
	var s peerexchange.ServerStats
	var c peerexchange.ClientStats
	if n.pxServer != nil {
		s = n.pxServer.Stats()
	}
	if n.pxClient != nil {
		c = n.pxClient.Stats()
	}
	return s, c
}

// onMetadataChecked forgets peers that fail the metadata check.
func (n *Node) onMetadataChecked(id peer.ID, err error) {
	if err == nil {
		if info, ok := n.metadata.Peer(id); ok {
			n.keepShards(id, info.Shards)
		}
	}
	if err != nil {
		n.refuseStatic(id, err)
	}
	if err != nil && n.peers != nil {
		n.peers.forget(id, err)
	}
}

// closeDiscovery stops discv5 and peer exchange and releases the record.
func (n *Node) closeDiscovery() {
	if n.pxServer != nil {
		n.pxServer.Close()
	}
	if n.discv5 != nil {
		n.discv5.Close()
	}
	if n.record != nil {
		n.record.Close()
	}
}

// PeerStats returns a copy of the peer manager's counters.
func (n *Node) PeerStats() PeerStats { return n.peers.snapshot() }

// peerOrigin returns how the node learned of id, as /admin/v1/peers shows.
func (n *Node) peerOrigin(id peer.ID) state.Origin {
	if n.isStatic(id) {
		return state.Static
	}
	if n.peers != nil {
		if o, ok := n.peers.origin(id); ok {
			return o
		}
	}
	return state.UnknownOrigin
}

// startRecord signs the node's ENR and logs it.
func (n *Node) startRecord(ek *ecdsa.PrivateKey, udpPort int) error {
	rc, err := n.recordConfig(udpPort)
	if err != nil {
		return err
	}
	rc.AutoUpdate = n.cfg.Discovery.Discv5ENRAutoUpdate
	rec, err := discovery.NewLocalRecord(ek, rc)
	if err != nil {
		return fmt.Errorf("node: ENR: %w", err)
	}
	n.record = rec
	if len(rec.Dropped) > 0 {
		n.cfg.Logger.Warn("addresses left out of the ENR to keep it within 300 bytes", "dropped", fmt.Sprint(rec.Dropped))
	}
	n.cfg.Logger.Info("node record", "enrUri", rec.Text(), "ip", rc.IP, "tcp", rc.TCPPort, "udp", udpPort,
		"waku2", rc.Caps.String(), "multiaddrs", fmt.Sprint(rc.Multiaddrs))
	return nil
}

// ENR returns the node's current record in its text form, "enr:...", or ""
// before Start.
func (n *Node) ENR() string {
	if n.record == nil {
		return ""
	}
	return n.record.Text()
}
