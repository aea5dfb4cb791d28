package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/p2p/dnsdisc"
)

// DefaultNameServers returns nwaku's --dns-addrs-name-server defaults, in a
// new slice.
func DefaultNameServers() []string { return []string{"1.1.1.1", "1.0.0.1"} }

// ErrDNS is wrapped by every error of ResolveTree.
var ErrDNS = errors.New("discovery: DNS discovery failed")

// DNSConfig configures ResolveTree.
type DNSConfig struct {
	// NameServers are the servers asked, in turn until one answers: an IP
	// address (port 53, as nwaku's --dns-addrs-name-server takes it) or
	// IP:port (courier's extension, for tests and local resolvers). Empty
	// means DefaultNameServers.
	NameServers []string
	// Timeout bounds each DNS lookup. Default 5 s.
	Timeout time.Duration
	// Logger receives the logs; go-ethereum's at debug level. Nil means
	// slog.Default().
	Logger *slog.Logger
}

// ResolveTree fetches the EIP-1459 tree at url
// ("enrtree://<base32 key>@<domain>") with go-ethereum's p2p/dnsdisc, which
// checks the root's signature against the key and every entry's hash, and
// returns the records whose Waku fields decode, plus how many did not. A
// tree that does not verify or cannot be fetched is an error wrapping
// ErrDNS.
func ResolveTree(url string, cfg DNSConfig) (peers []Peer, malformed int, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	servers := cfg.NameServers
	if len(servers) == 0 {
		servers = DefaultNameServers()
	}
	var errs []error
	for _, ns := range servers {
		addr, err := nameServerAddr(ns)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %w", ErrDNS, err)
		}
		client := dnsdisc.NewClient(dnsdisc.Config{
			Timeout:   cfg.Timeout,
			RateLimit: 50,
			Resolver:  resolverAt(addr),
			Logger:    log.NewLogger(debugOnly{cfg.Logger.Handler()}),
		})
		tree, err := client.SyncTree(url)
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: %w", addr, err))
			continue
		}
		for _, n := range tree.Nodes() {
			p, err := DecodePeer(n)
			if err != nil {
				malformed++
				cfg.Logger.Info("DNS discovery: record rejected", "id", n.ID().TerminalString(), "err", err)
				continue
			}
			peers = append(peers, p)
		}
		return peers, malformed, nil
	}
	return nil, 0, fmt.Errorf("%w: %s: %w", ErrDNS, url, errors.Join(errs...))
}

// ResolveIPv4 returns the first IPv4 address of domain, asking
// cfg.NameServers in turn until one answers, as nwaku resolves
// --dns4-domain-name with its --dns-addrs-name-server servers
// (waku/factory/internal_config.nim dnsResolve). nwaku takes the first
// answer of either family; the name is announced as /dns4, so here it is
// the first A record. A name without one, or no answer, is an error
// wrapping ErrDNS.
func ResolveIPv4(domain string, cfg DNSConfig) (net.IP, error) {
	servers := cfg.NameServers
	if len(servers) == 0 {
		servers = DefaultNameServers()
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	var errs []error
	for _, ns := range servers {
		addr, err := nameServerAddr(ns)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDNS, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		ips, err := resolverAt(addr).LookupIP(ctx, "ip4", domain)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: %w", addr, err))
			continue
		}
		if len(ips) == 0 {
			errs = append(errs, fmt.Errorf("name server %s: no IPv4 address", addr))
			continue
		}
		return ips[0], nil
	}
	return nil, fmt.Errorf("%w: %s: %w", ErrDNS, domain, errors.Join(errs...))
}

// nameServerAddr returns ns as host:port, port 53 when ns is a bare IP.
func nameServerAddr(ns string) (string, error) {
	if ip := net.ParseIP(ns); ip != nil {
		return net.JoinHostPort(ip.String(), "53"), nil
	}
	host, _, err := net.SplitHostPort(ns)
	if err != nil || net.ParseIP(host) == nil {
		return "", fmt.Errorf("name server %q: want an IP address or IP:port", ns)
	}
	return ns, nil
}

// resolverAt returns a resolver that sends every query to addr.
func resolverAt(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}
