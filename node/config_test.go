package node

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/internal/ratelimit"
)

// TestZeroConfigStarts: every zero field is its documented default, so a
// Config with nothing but the services asked for starts, REST and metrics
// on a free port of 127.0.0.1.
func TestZeroConfigStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"zero", Config{}},
		{"REST without listening", Config{REST: true, NoListen: true}},
		{"REST and metrics", Config{REST: true, MetricsServer: true, Relay: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Logger = slog.New(slog.DiscardHandler)
			n, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { n.Stop(t.Context()) })
			if err := n.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			for _, a := range n.HTTPAddrs() {
				if host, port, _ := net.SplitHostPort(a); host != "127.0.0.1" || port == "0" {
					t.Errorf("HTTP server on %s, want 127.0.0.1 and a port", a)
				}
			}
			want := 0
			for _, on := range []bool{tc.cfg.REST, tc.cfg.MetricsServer} {
				if on {
					want++
				}
			}
			if len(n.HTTPAddrs()) != want {
				t.Errorf("HTTP servers %q, want %d", n.HTTPAddrs(), want)
			}
		})
	}
}

// TestDefaultConfigIsNwakus checks DefaultConfig against nwaku v0.38.1's
// defaults (tools/confutils/cli_args.nim), with courier's own where nwaku's
// name nwaku or probe the network (agent string, --nat), and that it
// resolves to itself: New fills no field of it differently.
func TestDefaultConfigIsNwakus(t *testing.T) {
	c := DefaultConfig()
	d := c.Discovery
	for _, f := range []struct {
		flag      string
		got, want any
	}{
		{"--listen-address", c.ListenAddress, "0.0.0.0"},
		{"--tcp-port", c.TCPPort, 60000},
		{"--websocket-support", c.WebSocket, false},
		{"--websocket-port", c.WebSocketPort, 8000},
		{"--cluster-id", c.ClusterID, uint16(0)},
		{"--num-shards-in-network", c.NumShardsInNetwork, 0},
		{"--relay", c.Relay, true},
		{"--store", c.Store, false},
		{"--store-sync", c.StoreSync, false},
		{"--store-resume", c.StoreResume, false},
		{"--filter", c.Filter, false},
		{"--lightpush", c.Lightpush, false},
		{"--max-connections", c.MaxConnections, 150},
		{"--agent-string", c.AgentString, Version},
		{"--rest", c.REST, false},
		{"--rest-address", c.RESTAddress, "127.0.0.1"},
		{"--rest-port", c.RESTPort, 8645},
		{"--rest-admin", c.RESTAdmin, false},
		{"--metrics-server", c.MetricsServer, false},
		{"--metrics-server-address", c.MetricsAddress, "127.0.0.1"},
		{"--metrics-server-port", c.MetricsPort, 8008},
		{"--metrics-logging", c.MetricsLogging, true},
		{"--store-message-retention-policy", c.ArchiveConfig.Retention, "time:172800"},
		{"--nat", d.NAT, "none"},
		{"--discv5-discovery", d.Discv5, false},
		{"--discv5-udp-port", d.Discv5UDPPort, 9000},
		{"--discv5-table-ip-limit", d.Discv5TableIPLimit, 10},
		{"--discv5-bucket-ip-limit", d.Discv5BucketIPLimit, 2},
		{"--discv5-bits-per-hop", d.Discv5BitsPerHop, 1},
		{"--relay-service-ratio", d.RelayServiceRatio, "50:50"},
		{"--ip-colocation-limit", d.IPColocationLimit, 5},
		{"--peer-store-capacity", d.PeerStoreCapacity, 1000},
		{"--peer-exchange", d.PeerExchange, true},
		{"--dns-discovery", d.DNSDiscovery, false},
	} {
		if f.got != f.want {
			t.Errorf("%s: %v, want %v", f.flag, f.got, f.want)
		}
	}
	p, err := c.resolve()
	if err != nil {
		t.Fatal(err)
	}
	p.Config.Counters, p.Config.Logger = nil, nil // made per node
	p.Config.Shards = nil                         // relayed by default
	if got, want := p.Config, DefaultConfig(); !configEqual(got, want) {
		t.Errorf("resolved default config\n%+v\nwant\n%+v", got, want)
	}
}

