package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("node: invalid config")

// Config configures a Node. Field names follow nwaku's flags; the zero
// value of a field means its documented default unless it says otherwise.
type Config struct {
	// ListenAddress is the IPv4 or IPv6 address to listen on
	// (--listen-address), as nwaku takes it (an IpAddress in
	// tools/confutils/cli_args.nim; /ip6/ multiaddrs for IPv6). Default
	// "0.0.0.0".
	ListenAddress string
	// TCPPort is the libp2p TCP port (--tcp-port). DefaultConfig sets 60000;
	// 0 picks a free port.
	TCPPort int
	// WebSocket also serves libp2p over WebSocket (/ws) on WebSocketPort
	// (--websocket-support; off by default). js-waku reaches a node only
	// this way.
	WebSocket bool
	// WebSocketPort is the WebSocket port (--websocket-port). DefaultConfig
	// sets 8000, as nwaku; 0 picks a free port. It has no effect without
	// WebSocket or WebSocketSecure.
	WebSocketPort int
	// WebSocketSecure serves secure WebSocket (/wss) on WebSocketPort in
	// place of /ws, with the PEM private key and certificate chain at
	// WebSocketSecureKeyPath and WebSocketSecureCertPath, both required
	// (--websocket-secure-support, --websocket-secure-key-path,
	// --websocket-secure-cert-path). It turns WebSocket on, as nwaku's
	// waku/factory/conf_builder/web_socket_conf_builder.nim does.
	WebSocketSecure         bool
	WebSocketSecureKeyPath  string
	WebSocketSecureCertPath string
	// Muxers are the stream muxers offered, by name ("yamux", "mplex"), in
	// order of preference. Default both, yamux first, as nwaku offers them
	// (waku/node/waku_switch.nim). Meant for measuring one against the
	// other: without mplex js-waku cannot connect, without yamux go-waku.
	Muxers []string
	// NoListen starts the host without listening (in-process use).
	NoListen bool
	// NodeKey is a hex secp256k1 private key (--nodekey, as nwaku takes it).
	// Empty means the key kept in DataDir, generated on first start, or a
	// fresh key each start when DataDir is empty.
	NodeKey string
	// DataDir holds the node key and the embedded archive (--data-dir).
	// Empty means no persistent key (a new one each start, as nwaku
	// without --nodekey) and, with Store on, the archive in ./archive of
	// the working directory, where nwaku keeps its store.sqlite3.
	DataDir string
	// ClusterID is the cluster id (--cluster-id). Default 0, as nwaku.
	ClusterID uint16
	// Shards are the shards of ClusterID relayed (--shard). Default: every
	// shard of the network under autosharding, as nwaku; under static
	// sharding shard 0 unless PubsubTopics is set, where nwaku v0.38.1
	// relays none.
	Shards []uint16
	// PubsubTopics are further pubsub topics relayed (--pubsub-topic), each
	// /waku/2/rs/<ClusterID>/<shard>.
	PubsubTopics []string
	// ContentTopics are content topics whose shards are relayed too
	// (--content-topic). Under static sharding they are ignored with a
	// warning, as nwaku does (waku/factory/node_factory.nim).
	ContentTopics []string
	// NumShardsInNetwork is the number of shards of the cluster under
	// autosharding (--num-shards-in-network), 1..1024. Default 0: static
	// sharding, as nwaku v0.38.1.
	NumShardsInNetwork int
	// Relay turns the relay protocol on (--relay). Default true via
	// DefaultConfig; a Config built by hand has it off.
	Relay bool
	// Store archives relayed messages (--store). With no DBURL the archive
	// is the embedded one in DataDir/archive.
	Store bool
	// StoreSync reconciles the archive with store peers' over
	// /vac/waku/reconciliation/1.0.0 and fetches what it lacks
	// (--store-sync; needs Store). Off by default, as nwaku.
	StoreSync bool
	// StoreResume fills the archive at start from a store peer with what
	// it missed since its newest message, at most 6 h back
	// (--store-resume; needs Store). Off by default, as nwaku.
	StoreResume bool
	// StoreSyncInterval, StoreSyncRange and StoreSyncRelayJitter are the
	// time between rounds, how far back a round reaches and how far before
	// now it stops (--store-sync-interval, --store-sync-range,
	// --store-sync-relay-jitter, in seconds on the command line). Zero
	// means nwaku's defaults: 300 s, 3600 s and 20 s.
	StoreSyncInterval, StoreSyncRange, StoreSyncRelayJitter time.Duration
	// Filter serves filter v2 to light clients (--filter); relayed
	// messages matching a subscription are pushed to it. Off by default.
	Filter bool
	// FilterMaxPeersToServe, FilterMaxCriteria and FilterSubscriptionTimeout
	// are the filter service's limits (--filter-max-peers-to-serve,
	// --filter-max-criteria, --filter-subscription-timeout in seconds).
	// Zero means nwaku's defaults: 1000, 1000 and 300 s.
	FilterMaxPeersToServe, FilterMaxCriteria int
	FilterSubscriptionTimeout                time.Duration
	// Lightpush serves lightpush v3 and v2 (--lightpush; needs Relay).
	// Off by default.
	Lightpush bool
	// FilterNode and LightpushNode are the multiaddrs, with /p2p/<id>, of
	// the service nodes this node's filter and lightpush clients (the REST
	// API's) use (--filternode, --lightpushnode), nwaku's service slots.
	// Empty: a known peer serving the protocol (Node.SelectServicePeer).
	// The clients are mounted either way, as in nwaku v0.38.1.
	FilterNode, LightpushNode string
	// DBURL selects the archive (--store-message-db-url, alias --db-url):
	//   - "sqlite://PATH": the embedded archive with its SQLite index at
	//     PATH (relative to the working directory, as nwaku resolves it)
	//     and its payload segments in the directory PATH.segments;
	//   - "postgres://user:password@host:port/db": the Postgres archive;
	//   - "" : DataDir/archive when DataDir is set, else DefaultDBURL
	//     (nwaku's sqlite://store.sqlite3); "embedded": DataDir/archive.
	DBURL string
	// StoreNode is the multiaddr, with /p2p/<id>, of the store node the
	// REST API's store queries go to without a peerAddr (--storenode).
	// Empty: a connected peer that serves store.
	StoreNode string
	// RateLimit holds --rate-limit values in nwaku's grammar (e.g.
	// "store:100/1s"); the store server applies the setting for store.
	// Empty: no limit, nwaku's default.
	RateLimit []string
	// StaticNodes are multiaddrs with /p2p/<id> dialled at start and
	// re-dialled with backoff when they drop (--staticnode).
	StaticNodes []string
	// MaxConnections is the connection manager's high water mark
	// (--max-connections). Default 150, as nwaku v0.38.1.
	MaxConnections int
	// AgentString is the libp2p agent version announced by identify
	// (--agent-string). Default Version.
	AgentString string
	// REST serves the REST API on RESTAddress:RESTPort (--rest,
	// --rest-address, --rest-port). DefaultConfig: 127.0.0.1:8645.
	REST        bool
	RESTAddress string
	RESTPort    int
	// RESTAdmin serves the /admin/v1 routes (--rest-admin). Off by default,
	// as nwaku.
	RESTAdmin bool
	// RESTAllowOrigin lists the browser origins allowed to call the REST
	// API (--rest-allow-origin; "*" for any, * and ? wildcards). Empty: no
	// origin check and no CORS headers, as nwaku.
	RESTAllowOrigin []string
	// RESTCacheCapacity is the number of messages the REST relay cache
	// keeps, all topics together (--rest-relay-cache-capacity). Default 50.
	RESTCacheCapacity int
	// HTTPMaxConnections bounds the connections each HTTP server (the REST
	// API, metrics) holds at once (--http-max-connections): at the limit
	// the oldest idle or slow one is closed for the new one, and when all
	// are in a handler the new one is answered 503 (internal/connlimit).
	// 0 means 1024 (about 10 MiB of connection state); negative is no
	// limit, as nwaku's REST server (chronos maxConnections -1).
	HTTPMaxConnections int
	// MetricsServer serves Prometheus metrics on /metrics at
	// MetricsAddress:MetricsPort (--metrics-server, --metrics-server-address,
	// --metrics-server-port). DefaultConfig: 127.0.0.1:8008.
	MetricsServer  bool
	MetricsAddress string
	MetricsPort    int
	// MetricsLogging logs the node's totals (messages, errors and the
	// others nwaku logs) at INFO every 10 minutes while MetricsServer is on,
	// as nwaku (--metrics-logging, waku/node/waku_metrics.nim).
	// DefaultConfig: true, nwaku's default.
	MetricsLogging bool
	// ArchiveConfig tunes the archive (the settings of both drivers, see
	// archive/dburl.Config); zero means their defaults. Its OnInsert and
	// OnQuery are replaced by the node's metrics'.
	ArchiveConfig dburl.Config
	// RelayHandlerQueue is the queue length of each relay handler in
	// envelopes. Zero means the relay's default (1024).
	RelayHandlerQueue int
	// OnArchived, when set, is called from the archive's writer after each
	// relayed envelope is committed (err nil) or failed. A message the
	// archive does not keep (ephemeral, duplicate, or a timestamp outside
	// ArchiveTimestampDrift) is acknowledged with err nil.
	OnArchived func(env *message.Envelope, err error)
	// ArchiveTimestampDrift bounds how far a relayed message's timestamp
	// may be from the node's clock, either way, for the archive to keep it:
	// nwaku's archive keeps no relayed message whose sender timestamp is
	// more than 20 s old or ahead, nor one without a timestamp
	// (waku/waku_archive/archive.nim validate, MaxMessageTimestampVariance).
	// Messages from store-sync and store resume are not checked. Default
	// 20 s; negative turns the check off.
	ArchiveTimestampDrift time.Duration
	// Counters receives the node's codec and hash counts. Nil means a new
	// set, read with Node.Counters.
	Counters *message.Counters
	// StaticRedialMin and StaticRedialMax bound the re-dial backoff of
	// static nodes. Defaults 1 s and 30 s.
	StaticRedialMin, StaticRedialMax time.Duration
	// Discovery configures the node's ENR and how it finds peers.
	Discovery DiscoveryConfig
	// LogLevel, when set, is the level of Logger's handler, changed by
	// POST /admin/v1/log-level/{level}. Nil: the level cannot be changed.
	LogLevel *slog.LevelVar
	// Logger receives the node's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns nwaku's defaults: relay on, store off, cluster 0,
// shard 0, TCP port 60000 on all interfaces.
func DefaultConfig() Config {
	return Config{
		ListenAddress: "0.0.0.0", TCPPort: 60000, WebSocketPort: 8000, Relay: true, MaxConnections: 150,
		RESTAddress: "127.0.0.1", RESTPort: 8645, MetricsAddress: "127.0.0.1", MetricsPort: 8008, MetricsLogging: true,
		Discovery: DefaultDiscoveryConfig(),
	}
}

// Stream muxer names for Config.Muxers.
const (
	MuxerYamux = "yamux"
	MuxerMplex = "mplex"
)

func (c *Config) setDefaults() {
	if len(c.Muxers) == 0 {
		c.Muxers = []string{MuxerYamux, MuxerMplex}
	}
	if c.WebSocketSecure {
		c.WebSocket = true
	}
	if c.ListenAddress == "" {
		c.ListenAddress = "0.0.0.0"
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 150
	}
	if c.AgentString == "" {
		c.AgentString = Version
	}
	if len(c.Shards) == 0 {
		switch {
		case c.NumShardsInNetwork > 0:
			for s := range c.NumShardsInNetwork {
				c.Shards = append(c.Shards, uint16(s))
			}
		case len(c.PubsubTopics) == 0:
			c.Shards = []uint16{0}
		}
	}
	if c.StaticRedialMin == 0 {
		c.StaticRedialMin = time.Second
	}
	if c.ArchiveTimestampDrift == 0 {
		c.ArchiveTimestampDrift = DefaultArchiveTimestampDrift
	}
	if c.StaticRedialMax == 0 {
		c.StaticRedialMax = 30 * time.Second
	}
	if c.Counters == nil {
		c.Counters = new(message.Counters)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Discovery.setDefaults()
}

func (c *Config) validate() error {
	if net.ParseIP(c.ListenAddress) == nil {
		return fmt.Errorf("%w: --listen-address %q is not an IP address", ErrConfig, c.ListenAddress)
	}
	// nwaku parses both as IP addresses (cli_args.nim), never names.
	if c.REST && net.ParseIP(c.RESTAddress) == nil {
		return fmt.Errorf("%w: --rest-address %q is not an IP address", ErrConfig, c.RESTAddress)
	}
	if c.MetricsServer && net.ParseIP(c.MetricsAddress) == nil {
		return fmt.Errorf("%w: --metrics-server-address %q is not an IP address", ErrConfig, c.MetricsAddress)
	}
	if _, err := c.staticPeers(); err != nil {
		return err
	}
	for _, p := range []struct {
		flag string
		port int
	}{{"--tcp-port", c.TCPPort}, {"--websocket-port", c.WebSocketPort}, {"--rest-port", c.RESTPort}, {"--metrics-server-port", c.MetricsPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("%w: %s %d not in 0..65535", ErrConfig, p.flag, p.port)
		}
	}
	if c.NumShardsInNetwork < 0 || c.NumShardsInNetwork > 1024 {
		return fmt.Errorf("%w: num-shards-in-network %d not in 0..1024", ErrConfig, c.NumShardsInNetwork)
	}
	if err := c.validateShards(); err != nil {
		return err
	}
	if _, err := c.locateArchive(); err != nil {
		return err
	}
	if _, err := archive.ParseRetention(c.ArchiveConfig.Retention); c.Store && err != nil {
		return fmt.Errorf("%w: --store-message-retention-policy=%s: %w", ErrConfig, c.ArchiveConfig.Retention, err)
	}
	if _, err := ratelimit.Parse(c.RateLimit); err != nil {
		return fmt.Errorf("%w: --rate-limit: %w", ErrConfig, err)
	}
	if c.StoreSync && !c.Store {
		return fmt.Errorf("%w: store-sync needs store", ErrConfig)
	}
	if c.StoreResume && !c.Store {
		return fmt.Errorf("%w: store-resume needs store", ErrConfig)
	}
	if c.Lightpush && !c.Relay {
		return fmt.Errorf("%w: lightpush needs relay (nwaku mounts lightpush only with relay)", ErrConfig)
	}
	if c.FilterMaxPeersToServe < 0 || c.FilterMaxCriteria < 0 || c.FilterSubscriptionTimeout < 0 {
		return fmt.Errorf("%w: filter limits must not be negative", ErrConfig)
	}
	if c.StaticRedialMin < 0 || c.StaticRedialMax < c.StaticRedialMin {
		return fmt.Errorf("%w: static re-dial backoff %v..%v", ErrConfig, c.StaticRedialMin, c.StaticRedialMax)
	}
	return c.Discovery.validate()
}

// validateShards checks the relayed shards against the cluster and the
// sharding: shards below 1024, under autosharding below the number of
// shards in the network (nwaku networks_config.nim validateShards), and
// pubsub topics of the form /waku/2/rs/<ClusterID>/<shard>.
func (c *Config) validateShards() error {
	for i, m := range c.Muxers {
		if m != MuxerYamux && m != MuxerMplex || slices.Contains(c.Muxers[:i], m) {
			return fmt.Errorf("%w: muxers %q: want yamux and/or mplex, each once", ErrConfig, c.Muxers)
		}
	}
	if c.WebSocketSecure && (c.WebSocketSecureKeyPath == "" || c.WebSocketSecureCertPath == "") {
		return fmt.Errorf("%w: secure WebSocket needs a key path and a cert path", ErrConfig)
	}
	for _, s := range c.Shards {
		if _, err := shard.NewRelayShard(c.ClusterID, s); err != nil {
			return fmt.Errorf("%w: --shard %d: %w", ErrConfig, s, err)
		}
		if n := c.NumShardsInNetwork; n > 0 && int(s) >= n {
			return fmt.Errorf("%w: --shard %d: validateShards invalid shard: %d when numShardsInCluster: %d", ErrConfig, s, s, n)
		}
	}
	for _, t := range c.PubsubTopics {
		rs, err := shard.ParsePubsubTopic(t)
		if err != nil {
			return fmt.Errorf("%w: --pubsub-topic %s: %w", ErrConfig, t, err)
		}
		if rs.ClusterID != c.ClusterID {
			return fmt.Errorf("%w: --pubsub-topic %s is on cluster %d, the node on cluster %d (--cluster-id)", ErrConfig, t, rs.ClusterID, c.ClusterID)
		}
		if n := c.NumShardsInNetwork; n > 0 && int(rs.ShardID) >= n {
			return fmt.Errorf("%w: --pubsub-topic %s: shard %d is not in the network's %d shards (--num-shards-in-network)", ErrConfig, t, rs.ShardID, n)
		}
	}
	return nil
}

// staticPeers parses StaticNodes, each a multiaddr with /p2p/<id>.
func (c *Config) staticPeers() ([]peer.AddrInfo, error) {
	var peers []peer.AddrInfo
	for _, s := range c.StaticNodes {
		addr, err := ma.NewMultiaddr(s)
		if err != nil {
			return nil, fmt.Errorf("%w: --staticnode %q: %w", ErrConfig, s, err)
		}
		pi, err := peer.AddrInfoFromP2pAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: --staticnode %q needs /p2p/<peer id>: %w", ErrConfig, s, err)
		}
		peers = append(peers, *pi)
	}
	return peers, nil
}

// pubsubTopics returns every pubsub topic the node relays.
func (c *Config) pubsubTopics() []string {
	var out []string
	for _, s := range c.Shards {
		out = append(out, shard.RelayShard{ClusterID: c.ClusterID, ShardID: s}.PubsubTopic())
	}
	return append(out, c.PubsubTopics...)
}
