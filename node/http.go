package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Version is the node's version string, served at /debug/v1/version and
// sent as the libp2p user agent.
const Version = "courier v0.1.0"

// startHTTP starts the REST API and the metrics server as configured. The
// listeners are bound before it returns, so a port in use is an error here.
func (n *Node) startHTTP() error {
	if srv := n.rest; srv != nil {
		if n.relay != nil {
			var cts, shards []string
			if n.cfg.auto != nil {
				for _, ct := range n.cfg.ContentTopics {
					if t, err := n.cfg.auto.PubsubTopic(ct); err == nil {
						cts, shards = append(cts, ct), append(shards, t)
					}
				}
			}
			srv.CacheTopics(n.cfg.pubsubTopics(), cts, shards)
			n.removeREST = n.relay.AddHandler("rest-cache", srv.Deliver)
		}
		if err := n.serve("REST API", n.cfg.RESTAddress, n.cfg.RESTPort, srv); err != nil {
			return err
		}
	}
	if n.cfg.MetricsServer {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(n.Registry(), promhttp.HandlerOpts{}))
		if err := n.serve("metrics", n.cfg.MetricsAddress, n.cfg.MetricsPort, mux); err != nil {
			return err
		}
	}
	return nil
}

// serve binds addr:port in addr's family only, as nwaku binds the IpAddress
// it is given: 0.0.0.0 is every IPv4 address, not IPv6's as well.
func (n *Node) serve(what, addr string, port int, h http.Handler) error {
	ln, err := net.Listen(ipNetwork("tcp", addr), net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("node: %s: %w", what, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	n.servers = append(n.servers, srv)
	n.httpAddrs = append(n.httpAddrs, ln.Addr().String())
	n.cfg.Logger.Info("serving "+what, "addr", ln.Addr().String())
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error(what+" stopped", "err", err)
		}
	}()
	return nil
}

// ipNetwork returns network ("tcp" or "udp") with the family of the IP
// address ip: "tcp4" for an IPv4 address (IPv4-mapped IPv6 included),
// "tcp6" for an IPv6 one, network itself for what is not an address.
func ipNetwork(network, ip string) string {
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

// stopHTTP shuts the servers down, letting requests in progress finish
// until ctx ends.
func (n *Node) stopHTTP(ctx context.Context) error {
	var errs []error
	for _, s := range n.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	if n.removeREST != nil {
		n.removeREST()
	}
	return errors.Join(errs...)
}

// HTTPAddrs returns the bound addresses of the REST and metrics servers, in
// that order, for the ones that run.
func (n *Node) HTTPAddrs() []string { return n.httpAddrs }

// announcedAddresses are the addresses /debug/v1/info lists, each with
// /p2p/<id>, as nwaku's NetConfig announces them (waku/node/net_config.nim
// init, listed by waku/node/waku_node.nim info): the node's TCP address,
// then its WebSocket one, then every --ext-multiaddr; with
// --ext-multiaddr-only only the latter. The host part of the first two is
// /dns4/<--dns4-domain-name>, else the --nat=extip: address, else the
// listen address, where 0.0.0.0 (or ::) is given once with the address of
// the interface that routes outward (listenIP), not once per interface. As in
// nwaku, the WebSocket listen address is left out when an --ext-multiaddr
// is a WebSocket one and neither a domain name nor an extip is set.
func (n *Node) announcedAddresses() []string {
	dc := n.cfg.Discovery
	ext := n.cfg.extAddrs
	var out []string
	if !dc.ExtMultiaddrOnly {
		host, external := n.announcedHost()
		// The host lists its listen addresses in no fixed order; nwaku
		// announces the TCP one first, then the WebSocket one.
		listen := slices.Clone(n.host.Network().ListenAddresses())
		slices.SortStableFunc(listen, func(a, b ma.Multiaddr) int { return cmp.Compare(btoi(isWS(a)), btoi(isWS(b))) })
		for _, a := range listen {
			first, rest := ma.SplitFirst(a)
			if first == nil || (first.Protocol().Code != ma.P_IP4 && first.Protocol().Code != ma.P_IP6) {
				continue // /p2p-circuit and the like: nothing to dial directly
			}
			if isWS(a) && !external && slices.ContainsFunc(ext, isWS) {
				continue
			}
			h := host
			if h == "" {
				h = ipMultiaddr(net.ParseIP(first.Value()))
				if net.ParseIP(first.Value()).IsUnspecified() {
					h = ipMultiaddr(n.listenIP())
				}
			}
			out = append(out, strings.Replace(h+rest.String(), "/tls/ws", "/wss", 1))
		}
	}
	for _, a := range ext {
		out = append(out, a.String())
	}
	for i, s := range out {
		if !strings.Contains(s, "/p2p/") {
			out[i] = s + "/p2p/" + n.host.ID().String()
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

// announcedHost returns the host part that replaces the listen address in
// announced addresses: /dns4/<--dns4-domain-name>, else /ip4/<extip> of
// --nat=extip:, else "" (the listen address itself); external says which
// of the first two applies.
func (n *Node) announcedHost() (host string, external bool) {
	dc := n.cfg.Discovery
	if dc.DNS4DomainName != "" {
		return "/dns4/" + dc.DNS4DomainName, true
	}
	if ip := n.cfg.extIP; ip != nil {
		return ipMultiaddr(ip), true
	}
	return "", false
}