// configEqual compares the fields of two configs that hold no functions.
func configEqual(a, b Config) bool {
	return slices.Equal(a.Muxers, b.Muxers) && a.ListenAddress == b.ListenAddress && a.TCPPort == b.TCPPort &&
		a.WebSocketPort == b.WebSocketPort && a.RESTAddress == b.RESTAddress && a.MetricsAddress == b.MetricsAddress &&
		a.MaxConnections == b.MaxConnections && a.AgentString == b.AgentString && a.ArchiveTimestampDrift == b.ArchiveTimestampDrift &&
		a.StaticRedialMin == b.StaticRedialMin && a.StaticRedialMax == b.StaticRedialMax &&
		a.ArchiveConfig.Retention == b.ArchiveConfig.Retention && a.Discovery.NAT == b.Discovery.NAT &&
		a.Discovery.RelayServiceRatio == b.Discovery.RelayServiceRatio && a.Discovery.PeerStoreCapacity == b.Discovery.PeerStoreCapacity &&
		a.Discovery.IPColocationLimit == b.Discovery.IPColocationLimit && a.Discovery.PeerExchangeInterval == b.Discovery.PeerExchangeInterval
}

// TestResolveParsesEverything: what the node parses from its
// configuration is parsed once, by resolve, and kept in the plan; a value
// found wrong only when the node is built (a service node's address, a
// REST origin pattern) fails New with ErrConfig, never Start.
func TestResolveParsesEverything(t *testing.T) {
	const id = "16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD"
	const enr = "enr:-QESuED0qW1BCmF-oH_ARGPr97Nv767bl_43uoy70vrbah3EaCAdK3Q0iRQ6wkSTTpdrg_dU_NC2ydO8leSlRpBX4pxiAYJpZIJ2NIJpcIRA4VDAim11bHRpYWRkcnO4XAArNiZub2RlLTAxLmRvLWFtczMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQZ2XwAtNiZub2RlLTAxLmRvLWFtczMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQOTd-h5owwj-cx7xrmbvQKU8CV3Fomfdvcv1MBc-67T5oN0Y3CCdl-DdWRwgiMohXdha3UyDw" // The Waku Network's first bootstrap node (nwaku networks_config.nim)
	p, err := Config{
		StaticNodes: []string{"/ip4/127.0.0.1/tcp/1/p2p/" + id}, StoreNode: "/ip4/127.0.0.1/tcp/2/p2p/" + id,
		FilterNode: "/ip4/127.0.0.1/tcp/3/p2p/" + id, RateLimit: []string{"store:10/1s", "px:5/1m"},
		Discovery: DiscoveryConfig{PeerExchangeNode: "/ip4/127.0.0.1/tcp/4/p2p/" + id, Discv5BootstrapNodes: []string{enr},
			ExtMultiaddrs: []string{"/dns4/node.example.org/tcp/443/wss"}, NAT: "extip:203.0.113.7", RelayServiceRatio: "60:40"},
	}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(p.peers.Static) != 1 || p.peers.Static[0].ID.String() != id:
		t.Errorf("static %v", p.peers.Static)
	case p.storeNode == nil || p.storeNode.Addrs[0].String() != "/ip4/127.0.0.1/tcp/2" || p.filterNode == nil || p.lightpushNode != nil:
		t.Errorf("service nodes %v %v %v", p.storeNode, p.filterNode, p.lightpushNode)
	case p.limits.Get(ratelimit.StoreV3) != (ratelimit.Setting{Volume: 10, Period: time.Second}):
		t.Errorf("store limit %v", p.limits.Get(ratelimit.StoreV3))
	case p.limits.Get(ratelimit.PeerExchange) != (ratelimit.Setting{Volume: 5, Period: time.Minute}):
		t.Errorf("peer exchange limit %v", p.limits.Get(ratelimit.PeerExchange))
	case p.peers.PeerExchangeNode == nil || p.peers.PeerExchangeNode.Addrs[0].String() != "/ip4/127.0.0.1/tcp/4":
		t.Errorf("peer exchange node %v", p.peers.PeerExchangeNode)
	case p.peers.PeerExchangeLimit != (ratelimit.Setting{Volume: 5, Period: time.Minute}):
		t.Errorf("peer exchange limit given to the peer manager %v", p.peers.PeerExchangeLimit)
	case len(p.peers.Bootstrap) != 1 || p.peers.Bootstrap[0].String() != enr:
		t.Errorf("bootstrap %v", p.peers.Bootstrap)
	case len(p.peers.Announce.ExtAddrs) != 1 || p.peers.Announce.ExtIP.String() != "203.0.113.7" || p.peers.RelayShare != 0.6:
		t.Errorf("external addresses %v, ip %v, relay share %v", p.peers.Announce.ExtAddrs, p.peers.Announce.ExtIP, p.peers.RelayShare)
	case len(p.listen) != 1 || p.listen[0].Addr.String() != "/ip4/0.0.0.0/tcp/0":
		t.Errorf("listen %v", p.listen)
	case p.archive != (dburl.Location{Dir: "store.sqlite3.segments", Index: "store.sqlite3"}):
		t.Errorf("archive %+v", p.archive)
	}

	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{StoreNode: "/ip4/127.0.0.1/tcp/2"}, "node: invalid config: --storenode \"/ip4/127.0.0.1/tcp/2\" needs /p2p/<peer id>"},
		{Config{LightpushNode: "garbage"}, "node: invalid config: --lightpushnode \"garbage\": "},
		{Config{REST: true, RESTAllowOrigin: []string{"a(b"}}, "node: invalid config: REST API: rest: invalid config: allowed origins"},
		{Config{REST: true, RESTCacheCapacity: -1}, "node: invalid config: --rest-relay-cache-capacity -1 is out of range: want 0..4294967295"},
		{Config{Discovery: DiscoveryConfig{DNS4DomainName: "a/b"}}, "node: invalid config: --dns4-domain-name \"a/b\" is not a domain name"},
		{Config{Store: true, DBURL: "mysql://u:p@h:1/db"}, "node: invalid config: --store-message-db-url: archive: invalid config: database URL \"mysql://u:xxxxx@h:1/db\""},
	} {
		tc.cfg.ListenAddress, tc.cfg.Logger = "127.0.0.1", slog.New(slog.DiscardHandler)
		n, err := New(tc.cfg)
		if err == nil {
			n.Stop(t.Context())
			t.Errorf("%+v: New accepted it", tc.cfg)
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("New: %q, want ErrConfig starting %q", err, tc.want)
		}
	}
	if _, err := (Config{Store: true, ArchiveConfig: dburl.Config{Config: archive.Config{Retention: "days:2"}}}).resolve(); !errors.Is(err, ErrConfig) {
		t.Errorf("retention: %v", err)
	}
}

