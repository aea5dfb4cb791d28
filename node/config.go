package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("node: invalid config")

// Config configures a Node. Field names follow nwaku's flags; the zero
// value of a field means its documented default unless it says otherwise.
type Config struct {
	// ListenAddress is the IPv4 address to listen on (--listen-address).
	// Default "0.0.0.0".
	ListenAddress string
	// TCPPort is the libp2p TCP port (--tcp-port). DefaultConfig sets 60000;
	// 0 picks a free port.
	TCPPort int
	// WebSocketPort, when positive, also listens for libp2p over WebSocket
	// (--websocket-port; off by default).
	WebSocketPort int
	// NoListen starts the host without listening (in-process use).
	NoListen bool
	// NodeKey is a hex secp256k1 private key (--nodekey, as nwaku takes it).
	// Empty means the key kept in DataDir, generated on first start, or a
	// fresh key each start when DataDir is empty.
	NodeKey string
	// DataDir holds the node key and the embedded archive (--data-dir).
	// Empty means no persistent key and, with Store on, an error.
	DataDir string
	// ClusterID is the cluster id (--cluster-id). Default 0, as nwaku.
	ClusterID uint16
	// Shards are the static shards relayed (--shard). Default: shard 0,
	// unless PubsubTopics is set.
	Shards []uint16
	// PubsubTopics are further pubsub topics relayed (--pubsub-topic).
	PubsubTopics []string
	// NumShardsInNetwork is the autosharding shard count
	// (--num-shards-in-network). Default 1, as nwaku.
	NumShardsInNetwork int
	// Relay turns the relay protocol on (--relay). Default true via
	// DefaultConfig; a Config built by hand has it off.
	Relay bool
	// Store archives relayed messages (--store). With no DBURL the archive
	// is the embedded one in DataDir/archive.
	Store bool
	// DBURL selects the archive (--db-url): empty or "embedded" for the
	// embedded default in DataDir.
	DBURL string
	// StaticNodes are multiaddrs with /p2p/<id> dialled at start and
	// re-dialled with backoff when they drop (--staticnode).
	StaticNodes []string
	// MaxConnections is the connection manager's high water mark
	// (--max-connections). Default 50, as nwaku.
	MaxConnections int
	// REST serves the REST API on RESTAddress:RESTPort (--rest,
	// --rest-address, --rest-port). DefaultConfig: 127.0.0.1:8645.
	REST        bool
	RESTAddress string
	RESTPort    int
	// MetricsServer serves Prometheus metrics on /metrics at
	// MetricsAddress:MetricsPort (--metrics-server, --metrics-server-address,
	// --metrics-server-port). DefaultConfig: 127.0.0.1:8008.
	MetricsServer  bool
	MetricsAddress string
	MetricsPort    int
	// ArchiveConfig tunes the embedded archive; zero means its defaults.
	ArchiveConfig archive.Config
	// RelayHandlerQueue is the queue length of each relay handler in
	// envelopes. Zero means the relay's default (1024).
	RelayHandlerQueue int
	// OnArchived, when set, is called from the archive's writer after each
	// relayed envelope is committed (err nil) or failed.
	OnArchived func(env *message.Envelope, err error)
	// Counters receives the node's codec and hash counts. Nil means a new
	// set, read with Node.Counters.
	Counters *message.Counters
	// StaticRedialMin and StaticRedialMax bound the re-dial backoff of
	// static nodes. Defaults 1 s and 30 s.
	StaticRedialMin, StaticRedialMax time.Duration
	// Logger receives the node's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns nwaku's defaults: relay on, store off, cluster 0,
// shard 0, TCP port 60000 on all interfaces.
func DefaultConfig() Config {
	return Config{
		ListenAddress: "0.0.0.0", TCPPort: 60000, Relay: true, NumShardsInNetwork: 1, MaxConnections: 50,
		RESTAddress: "127.0.0.1", RESTPort: 8645, MetricsAddress: "127.0.0.1", MetricsPort: 8008,
	}
}

func (c *Config) setDefaults() {
	if c.ListenAddress == "" {
		c.ListenAddress = "0.0.0.0"
	}
	if c.NumShardsInNetwork == 0 {
		c.NumShardsInNetwork = 1
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 50
	}
	if len(c.Shards) == 0 && len(c.PubsubTopics) == 0 {
		c.Shards = []uint16{0}
	}
	if c.StaticRedialMin == 0 {
		c.StaticRedialMin = time.Second
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
}

func (c *Config) validate() error {
	if net.ParseIP(c.ListenAddress) == nil {
		return fmt.Errorf("%w: listen address %q is not an IP address", ErrConfig, c.ListenAddress)
	}
	if c.TCPPort < 0 || c.TCPPort > 65535 || c.WebSocketPort < 0 || c.WebSocketPort > 65535 {
		return fmt.Errorf("%w: ports must be 0..65535", ErrConfig)
	}
	for _, s := range c.Shards {
		if _, err := shard.NewRelayShard(c.ClusterID, s); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if c.NumShardsInNetwork < 1 || c.NumShardsInNetwork > 1024 {
		return fmt.Errorf("%w: num-shards-in-network %d not in 1..1024", ErrConfig, c.NumShardsInNetwork)
	}
	if c.Store && c.DataDir == "" && (c.DBURL == "" || c.DBURL == "embedded") {
		return fmt.Errorf("%w: the embedded archive needs a data directory", ErrConfig)
	}
	if c.DBURL != "" && c.DBURL != "embedded" {
		return fmt.Errorf("%w: db-url %q: only the embedded archive is available", ErrConfig, c.DBURL)
	}
	if c.StaticRedialMin < 0 || c.StaticRedialMax < c.StaticRedialMin {
		return fmt.Errorf("%w: static re-dial backoff %v..%v", ErrConfig, c.StaticRedialMin, c.StaticRedialMax)
	}
	return nil
}

// pubsubTopics returns every pubsub topic the node relays.
func (c *Config) pubsubTopics() []string {
	var out []string
	for _, s := range c.Shards {
		out = append(out, shard.RelayShard{ClusterID: c.ClusterID, ShardID: s}.PubsubTopic())
	}
	return append(out, c.PubsubTopics...)
}
