package peers

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/host"
	ma "github.com/multiformats/go-multiaddr"
)

// Announce decides the addresses a node announces (Announced) and its
// ENR's (the node's NetConfig in nwaku, waku/node/net_config.nim).
type Announce struct {
	// ListenAddress is the address the host listens on, 0.0.0.0 or ::
	// meaning every interface of its family.
	ListenAddress net.IP
	// ExtAddrs are --ext-multiaddr's; with ExtOnly only they are
	// announced (--ext-multiaddr-only).
	ExtAddrs []ma.Multiaddr
	ExtOnly  bool
	// ExtIP is --nat=extip:'s address, nil without it.
	ExtIP net.IP
	// DNS4DomainName is --dns4-domain-name, "" without it.
	DNS4DomainName string
	// WebSocketSecure announces the WebSocket listener as /wss.
	WebSocketSecure bool
}

// Announced returns the addresses /debug/v1/info lists, each with
// /p2p/<id>, as nwaku's NetConfig announces them (waku/node/net_config.nim
// init, listed by waku/node/waku_node.nim info): h's TCP address, then its
// WebSocket one, then every ExtAddrs; with ExtOnly only the latter. The
// host part of the first two is /dns4/<DNS4DomainName>, else the ExtIP,
// else the listen address, where 0.0.0.0 (or ::) is given once with the
// address of the interface that routes outward (ListenIP), not once per
// interface. As in nwaku, the WebSocket listen address is left out when an
// ExtAddrs is a WebSocket one and neither a domain name nor an ExtIP is
// set.
func (an Announce) Announced(h host.Host) []string {
	var out []string
	if !an.ExtOnly {
		hostPart, external := an.hostPart()
		// The host lists its listen addresses in no fixed order; nwaku
		// announces the TCP one first, then the WebSocket one.
		listen := slices.Clone(h.Network().ListenAddresses())
		slices.SortStableFunc(listen, func(a, b ma.Multiaddr) int { return cmp.Compare(btoi(IsWS(a)), btoi(IsWS(b))) })
		for _, a := range listen {
			first, rest := ma.SplitFirst(a)
			if first == nil || (first.Protocol().Code != ma.P_IP4 && first.Protocol().Code != ma.P_IP6) {
				continue // /p2p-circuit and the like: nothing to dial directly
			}
			if IsWS(a) && !external && slices.ContainsFunc(an.ExtAddrs, IsWS) {
				continue
			}
			hp := hostPart
			if hp == "" {
				hp = IPMultiaddr(net.ParseIP(first.Value()))
				if net.ParseIP(first.Value()).IsUnspecified() {
					hp = IPMultiaddr(ListenIP(an.ListenAddress))
				}
			}
			out = append(out, NwakuForm(hp+rest.String()))
		}
	}
	for _, a := range an.ExtAddrs {
		out = append(out, a.String())
	}
	for i, s := range out {
		if !strings.Contains(s, "/p2p/") {
			out[i] = s + "/p2p/" + h.ID().String()
		}
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostPart returns the host part that replaces the listen address in
// announced addresses: /dns4/<DNS4DomainName>, else /ip4/<ExtIP>, else ""
// (the listen address itself); external says which of the first two
// applies.
func (an Announce) hostPart() (host string, external bool) {
	if an.DNS4DomainName != "" {
		return "/dns4/" + an.DNS4DomainName, true
	}
	if an.ExtIP != nil {
		return IPMultiaddr(an.ExtIP), true
	}
	return "", false
}

// IPMultiaddr returns ip as the first part of a multiaddr: /ip4/<ip> or,
// for an IPv6 address, /ip6/<ip>, as nim-libp2p's MultiAddress.init of
// an IpAddress gives nwaku's listen address (waku/node/net_config.nim).
func IPMultiaddr(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return "/ip4/" + ip4.String()
	}
	return "/ip6/" + ip.String()
}

// IPNetwork returns network ("tcp" or "udp") with the family of the IP
// address ip: "tcp4" for an IPv4 address (IPv4-mapped IPv6 included),
// "tcp6" for an IPv6 one, network itself for what is not an address.
func IPNetwork(network, ip string) string {
	a := net.ParseIP(ip)
	switch {
	case a == nil:
		return network
	case a.To4() != nil:
		return network + "4"
	default:
		return network + "6"
	}
}

// ListenIP returns the listen address when it is specific, else the
// address of the interface that routes outward, else the first
// non-loopback interface address, else the loopback address; of the
// listen address's family, as the host listens on that family only.
func ListenIP(listen net.IP) net.IP {
	if listen != nil && !listen.IsUnspecified() {
		return listen
	}
	v6 := listen != nil && listen.To4() == nil
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

// BoundPorts returns the TCP ports h listens on for plain TCP and for
// WebSocket (0 when it does not).
func BoundPorts(h host.Host) (tcpPort, wsPort int) {
	for _, a := range h.Network().ListenAddresses() {
		p, err := a.ValueForProtocol(ma.P_TCP)
		if err != nil {
			continue
		}
		var port int
		fmt.Sscan(p, &port)
		switch {
		case IsWS(a):
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

// IsWS reports whether a has a /ws or /wss part.
func IsWS(a ma.Multiaddr) bool {
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

// addrKey is a multiaddr as text without /p2p/<id>, in NwakuForm.
func addrKey(s string) string {
	s, _, _ = strings.Cut(NwakuForm(s), "/p2p/")
	return s
}

// NwakuForm writes the multiaddr addr's secure WebSocket /wss, as nwaku
// writes it, where go-libp2p writes the equivalent /tls/ws.
func NwakuForm(addr string) string { return strings.Replace(addr, "/tls/ws", "/wss", 1) }

// ListenAddresses returns h's listen addresses with /p2p/<id>, in
// NwakuForm.
func ListenAddresses(h host.Host) []string {
	var out []string
	for _, a := range h.Addrs() {
		out = append(out, NwakuForm(a.String())+"/p2p/"+h.ID().String())
	}
	return out
}