// TestConfigRangesRefused: a field outside the range of the flag it
// stands for (nwaku's type, or the node's own rule) is refused by New with
// the command line's words for a value out of range, so that no count or
// time overflows and library users get the flags' bounds; the ends of each
// range are taken.
func TestConfigRangesRefused(t *testing.T) {
	const big = 1 << 62
	for _, tc := range []struct {
		edit func(c *Config, v int)
		flag string
		lo   int
		hi   int
		unit string
	}{
		{func(c *Config, v int) { c.TCPPort = v }, "tcp-port", 0, MaxPort, ""},
		{func(c *Config, v int) { c.WebSocketPort = v }, "websocket-port", 0, MaxPort, ""},
		{func(c *Config, v int) { c.RESTPort = v }, "rest-port", 0, MaxPort, ""},
		{func(c *Config, v int) { c.MetricsPort = v }, "metrics-server-port", 0, MaxPort, ""},
		{func(c *Config, v int) { c.Discovery.Discv5UDPPort = v }, "discv5-udp-port", 0, MaxPort, ""},
		{func(c *Config, v int) { c.NumShardsInNetwork, c.Shards = v, []uint16{0} }, "num-shards-in-network", 0, MaxShardsInNetwork, ""},
		{func(c *Config, v int) { c.MaxConnections = v }, "max-connections", 0, math.MaxInt, ""},
		{func(c *Config, v int) { c.FilterMaxPeersToServe = v }, "filter-max-peers-to-serve", 0, MaxCount, ""},
		{func(c *Config, v int) { c.FilterMaxCriteria = v }, "filter-max-criteria", 0, MaxCount, ""},
		{func(c *Config, v int) { c.RESTCacheCapacity = v }, "rest-relay-cache-capacity", 0, MaxCount, ""},
		{func(c *Config, v int) { c.ArchiveConfig.Postgres.MaxConns = v }, "store-max-num-db-connections", 0, MaxPostgresConns, ""},
		{func(c *Config, v int) { c.Discovery.PeerStoreCapacity = v }, "peer-store-capacity", 0, math.MaxInt, ""},
		{func(c *Config, v int) { c.StoreSyncRange = time.Duration(v) * time.Second }, "store-sync-range", 0, MaxStoreSyncSeconds, "seconds"},
		{func(c *Config, v int) { c.FilterSubscriptionTimeout = time.Duration(v) * time.Second }, "filter-subscription-timeout", 0, MaxFilterSubscriptionSeconds, "seconds"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			want := fmt.Sprintf("want %d..%d", tc.lo, tc.hi)
			if tc.unit != "" {
				want += " " + tc.unit
			}
			for _, v := range []int{tc.lo, tc.hi} {
				c := Config{ListenAddress: "127.0.0.1"}
				tc.edit(&c, v)
				if _, err := c.resolve(); err != nil {
					t.Errorf("%d: %v", v, err)
				}
			}
			bad := []int{tc.lo - 1, tc.hi + 1}
			if tc.unit == "" {
				bad = []int{tc.lo - 1, -big}
				if tc.hi < math.MaxInt {
					bad = append(bad, tc.hi+1, big)
				}
			}
			for _, v := range bad {
				c := Config{ListenAddress: "127.0.0.1"}
				tc.edit(&c, v)
				_, err := c.resolve()
				shown := fmt.Sprint(v)
				if tc.unit == "seconds" {
					shown = fmt.Sprint(time.Duration(v) * time.Second)
				}
				msg := fmt.Sprintf("node: invalid config: --%s %s is out of range: %s", tc.flag, shown, want)
				if !errors.Is(err, ErrConfig) || err.Error() != msg {
					t.Errorf("%d: %v, want %q", v, err, msg)
				}
			}
		})
	}
	// The longest durations, as the overflowing seconds of a flag would
	// have made them.
	for _, d := range []time.Duration{math.MinInt64, math.MaxInt64} {
		c := Config{ListenAddress: "127.0.0.1", StoreSyncRange: d}
		msg := fmt.Sprintf("node: invalid config: --store-sync-range %v is out of range: want 0..4294967295 seconds", d)
		if _, err := c.resolve(); err == nil || err.Error() != msg {
			t.Errorf("%v: %v, want %q", d, err, msg)
		}
	}
	// StoreSyncInterval (one round only) and StoreSyncRelayJitter (no
	// jitter) may be negative, not too long.
	for _, f := range []struct {
		flag string
		set  func(c *Config, d time.Duration)
	}{
		{"store-sync-interval", func(c *Config, d time.Duration) { c.StoreSyncInterval = d }},
		{"store-sync-relay-jitter", func(c *Config, d time.Duration) { c.StoreSyncRelayJitter = d }},
	} {
		for d, ok := range map[time.Duration]bool{-1: true, math.MinInt64: true, 0: true, MaxStoreSyncSeconds * time.Second: true,
			MaxStoreSyncSeconds*time.Second + 1: false, math.MaxInt64: false} {
			c := Config{ListenAddress: "127.0.0.1"}
			f.set(&c, d)
			msg := fmt.Sprintf("node: invalid config: --%s %v is out of range: want 0..4294967295 seconds", f.flag, d)
			if _, err := c.resolve(); ok && err != nil || !ok && (err == nil || err.Error() != msg) {
				t.Errorf("--%s %v: %v, want accepted %v", f.flag, d, err, ok)
			}
		}
	}
}

// TestConfigShardCountNamesItsSource: too many shards for the metadata
// protocol is reported with the setting that asked for them.
func TestConfigShardCountNamesItsSource(t *testing.T) {
	many := make([]uint16, 600)
	for i := range many {
		many[i] = uint16(i)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Relay: true, NumShardsInNetwork: 600}, "(--num-shards-in-network 600: without --shard every shard of the network is relayed)"},
		{Config{Relay: true, NumShardsInNetwork: 1024, Shards: many}, "(--shard)"},
		{Config{Relay: true, Shards: many, PubsubTopics: []string{"/waku/2/rs/0/1000"}}, "(--shard; --pubsub-topic)"},
	} {
		tc.cfg.ListenAddress = "127.0.0.1"
		_, err := tc.cfg.resolve()
		if !errors.Is(err, ErrTooManyShards) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%d shards, %d in network, topics %q: %v, want ErrTooManyShards ending %q", len(tc.cfg.Shards), tc.cfg.NumShardsInNetwork, tc.cfg.PubsubTopics, err, tc.want)
		}
	}
}
