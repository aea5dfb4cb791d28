package node

import (
	"fmt"
	"net"

	"github.com/libp2p/go-libp2p/core/host"
	ma "github.com/multiformats/go-multiaddr"
)

// listenAddr is one address the node is configured to listen on and the
// flag that sets its port.
type listenAddr struct {
	flag string
	addr ma.Multiaddr
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

// checkListening returns an error naming the flag of the first configured
// address h does not listen on. go-libp2p starts when any of its listen
// addresses works, so a WebSocket port in use would otherwise leave the
// node without WebSocket, silently. A configured port 0 matches any port
// of its transport. The error wraps the reason a listen on that address
// fails now (typically "address already in use").
func checkListening(h host.Host, want []listenAddr) error {
	got := h.Network().ListenAddresses()
	for _, w := range want {
		port, _ := w.addr.ValueForProtocol(ma.P_TCP)
		if listening(got, listenKind(w.addr), port) {
			continue
		}
		reason := fmt.Errorf("the %s transport did not start", listenKind(w.addr))
		ip, err := w.addr.ValueForProtocol(ma.P_IP4)
		if err != nil {
			ip, err = w.addr.ValueForProtocol(ma.P_IP6)
		}
		if err == nil {
			reason = probeListen(ip, port, reason)
		}
		return fmt.Errorf("node: %s %s: cannot listen on %s: %w", w.flag, port, w.addr, reason)
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

// configuredListen returns the addresses the node listens on (host is
// its /ip4 or /ip6 part), with the flag of each port.
func (c *Config) configuredListen(host string) ([]listenAddr, error) {
	specs := []listenAddr{{flag: "--tcp-port"}}
	strs := []string{fmt.Sprintf("%s/tcp/%d", host, c.TCPPort)}
	if c.WebSocket {
		scheme := "ws"
		if c.WebSocketSecure {
			scheme = "wss"
		}
		specs = append(specs, listenAddr{flag: "--websocket-port"})
		strs = append(strs, fmt.Sprintf("%s/tcp/%d/%s", host, c.WebSocketPort, scheme))
	}
	for i, s := range strs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%w: listen address %s: %w", ErrConfig, s, err)
		}
		specs[i].addr = a
	}
	return specs, nil
}

func listenAddrs(l []listenAddr) []ma.Multiaddr {
	out := make([]ma.Multiaddr, len(l))
	for i, a := range l {
		out[i] = a.addr
	}
	return out
}
