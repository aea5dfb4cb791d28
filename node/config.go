package node

import (
	"errors"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln/membership"
	"github.com/couriernet/courier/shard"
)

// DefaultArchiveTimestampDrift is nwaku's MaxMessageTimestampVariance
// (waku/waku_archive/archive.nim), Config.ArchiveTimestampDrift's
// default.
const DefaultArchiveTimestampDrift = 20 * time.Second

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("node: invalid config")

// Config configures a Node. Field names follow nwaku's flags.
//
// The zero value of each field is its documented default, so that
// New(Config{}) starts a node: no relay, no store, listening on a free TCP
// port of every IPv4 interface, and with REST or metrics asked for, those
// on a free port of 127.0.0.1. DefaultConfig gives nwaku's defaults
// instead, those of `courier node` without flags (relay on, TCP port
// 60000, REST port 8645, ...); the fields where they differ from the zero
// value say so. New resolves a Config once, checking every field and
// returning the first error, which wraps ErrConfig and names the flag of
// the field.
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
	// autosharding (--num-shards-in-network), 1..MaxShardsInNetwork.
	// Default 0: static sharding, as nwaku v0.38.1.
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
	// --store-sync-relay-jitter, in seconds on the command line), each
	// at most MaxStoreSyncSeconds seconds. Zero means nwaku's defaults:
	// 300 s, 3600 s and 20 s. A negative StoreSyncInterval runs only the
	// round right after Start (storesync.Config.Interval). A negative
	// StoreSyncRelayJitter is no jitter, rounds reaching up to now: what
	// --store-sync-relay-jitter=0 means, as in nwaku, whose uint32 0 is
	// taken as given (the command line maps 0 to -1). StoreSyncRange
	// must not be negative.
	StoreSyncInterval, StoreSyncRange, StoreSyncRelayJitter time.Duration
	// Filter serves filter v2 to light clients (--filter); relayed
	// messages matching a subscription are pushed to it. Off by default.
	Filter bool
	// FilterMaxPeersToServe, FilterMaxCriteria and FilterSubscriptionTimeout
	// are the filter service's limits (--filter-max-peers-to-serve,
	// --filter-max-criteria, --filter-subscription-timeout in seconds):
	// counts 0..MaxCount, the timeout 0..MaxFilterSubscriptionSeconds
	// seconds. Zero means nwaku's defaults: 1000, 1000 and 300 s.
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
	//   - "" : DataDir/archive when DataDir is set, else dburl.Default
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
	// (--max-connections). Default 150, as nwaku v0.38.1; negative is
	// refused (there is no "no limit": nim-libp2p's ConnManager asserts a
	// positive count).
	MaxConnections int
	// AgentString is the libp2p agent version announced by identify
	// (--agent-string). Default Version.
	AgentString string
	// REST serves the REST API on RESTAddress:RESTPort (--rest,
	// --rest-address, --rest-port). RESTAddress is an IPv4 or IPv6
	// address, default 127.0.0.1; RESTPort 0 picks a free port, and
	// DefaultConfig sets nwaku's 8645.
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
	// keeps, all topics together (--rest-relay-cache-capacity),
	// 0..MaxCount. Default 50.
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
	// --metrics-server-port). MetricsAddress is an IPv4 or IPv6 address,
	// default 127.0.0.1; MetricsPort 0 picks a free port, and DefaultConfig
	// sets nwaku's 8008.
	MetricsServer  bool
	MetricsAddress string
	MetricsPort    int
	// MetricsLogging logs the node's totals (messages, errors and the
	// others nwaku logs) at INFO every 10 minutes while MetricsServer is on,
	// as nwaku (--metrics-logging, waku/node/waku_metrics.nim).
	// DefaultConfig: true, nwaku's default.
	MetricsLogging bool
	// ArchiveConfig tunes the archive (the settings of both drivers, see
	// archive/dburl.Config); zero means their defaults: a Retention of ""
	// keeps every message, and DefaultConfig sets nwaku's
	// archive.DefaultRetention (two days). Its OnInsert and OnQuery, when
	// set, are called after the node's metrics' own, on the same goroutine
	// (archive.Config says which and how quick they must be).
	ArchiveConfig dburl.Config
	// RelayHandlerQueue is the queue length of each relay handler in
	// envelopes. Zero means the relay's default (1024).
	RelayHandlerQueue int
	// OnArchived, when set, is called from the archive's writer after each
	// relayed envelope is committed (err nil) or failed. A message the
	// archive does not keep (ephemeral, duplicate, or a timestamp outside
	// ArchiveTimestampDrift) is acknowledged with err nil.
	OnArchived func(env *message.Envelope, err error)
	// OnFilterPush, when set, receives every message a filter service
	// pushes to this node's filter client (Node.FilterClient; subscribe
	// there), as an envelope decoded once from the push, with the peer
	// that pushed it. It runs on that push stream's goroutine, so a slow
	// handler slows that stream only; the envelope is shared with the REST
	// API's filter cache and must not be modified.
	OnFilterPush func(env *message.Envelope, from peer.ID)
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
	// RLNRelay configures RLN relay (17/WAKU2-RLN-RELAY): off unless
	// RLNRelay.Enabled.
	RLNRelay RLNRelayConfig
	// LogLevel, when set, is the level of Logger's handler, changed by
	// POST /admin/v1/log-level/{level}. Nil: the level cannot be changed.
	LogLevel *slog.LevelVar
	// Logger receives the node's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns nwaku v0.38.1's defaults
