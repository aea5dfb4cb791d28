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
// ErrDNS. ctx bounds the whole fetch, each lookup being bounded by
// cfg.Timeout too: once ctx ends, the lookup in flight is abandoned at once
// and the error wraps both ErrDNS and ctx.Err().
func ResolveTree(ctx context.Context, url string, cfg DNSConfig) (peers []Peer, malformed int, err error) {
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
		if ctx.Err() != nil {
			break
		}
		client := dnsdisc.NewClient(dnsdisc.Config{
			Timeout:   cfg.Timeout,
			RateLimit: 50,
			Resolver:  boundResolver{ctx, resolverAt(addr)},
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
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrDNS, url, err)
	}
	return nil, 0, fmt.Errorf("%w: %s: %w", ErrDNS, url, errors.Join(errs...))
}

// boundResolver bounds every lookup by ctx as well as by the context it is
// given: go-ethereum's dnsdisc gives SyncTree's lookups contexts of its own
// (a timeout under context.Background), so this is how the end of
// ResolveTree's ctx reaches them.
type boundResolver struct {
	ctx context.Context
	r   *net.Resolver
}

func (b boundResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.ctx, cancel)()
	return b.r.LookupTXT(ctx, name)
}

// ResolveIPv4 returns the first IPv4 address of domain, asking
// cfg.NameServers in turn until one answers, as nwaku resolves
// --dns4-domain-name with its --dns-addrs-name-server servers
// (waku/factory/internal_config.nim dnsResolve). nwaku takes the first
// answer of either family; the name is announced as /dns4, so here it is
// the first A record. A name without one, or no answer, is an error
// wrapping ErrDNS. ctx bounds the whole resolution, each lookup being
// bounded by cfg.Timeout too; once ctx ends the error wraps both ErrDNS
// and ctx.Err().
func ResolveIPv4(ctx context.Context, domain string, cfg DNSConfig) (net.IP, error) {
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
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrDNS, domain, err)
		}
		lctx, cancel := context.WithTimeout(ctx, timeout)
		ips, err := resolverAt(addr).LookupIP(lctx, "ip4", domain)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrDNS, domain, err)
		}
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

// resolverAt returns a resolver that sends every query to addr. Each
// query's connection is closed when the query's context ends: Go's
// resolver only sets the context's deadline on the connection, so without
// this a cancelled lookup would wait out its read.
func resolverAt(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			context.AfterFunc(ctx, func() { c.Close() })
			return c, nil
		},
	}
}
