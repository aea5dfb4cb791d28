package peers

import (
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/host"
	ma "github.com/multiformats/go-multiaddr"
)

// ListenAddr is one address the node is configured to listen on and the
// flag that sets its port.
type ListenAddr struct {
	Flag string
	Addr ma.Multiaddr
}

// listenKind is the transport of a listen address, "tcp", "ws" or "wss"
// (go-libp2p lists a /wss listener as /tls/ws).
func listenKind(a ma.Multiaddr) string {
	var ws, tls bool
	for _, c := range a {
		switch c.Protocol().Code {
		case ma.P_WSS:
			return "wss"
		case ma.P_WS:
			ws = true
		case ma.P_TLS:
			tls = true
		}
	}
	switch {
	case ws && tls:
		return "wss"
	case ws:
		return "ws"
	}
	return "tcp"
}

// CheckListening returns an error naming the flag of the first configured
// address h does not listen on. go-libp2p starts when any of its listen
// addresses works, so a WebSocket port in use would otherwise leave the
// node without WebSocket, silently. A configured port 0 matches any port
// of its transport. The error wraps the reason a listen on that address
// fails now (typically "address already in use").
func CheckListening(h host.Host, want []ListenAddr) error {
	got := h.Network().ListenAddresses()
	for _, w := range want {
		port, _ := w.Addr.ValueForProtocol(ma.P_TCP)
		if listening(got, listenKind(w.Addr), port) {
			continue
		}
		reason := fmt.Errorf("the %s transport did not start", listenKind(w.Addr))
		ip, err := w.Addr.ValueForProtocol(ma.P_IP4)
		if err != nil {
			ip, err = w.Addr.ValueForProtocol(ma.P_IP6)
		}
		if err == nil {
			reason = probeListen(ip, port, reason)
		}
		return fmt.Errorf("node: %s %s: cannot listen on %s: %w", w.Flag, port, w.Addr, reason)
	}
	return nil
}

func listening(got []ma.Multiaddr, kind, port string) bool {
	for _, g := range got {
		p, err := g.ValueForProtocol(ma.P_TCP)
		if err == nil && listenKind(g) == kind && (port == "0" || p == port) {
			return true
		}
	}
	return false
}

// probeListen returns the error of listening on ip:port now, or fallback
// when that works.
func probeListen(ip, port string, fallback error) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, port))
	if err != nil {
		return err
	}
	l.Close()
	return fallback
}

// Listen returns the addresses a node listens on: TCP on tcpPort and,
// with ws, WebSocket (/wss with wss) on wsPort, each with the flag of its
// port; host is their /ip4 or /ip6 part (IPMultiaddr).
func Listen(host string, tcpPort int, ws, wss bool, wsPort int) ([]ListenAddr, error) {
	specs := []ListenAddr{{Flag: "--tcp-port"}}
	strs := []string{fmt.Sprintf("%s/tcp/%d", host, tcpPort)}
	if ws {
		scheme := "ws"
		if wss {
			scheme = "wss"
		}
		specs = append(specs, ListenAddr{Flag: "--websocket-port"})
		strs = append(strs, fmt.Sprintf("%s/tcp/%d/%s", host, wsPort, scheme))
	}
	for i, s := range strs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("listen address %s: %w", s, err)
		}
		specs[i].Addr = a
	}
	return specs, nil
}

// Multiaddrs returns the addresses of l.
func Multiaddrs(l []ListenAddr) []ma.Multiaddr {
	out := make([]ma.Multiaddr, len(l))
	for i, a := range l {
		out[i] = a.Addr
	}
	return out
}