// (tools/confutils/cli_args.nim), those of `courier node` without flags:
// relay on, store off, cluster 0, shard 0, TCP port 60000 on every IPv4
// interface, WebSocket port 8000 (WebSocket off), REST and metrics off,
// on 127.0.0.1:8645 and 127.0.0.1:8008 when turned on, metrics logging on,
// 150 connections, peer exchange served, discv5's UDP port 9000 (discv5
// off), a retention of two days; courier's own where nwaku's name nwaku or
// probe the network (the agent string is Version, --nat is none). It
// differs from the zero Config only in the fields that say so; the others
// hold the zero value's defaults, filled as New fills them. The defaults
// the services own (the filter's limits, store-sync's intervals, the REST
// cache) stay zero, which means them.
func DefaultConfig() Config {
	c := Config{
		TCPPort: 60000, WebSocketPort: 8000, Relay: true,
		RESTPort: 8645, MetricsPort: 8008, MetricsLogging: true,
		ArchiveConfig: dburl.Config{Config: archive.Config{Retention: archive.DefaultRetention}},
		Discovery:     DefaultDiscoveryConfig(),
	}
	c.fillDefaults()
	return c
}

// Bounds of the Config fields nwaku types narrower than an int
// (tools/confutils/cli_args.nim), which New refuses outside them, as the
// command line does:
const (
	// MaxPort is the largest port (TCPPort, WebSocketPort, RESTPort,
	// MetricsPort, Discv5UDPPort), nwaku's Port a uint16.
	MaxPort = 65535
	// MaxShardsInNetwork is the largest NumShardsInNetwork: every shard id
	// of a cluster (shard.ShardsPerCluster).
	MaxShardsInNetwork = shard.ShardsPerCluster
	// MaxCount is the largest FilterMaxPeersToServe, FilterMaxCriteria and
	// RESTCacheCapacity, nwaku's uint32.
	MaxCount = 1<<32 - 1
	// MaxStoreSyncSeconds bounds StoreSyncInterval, StoreSyncRange and
	// StoreSyncRelayJitter (nwaku's uint32 seconds), and
	// MaxFilterSubscriptionSeconds FilterSubscriptionTimeout (a uint16).
	MaxStoreSyncSeconds          = 1<<32 - 1
	MaxFilterSubscriptionSeconds = 65535
	// MaxPostgresConns is the largest ArchiveConfig.Postgres.MaxConns,
	// pgx's int32.
	MaxPostgresConns = 1<<31 - 1
)

