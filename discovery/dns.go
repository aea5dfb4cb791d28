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
