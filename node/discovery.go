package node

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"

	"github.com/couriernet/courier/discovery"
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
	// "extip:<IPv4>" (that address), or "any" (go-libp2p's port mapping).
	NAT string
	// DNS4DomainName is a domain name resolving to the node's public IPv4
	// address (--dns4-domain-name); it is announced as /dns4/<name>/tcp/...
	DNS4DomainName string
}

// natNone is courier's default --nat: no probes leave the machine.
const natNone = "none"

func (c *DiscoveryConfig) setDefaults() {
	if c.NAT == "" {
		c.NAT = natNone
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
	return nil
}

// extIP returns the address of --nat=extip:<IPv4>, or nil.
func (c *DiscoveryConfig) extIP() (net.IP, error) {
	switch {
	case c.NAT == natNone || c.NAT == "any":
		return nil, nil
	case strings.HasPrefix(c.NAT, "extip:"):
		ip := net.ParseIP(strings.TrimPrefix(c.NAT, "extip:"))
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("%w: --nat %q: want extip:<IPv4 address>", ErrConfig, c.NAT)
		}
		return ip, nil
	}
	return nil, fmt.Errorf("%w: --nat %q: want none, any or extip:<IPv4 address>", ErrConfig, c.NAT)
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

// recordConfig chooses what the node's ENR says, as nwaku's NetConfig
// (waku/node/net_config.nim) does: the IP is the --nat=extip: one, else an
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
// non-loopback interface address, else 127.0.0.1.
func (n *Node) listenIP() net.IP {
	ip := net.ParseIP(n.cfg.ListenAddress)
	if ip != nil && !ip.IsUnspecified() {
		return ip
	}
	// A UDP "connection" only picks the route; nothing is sent.
	if c, err := net.Dial("udp4", "192.0.2.1:9"); err == nil {
		defer c.Close()
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() {
			return a.IP
		}
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if in, ok := a.(*net.IPNet); ok && in.IP.To4() != nil && !in.IP.IsLoopback() {
			return in.IP
		}
	}
	return net.IPv4(127, 0, 0, 1)
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

// startRecord signs the node's ENR and logs it.
func (n *Node) startRecord(key crypto.PrivKey, udpPort int) error {
	ek, err := discovery.ECDSAKey(key)
	if err != nil {
		return fmt.Errorf("node: ENR: %w", err)
	}
	rc, err := n.recordConfig(udpPort)
	if err != nil {
		return err
	}
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