// MaxEpochSec is the longest RLN epoch RLNRelayConfig.EpochSec may set,
// 2^32 s (some 136 years).
const MaxEpochSec = 1 << 32

// RLNRelayConfig configures RLN relay (17/WAKU2-RLN-RELAY) as nwaku
// v0.38.1's --rln-relay-* flags do (tools/confutils/cli_args.nim;
// waku/waku_rln_relay): every relayed message must carry a valid
// RateLimitProof of a member of the membership contract, within the
// member's message limit per epoch, or it is dropped and its forwarder's
// gossipsub score lowered. A node with a membership (CredPath) attaches
// proofs to the messages it publishes through the REST API and the
// lightpush service. The zero value of each field is its documented
// default.
type RLNRelayConfig struct {
	// Enabled turns RLN relay on (--rln-relay). It needs Relay.
	Enabled bool
	// Dynamic is --rln-relay-dynamic, on-chain group management. nwaku
	// v0.38.1 has no other (its static group manager was removed), and
	// neither has courier: the membership always comes from the chain,
	// whatever the value.
	Dynamic bool
	// EthClientAddresses are the Ethereum JSON-RPC endpoints, http(s)://
	// or ws(s)://, tried in order (--rln-relay-eth-client-address,
	// repeatable). Default DefaultRLNEthClientAddress, nwaku's.
	EthClientAddresses []string
	// EthContractAddress is the membership contract, 0x and 40 hex digits
	// (--rln-relay-eth-contract-address). Required.
	EthContractAddress string
	// ChainID is the chain the endpoints must serve (--rln-relay-chain-id).
	// 0 takes the first endpoint's.
	ChainID uint64
	// EthPrivateKey is an Ethereum private key in hex
	// (--rln-relay-eth-private-key), for registrations only: a running node
	// sends no transaction.
	EthPrivateKey string
	// CredPath and CredPassword are the keystore with the node's
	// membership and its password (--rln-relay-cred-path,
	// --rln-relay-cred-password), both or neither. Without them the node
	// validates and relays but makes no proofs: its REST API and lightpush
	// service publish only messages that carry a valid proof.
	CredPath, CredPassword string
	// MembershipIndex selects the keystore's credential by its tree index
	// (--rln-relay-membership-index). Nil means 0, as nwaku; a keystore
	// with one credential gives it whatever the index.
	MembershipIndex *uint64
	// UserMessageLimit is --rln-relay-user-message-limit: when not 0 and
	// below the membership's registered limit, the node spends at most
	// this many message ids per epoch. 0 means the registered limit. (nwaku
	// counts against this flag, default 1, while its proofs use the
	// registered limit.)
	UserMessageLimit uint64
	// EpochSec is the epoch length in seconds (--rln-relay-epoch-sec),
	// at most MaxEpochSec. 0 means 1, nwaku's default; The Waku Network
	// uses 600.
	EpochSec uint64
	// CircuitDir holds zerokit's circuit files a node with a membership
	// proves with (--rln-relay-circuit-dir, courier's). Empty means
	// rln.DefaultCircuitDir(): $COURIER_RLN_CIRCUIT_DIR, else
	// $XDG_DATA_HOME/courier/rln, else ~/.local/share/courier/rln.
	CircuitDir string
	// Membership tunes the chain client: poll interval, call timeout,
	// retries, history, Dial (see rln/membership.Config; zero values are
	// its defaults). Its Endpoints, Contract, ChainID, PrivateKey,
	// MembershipIndex and Logger are set from the fields above.
	Membership membership.Config
}

// DefaultRLNEthClientAddress is nwaku's default
// --rln-relay-eth-client-address.
const DefaultRLNEthClientAddress = "http://localhost:8540/"

