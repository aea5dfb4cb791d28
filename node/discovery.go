package node

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/couriernet/courier/node/state"

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
	if n.cfg.extIP != nil || dc.DNS4DomainName == "" {
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
	ext := n.cfg.extAddrs
	extIP := n.cfg.extIP
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
	boot := append(n.dnsDiscovery(), n.cfg.bootstrap...)
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
func (n *Node) runPeerManager(ctx context.Context, static []peer.AddrInfo) {
	for _, pi := range static {
		n.peers.add(discovery.Peer{ID: pi.ID, Addrs: pi.Addrs}, state.Static)
	}
	dc := n.cfg.Discovery
	if dc.PeerExchange {
		n.pxServer = peerexchange.NewServer(n.host, peerexchange.Config{
			Peers:     n.peers.exchangePool,
			RateLimit: n.cfg.limits.Get(ratelimit.PeerExchange),
			Logger:    n.cfg.Logger.With("protocol", "peer-exchange"),
		})
		n.MarkMounted(HealthPeerExchange, peerexchange.ProtocolID)
	}
	n.pxClient = peerexchange.NewClient(n.host, n.cfg.Logger.With("protocol", "peer-exchange"))
	if pi := n.cfg.pxNode; pi != nil {
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