// Stream muxer names for Config.Muxers.
const (
	MuxerYamux = "yamux"
	MuxerMplex = "mplex"
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
	// "extip:<IPv4>" (that address), or "any", "upnp" or "pmp" (go-libp2p's
	// port mapping, which tries both protocols).
	NAT string
	// DNS4DomainName is a domain name resolving to the node's public IPv4
	// address (--dns4-domain-name); it is announced as /dns4/<name>/tcp/...
	DNS4DomainName string

	// Discv5 runs discovery v5 (--discv5-discovery).
	Discv5 bool
	// Discv5UDPPort is its UDP port (--discv5-udp-port). DefaultConfig sets
	// 9000, as nwaku; 0 picks a free port.
	Discv5UDPPort int
	// Discv5BootstrapNodes are ENRs in text form to start from
	// (--discv5-bootstrap-node).
	Discv5BootstrapNodes []string
	// Discv5ENRAutoUpdate lets discv5 replace the record's IP with the one
	// peers report (--discv5-enr-auto-update).
	Discv5ENRAutoUpdate bool
	// Discv5TableIPLimit, Discv5BucketIPLimit and Discv5BitsPerHop are
	// nwaku's routing-table tunables (defaults 10, 2 and 1). go-ethereum's
	// table has the same limits built in (10 per /24 in the table, 2 per
	// /24 in a bucket, LAN addresses exempt) and one bit per hop; other
	// values are refused.
	Discv5TableIPLimit, Discv5BucketIPLimit, Discv5BitsPerHop int

	// RelayServiceRatio splits MaxConnections between relay and service
	// peers (--relay-service-ratio), "relay:service" summing to 100.
	// Default "50:50", as nwaku v0.38.1. A third of the relay share is
	// dialled out, the rest left to inbound peers (nwaku peer_manager.nim).
	RelayServiceRatio string
	// IPColocationLimit is the most connected peers from one IP address
	// (--ip-colocation-limit). 0 means nwaku's default 5; negative means no
	// limit (nwaku's 0). Static peers are exempt.
	IPColocationLimit int
	// PeerStoreCapacity bounds the peers the manager keeps
	// (--peer-store-capacity). Default 1000.
	PeerStoreCapacity int
	// PeerPersistence keeps the known peers in DataDir/peers.json across
	// restarts (--peer-persistence).
	PeerPersistence bool

	// DNSDiscovery fetches DNSDiscoveryURL at start (--dns-discovery): its
	// records are dialled (origin Dns) and, with discv5 on, bootstrap it.
	DNSDiscovery bool
	// DNSDiscoveryURL is an EIP-1459 tree, enrtree://<key>@<domain>
	// (--dns-discovery-url).
	DNSDiscoveryURL string
	// DNSNameServers are the name servers asked (--dns-addrs-name-server):
	// IP addresses (port 53, as nwaku) or, courier's extension, IP:port.
	// Empty means nwaku's 1.1.1.1 and 1.0.0.1.
	DNSNameServers []string

	// PeerExchange serves peer exchange (--peer-exchange). Default true via
	// DefaultDiscoveryConfig, as nwaku; a Config built by hand has it off.
	PeerExchange bool
	// PeerExchangeNode is a multiaddr with /p2p/<id> asked for peers at
	// start and every PeerExchangeInterval after (--peer-exchange-node).
	PeerExchangeNode string
	// PeerExchangeInterval is the pause between two requests to
	// PeerExchangeNode. Default 5 minutes; a failed request is retried
	// after 10 s.
	PeerExchangeInterval time.Duration
}

// DefaultDiscoveryConfig returns nwaku v0.38.1's defaults with courier's
// --nat=none, as DefaultConfig has them.
func DefaultDiscoveryConfig() DiscoveryConfig {
	c := DiscoveryConfig{Discv5UDPPort: 9000, PeerExchange: true}
	c.fillDefaults()
	return c
}

// natNone is courier's default --nat: no probes leave the machine.
const natNone = "none"
