package node

import (
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/p2p/dnsdisc"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/nodekey"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/internal/rlnnode"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/membership"
	"github.com/couriernet/courier/shard"
)

// plan is a Config resolved: its defaults applied and every value parsed
// and checked against the others. New builds the node from it, so nothing
// is parsed twice and nothing fails on configuration after New.
type plan struct {
	Config
	key    crypto.PrivKey      // --nodekey, nil without it
	auto   *shard.Autosharding // nil under static sharding
	topics []string            // the pubsub topics relayed from the start
	// contentShards[i] is the pubsub topic of ContentTopics[i] under
	// autosharding; nil under static sharding.
	contentShards []string
	listen        []peers.ListenAddr // nil with NoListen
	// everyShard: Shards was empty and holds every shard of
	// NumShardsInNetwork.
	everyShard bool
	// filterNode, lightpushNode and storeNode are the service nodes of
	// --filternode, --lightpushnode and --storenode, nil when not set.
	filterNode, lightpushNode, storeNode *peer.AddrInfo
	limits                               ratelimit.Settings
	archive                              dburl.Location
	// peers configures the peer manager and discovery: the static nodes,
	// the relay share, the external addresses, the bootstrap records.
	peers peers.Config
	// rln configures RLN relay; used only with RLNRelay.Enabled.
	rln rlnnode.Config
}

// fillDefaults gives every zero field its documented default, where the
// node rather than a service owns it. It is the one place those defaults
// live: DefaultConfig and resolve both call it.
func (c *Config) fillDefaults() {
	if len(c.Muxers) == 0 {
		c.Muxers = []string{MuxerYamux, MuxerMplex}
	}
	if c.ListenAddress == "" {
		c.ListenAddress = "0.0.0.0"
	}
	if c.RESTAddress == "" {
		c.RESTAddress = "127.0.0.1"
	}
	if c.MetricsAddress == "" {
		c.MetricsAddress = "127.0.0.1"
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 150
	}
	if c.AgentString == "" {
		c.AgentString = Version
	}
	if c.ArchiveTimestampDrift == 0 {
		c.ArchiveTimestampDrift = DefaultArchiveTimestampDrift
	}
	if c.StaticRedialMin == 0 {
		c.StaticRedialMin = time.Second
	}
	if c.StaticRedialMax == 0 {
		c.StaticRedialMax = 30 * time.Second
	}
	c.Discovery.fillDefaults()
	c.RLNRelay.fillDefaults()
}

func (c *RLNRelayConfig) fillDefaults() {
	if len(c.EthClientAddresses) == 0 {
		c.EthClientAddresses = []string{DefaultRLNEthClientAddress}
	}
	if c.EpochSec == 0 {
		c.EpochSec = 1
	}
}

func (c *DiscoveryConfig) fillDefaults() {
	if c.NAT == "" {
		c.NAT = natNone
	}
	if c.Discv5TableIPLimit == 0 {
		c.Discv5TableIPLimit = 10
	}
	if c.Discv5BucketIPLimit == 0 {
		c.Discv5BucketIPLimit = 2
	}
	if c.Discv5BitsPerHop == 0 {
		c.Discv5BitsPerHop = 1
	}
	if c.RelayServiceRatio == "" {
		c.RelayServiceRatio = "50:50"
	}
	if c.IPColocationLimit == 0 {
		c.IPColocationLimit = 5
	}
	if c.PeerStoreCapacity == 0 {
		c.PeerStoreCapacity = 1000
	}
	if c.PeerExchangeInterval == 0 {
		c.PeerExchangeInterval = 5 * time.Minute
	}
}

// resolve returns the plan of c: c with its defaults (fillDefaults, then
// those that depend on other fields or are made per node: the relayed
// shards, WebSocket under secure WebSocket, Counters, Logger) and its
// values parsed. The first error found is returned; it wraps ErrConfig.
func (c Config) resolve() (*plan, error) {
	c.fillDefaults()
	if c.WebSocketSecure {
		c.WebSocket = true
	}
	everyShard := len(c.Shards) == 0 && c.NumShardsInNetwork > 0 && c.NumShardsInNetwork <= MaxShardsInNetwork
	if len(c.Shards) == 0 {
		switch {
		case everyShard:
			for s := range c.NumShardsInNetwork {
				c.Shards = append(c.Shards, uint16(s))
			}
		case len(c.PubsubTopics) == 0:
			c.Shards = []uint16{0}
		}
	}
	if c.Counters == nil {
		c.Counters = new(message.Counters)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	p := &plan{Config: c, everyShard: everyShard}
	for _, step := range []func() error{p.parseKey, p.checkAddresses, p.parseStatic, p.checkPorts, p.checkShards, p.parseArchive,
		p.parseLimits, p.checkServices, p.parseDiscovery, p.parseTopics, p.parseServiceNodes, p.parseListen, p.parseRLN} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	p.completePeers()
	return p, nil
}

// parseKey parses --nodekey; a key kept in DataDir is read by New.
func (p *plan) parseKey() (err error) {
	if p.NodeKey == "" {
		return nil
	}
	if p.key, err = nodekey.Parse(p.NodeKey, "--nodekey"); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// checkAddresses checks the listen, REST and metrics addresses: IP
// addresses, never names, as nwaku parses them (cli_args.nim).
func (p *plan) checkAddresses() error {
	if net.ParseIP(p.ListenAddress) == nil {
		return fmt.Errorf("%w: --listen-address %q is not an IP address", ErrConfig, p.ListenAddress)
	}
	if p.REST && net.ParseIP(p.RESTAddress) == nil {
		return fmt.Errorf("%w: --rest-address %q is not an IP address", ErrConfig, p.RESTAddress)
	}
	if p.MetricsServer && net.ParseIP(p.MetricsAddress) == nil {
		return fmt.Errorf("%w: --metrics-server-address %q is not an IP address", ErrConfig, p.MetricsAddress)
	}
	return nil
}

// parseStatic parses StaticNodes, each a multiaddr with /p2p/<id>.
func (p *plan) parseStatic() error {
	for _, s := range p.StaticNodes {
		pi, err := peerAddr("staticnode", s)
		if err != nil {
			return err
		}
		p.peers.Static = append(p.peers.Static, *pi)
	}
	return nil
}

// peerAddr parses the multiaddr with /p2p/<id> of --flag.
func peerAddr(flag, s string) (*peer.AddrInfo, error) {
	addr, err := ma.NewMultiaddr(s)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s %q: %w", ErrConfig, flag, s, err)
	}
	pi, err := peer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s %q needs /p2p/<peer id>: %w", ErrConfig, flag, s, err)
	}
	return pi, nil
}

// errOutOfRange is the error of a field outside lo..hi, named by its
// flag, in the words the command line uses for a value out of range: "--flag
// v is out of range: want lo..hi [unit]".
func errOutOfRange(flag string, v, lo, hi any, unit string) error {
	if unit != "" {
		unit = " " + unit
	}
	return fmt.Errorf("%w: --%s %v is out of range: want %v..%v%s", ErrConfig, flag, v, lo, hi, unit)
}

// checkPorts checks the ports against nwaku's Port, 0..MaxPort.
func (p *plan) checkPorts() error {
	for _, port := range []struct {
		flag string
		port int
	}{{"tcp-port", p.TCPPort}, {"websocket-port", p.WebSocketPort}, {"rest-port", p.RESTPort}, {"metrics-server-port", p.MetricsPort},
		{"discv5-udp-port", p.Discovery.Discv5UDPPort}} {
		if port.port < 0 || port.port > MaxPort {
			return errOutOfRange(port.flag, port.port, 0, MaxPort, "")
		}
	}
	return nil
}

// checkShards checks the relayed shards against the cluster and the
// sharding: shards below 1024, under autosharding below the number of
// shards in the network (nwaku networks_config.nim validateShards), and
// pubsub topics of the form /waku/2/rs/<ClusterID>/<shard>; and the
// muxers and the secure WebSocket files.
func (p *plan) checkShards() error {
	if p.NumShardsInNetwork < 0 || p.NumShardsInNetwork > MaxShardsInNetwork {
		return errOutOfRange("num-shards-in-network", p.NumShardsInNetwork, 0, MaxShardsInNetwork, "")
	}
	for i, m := range p.Muxers {
		if m != MuxerYamux && m != MuxerMplex || slices.Contains(p.Muxers[:i], m) {
			return fmt.Errorf("%w: muxers %q: want yamux and/or mplex, each once", ErrConfig, p.Muxers)
		}
	}
	if p.WebSocketSecure && (p.WebSocketSecureKeyPath == "" || p.WebSocketSecureCertPath == "") {
		return fmt.Errorf("%w: --websocket-secure-support needs --websocket-secure-key-path and --websocket-secure-cert-path", ErrConfig)
	}
	for _, s := range p.Shards {
		if _, err := shard.NewRelayShard(p.ClusterID, s); err != nil {
			return fmt.Errorf("%w: --shard %d: %w", ErrConfig, s, err)
		}
		if n := p.NumShardsInNetwork; n > 0 && int(s) >= n {
			return fmt.Errorf("%w: --shard %d: validateShards invalid shard: %d when numShardsInCluster: %d", ErrConfig, s, s, n)
		}
	}
	for _, t := range p.PubsubTopics {
		rs, err := shard.ParsePubsubTopic(t)
		if err != nil {
			return fmt.Errorf("%w: --pubsub-topic %s: %w", ErrConfig, t, err)
		}
		if rs.ClusterID != p.ClusterID {
			return fmt.Errorf("%w: --pubsub-topic %s is on cluster %d, the node on cluster %d (--cluster-id)", ErrConfig, t, rs.ClusterID, p.ClusterID)
		}
		if n := p.NumShardsInNetwork; n > 0 && int(rs.ShardID) >= n {
			return fmt.Errorf("%w: --pubsub-topic %s: shard %d is not in the network's %d shards (--num-shards-in-network)", ErrConfig, t, rs.ShardID, n)
		}
	}
	return nil
}

// parseArchive locates the archive (dburl.ParseIn) and, with Store on, checks
// that an sqlite:// file's directory exists and the retention policy,
// before the archive is opened. Without Store the policy
// is not read, as nwaku builds it only for its store service
// (store_service_conf_builder.nim build).
func (p *plan) parseArchive() (err error) {
	if p.archive, err = dburl.ParseIn(p.DBURL, p.DataDir); err != nil {
		return fmt.Errorf("%w: --store-message-db-url: %w", ErrConfig, err)
	}
	if err := p.archive.Check(); p.Store && err != nil {
		return fmt.Errorf("%w: --store-message-db-url: %w", ErrConfig, err)
	}
	if _, err := archive.ParseRetention(p.ArchiveConfig.Retention); p.Store && err != nil {
		return fmt.Errorf("%w: --store-message-retention-policy=%s: %w", ErrConfig, p.ArchiveConfig.Retention, err)
	}
	return nil
}

func (p *plan) parseLimits() (err error) {
	if p.limits, err = ratelimit.Parse(p.RateLimit); err != nil {
		return fmt.Errorf("%w: --rate-limit: %w", ErrConfig, err)
	}
	return nil
}

// checkServices checks the services against each other and their limits
// (checkLimits).
func (p *plan) checkServices() error {
	if err := p.checkLimits(); err != nil {
		return err
	}
	switch {
	case p.StoreSync && !p.Store:
		return fmt.Errorf("%w: store-sync needs store", ErrConfig)
	case p.StoreResume && !p.Store:
		return fmt.Errorf("%w: store-resume needs store", ErrConfig)
	case p.Lightpush && !p.Relay:
		return fmt.Errorf("%w: lightpush needs relay (nwaku mounts lightpush only with relay)", ErrConfig)
	case p.StaticRedialMin < 0 || p.StaticRedialMax < p.StaticRedialMin:
		return fmt.Errorf("%w: static re-dial backoff %v..%v", ErrConfig, p.StaticRedialMin, p.StaticRedialMax)
	}
	return nil
}

// checkLimits checks the counts and times nwaku types as uint16 or uint32
// (tools/confutils/cli_args.nim) against those types' ranges, 0 being the
// field's default, and the connection counts against what the node can
// take.
func (p *plan) checkLimits() error {
	for _, n := range []struct {
		flag string
		v    int
		hi   int
	}{{"max-connections", p.MaxConnections, math.MaxInt}, {"filter-max-peers-to-serve", p.FilterMaxPeersToServe, MaxCount},
		{"filter-max-criteria", p.FilterMaxCriteria, MaxCount}, {"rest-relay-cache-capacity", p.RESTCacheCapacity, MaxCount},
		{"store-max-num-db-connections", p.ArchiveConfig.Postgres.MaxConns, MaxPostgresConns}} {
		if n.v < 0 || n.v > n.hi {
			return errOutOfRange(n.flag, n.v, 0, n.hi, "")
		}
	}
	// A negative StoreSyncInterval is the library's "one round only", a
	// negative StoreSyncRelayJitter its "no jitter".
	for _, d := range []struct {
		flag  string
		v     time.Duration
		hi    int64
		negOK bool
	}{{"store-sync-interval", p.StoreSyncInterval, MaxStoreSyncSeconds, true}, {"store-sync-range", p.StoreSyncRange, MaxStoreSyncSeconds, false},
		{"store-sync-relay-jitter", p.StoreSyncRelayJitter, MaxStoreSyncSeconds, true},
		{"filter-subscription-timeout", p.FilterSubscriptionTimeout, MaxFilterSubscriptionSeconds, false}} {
		if d.v < 0 && !d.negOK || d.v > time.Duration(d.hi)*time.Second {
			return errOutOfRange(d.flag, d.v, 0, d.hi, "seconds")
		}
	}
	return nil
}

// parseDiscovery parses and checks DiscoveryConfig.
func (p *plan) parseDiscovery() error {
	c, an := &p.Discovery, &p.peers.Announce
	ip, err := c.extIP()
	if err != nil {
		return err
	}
	an.ExtIP = ip
	for _, s := range c.ExtMultiaddrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return fmt.Errorf("%w: --ext-multiaddr %q: %w", ErrConfig, s, err)
		}
		an.ExtAddrs = append(an.ExtAddrs, a)
	}
	if c.ExtMultiaddrOnly && len(c.ExtMultiaddrs) == 0 {
		return fmt.Errorf("%w: --ext-multiaddr-only needs --ext-multiaddr", ErrConfig)
	}
	if c.DNS4DomainName != "" {
		// The name as the announced /dns4/<name>/tcp/<port> carries it.
		if _, err := ma.NewMultiaddr("/dns4/" + c.DNS4DomainName + "/tcp/1"); strings.ContainsAny(c.DNS4DomainName, "/ ") || err != nil {
			return fmt.Errorf("%w: --dns4-domain-name %q is not a domain name", ErrConfig, c.DNS4DomainName)
		}
	}
	for _, b := range c.Discv5BootstrapNodes {
		n, err := discovery.ParseENR(b)
		if err != nil {
			return fmt.Errorf("%w: --discv5-bootstrap-node %q: %w", ErrConfig, b, err)
		}
		p.peers.Bootstrap = append(p.peers.Bootstrap, n)
	}
	if c.Discv5TableIPLimit != 10 || c.Discv5BucketIPLimit != 2 || c.Discv5BitsPerHop != 1 {
		return fmt.Errorf("%w: --discv5-table-ip-limit, --discv5-bucket-ip-limit and --discv5-bits-per-hop: go-ethereum's discv5 table has 10, 2 and 1 built in", ErrConfig)
	}
	if p.peers.RelayShare, err = parseRatio(c.RelayServiceRatio); err != nil {
		return err
	}
	if c.PeerExchangeNode != "" {
		if p.peers.PeerExchangeNode, err = peerAddr("peer-exchange-node", c.PeerExchangeNode); err != nil {
			return err
		}
	}
	if c.DNSDiscovery && c.DNSDiscoveryURL == "" {
		return fmt.Errorf("%w: --dns-discovery needs --dns-discovery-url enrtree://<key>@<domain>", ErrConfig)
	}
	if c.DNSDiscoveryURL != "" {
		// The tree's public key and domain, as the client will read them.
		if _, _, err := dnsdisc.ParseURL(c.DNSDiscoveryURL); err != nil {
			return fmt.Errorf("%w: --dns-discovery-url %q: %w (want enrtree://<base32 public key>@<domain>)", ErrConfig, c.DNSDiscoveryURL, err)
		}
	}
	if c.PeerStoreCapacity < 0 {
		return errOutOfRange("peer-store-capacity", c.PeerStoreCapacity, 0, math.MaxInt, "")
	}
	return nil
}

// parseRatio parses "relay:service", two numbers summing to 100 (nwaku
// parseRelayServiceRatio), and returns the relay share, 0..1.
func parseRatio(s string) (relayShare float64, err error) {
	var relay, service float64
	r, sv, ok := strings.Cut(s, ":")
	if ok {
		_, err1 := fmt.Sscan(r, &relay)
		_, err2 := fmt.Sscan(sv, &service)
		ok = err1 == nil && err2 == nil && relay >= 0 && service >= 0 && relay+service == 100
	}
	if !ok {
		return 0, fmt.Errorf("%w: --relay-service-ratio %q: want two numbers summing to 100, as 50:50", ErrConfig, s)
	}
	return relay / 100, nil
}

// extIP returns the address of --nat=extip:<IPv4>, or nil.
func (c *DiscoveryConfig) extIP() (net.IP, error) {
	switch {
	case c.NAT == natNone || c.portMapping():
		return nil, nil
	case strings.HasPrefix(c.NAT, "extip:"):
		ip := net.ParseIP(strings.TrimPrefix(c.NAT, "extip:"))
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("%w: --nat %q: want extip:<IPv4 address>", ErrConfig, c.NAT)
		}
		return ip, nil
	}
	return nil, fmt.Errorf("%w: --nat %q: want none, any, upnp, pmp or extip:<IPv4 address>", ErrConfig, c.NAT)
}

// portMapping reports whether --nat asks for UPnP or NAT-PMP port mapping.
func (c *DiscoveryConfig) portMapping() bool {
	return c.NAT == "any" || c.NAT == "upnp" || c.NAT == "pmp"
}

// parseTopics sets up autosharding and the pubsub topics relayed from the
// start: the configured shards and pubsub topics and, under autosharding,
// the shards of the configured content topics, each once; and checks that
// the metadata protocol carries them (ErrTooManyShards).
func (p *plan) parseTopics() error {
	if p.NumShardsInNetwork > 0 {
		auto, err := shard.NewAutosharding(p.ClusterID, p.NumShardsInNetwork)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		p.auto = &auto
	}
	for _, ct := range p.ContentTopics {
		if _, err := shard.ParseContentTopic(ct); err != nil {
			return fmt.Errorf("%w: --content-topic %s: %w", ErrConfig, ct, err)
		}
	}
	topics := p.pubsubTopics()
	if p.auto != nil {
		for _, ct := range p.ContentTopics {
			t, err := p.auto.PubsubTopic(ct)
			if err != nil {
				return fmt.Errorf("%w: --content-topic %s: %w", ErrConfig, ct, err)
			}
			p.contentShards = append(p.contentShards, t)
		}
		topics = append(topics, p.contentShards...)
	}
	slices.Sort(topics)
	p.topics = slices.Compact(topics)
	shards := p.Shards
	if p.Relay {
		shards = p.clusterShards(p.topics)
	}
	if err := p.checkShardCount(shards); err != nil {
		return fmt.Errorf("%w: %w (%s)", ErrConfig, err, p.shardSources())
	}
	return nil
}

// shardSources names the settings the relayed shards come from, for
// ErrTooManyShards: --num-shards-in-network when Shards defaulted to every
// shard of the network, else --shard, and --pubsub-topic and
// --content-topic when set.
func (p *plan) shardSources() string {
	var from []string
	switch {
	case p.everyShard:
		from = append(from, fmt.Sprintf("--num-shards-in-network %d: without --shard every shard of the network is relayed", p.NumShardsInNetwork))
	case len(p.Shards) > 0:
		from = append(from, "--shard")
	}
	if len(p.PubsubTopics) > 0 {
		from = append(from, "--pubsub-topic")
	}
	if len(p.contentShards) > 0 {
		from = append(from, "--content-topic")
	}
	if len(from) == 0 {
		return "--shard, --pubsub-topic and --content-topic"
	}
	return strings.Join(from, "; ")
}

// pubsubTopics returns the pubsub topics of the configured shards and
// PubsubTopics.
func (c *Config) pubsubTopics() []string {
	var out []string
	for _, s := range c.Shards {
		out = append(out, shard.RelayShard{ClusterID: c.ClusterID, ShardID: s}.PubsubTopic())
	}
	return append(out, c.PubsubTopics...)
}

// parseServiceNodes parses the multiaddrs of --filternode,
// --lightpushnode and --storenode.
func (p *plan) parseServiceNodes() error {
	for _, sn := range []struct {
		flag, addr string
		to         **peer.AddrInfo
	}{{"filternode", p.FilterNode, &p.filterNode}, {"lightpushnode", p.LightpushNode, &p.lightpushNode}, {"storenode", p.StoreNode, &p.storeNode}} {
		if sn.addr == "" {
			continue
		}
		var err error
		if *sn.to, err = peerAddr(sn.flag, sn.addr); err != nil {
			return err
		}
	}
	return nil
}

// parseListen builds the addresses the host listens on.
func (p *plan) parseListen() (err error) {
	if !p.NoListen {
		p.listen, err = peers.Listen(peers.IPMultiaddr(net.ParseIP(p.ListenAddress)), p.TCPPort, p.WebSocket, p.WebSocketSecure, p.WebSocketPort)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// completePeers fills the rest of the peer manager's configuration from
// the checked fields.
func (p *plan) completePeers() {
	c, pc := &p.Discovery, &p.peers
	pc.ClusterID, pc.Shards = p.ClusterID, p.Shards
	pc.MaxConnections, pc.ColocationLimit, pc.Capacity = p.MaxConnections, c.IPColocationLimit, c.PeerStoreCapacity
	if c.PeerPersistence {
		pc.PersistPath = filepath.Join(p.DataDir, "peers.json")
	}
	pc.RedialMin, pc.RedialMax = p.StaticRedialMin, p.StaticRedialMax
	pc.Announce.ListenAddress = net.ParseIP(p.ListenAddress)
	pc.Announce.ExtOnly, pc.Announce.DNS4DomainName, pc.Announce.WebSocketSecure = c.ExtMultiaddrOnly, c.DNS4DomainName, p.WebSocketSecure
	pc.Discv5, pc.Discv5UDPPort, pc.ENRAutoUpdate = c.Discv5, c.Discv5UDPPort, c.Discv5ENRAutoUpdate
	if c.DNSDiscovery {
		pc.DNSDiscoveryURL = c.DNSDiscoveryURL
	}
	pc.DNSNameServers = c.DNSNameServers
	pc.PeerExchange, pc.PeerExchangeLimit, pc.PeerExchangeInterval = c.PeerExchange, p.limits.Get(ratelimit.PeerExchange), c.PeerExchangeInterval
	pc.Logger = p.Logger
}

// parseRLN checks the RLN relay settings as nwaku's RlnRelayConfBuilder
// (waku/factory/conf_builder/rln_relay_conf_builder.nim build) and the
// group manager's init do, and builds the RLN relay's configuration. The
// message id counter of a membership lives in DataDir, or without one
// beside the keystore.
func (p *plan) parseRLN() error {
	c := &p.RLNRelay
	if !c.Enabled {
		return nil
	}
	switch {
	case !p.Relay:
		return fmt.Errorf("%w: --rln-relay needs --relay", ErrConfig)
	case c.EthContractAddress == "":
		return fmt.Errorf("%w: --rln-relay needs --rln-relay-eth-contract-address (rlnRelay.ethContractAddress is not specified)", ErrConfig)
	case !common.IsHexAddress(c.EthContractAddress):
		return fmt.Errorf("%w: --rln-relay-eth-contract-address %q: want 0x and 40 hex digits", ErrConfig, c.EthContractAddress)
	case c.CredPath != "" && c.CredPassword == "":
		return fmt.Errorf("%w: --rln-relay-cred-path without --rln-relay-cred-password (RLN Relay Credential Password is not specified but path is)", ErrConfig)
	case c.CredPath == "" && c.CredPassword != "":
		return fmt.Errorf("%w: --rln-relay-cred-password without --rln-relay-cred-path (RLN Relay Credential Path is not specified but password is)", ErrConfig)
	case c.UserMessageLimit > rln.MaxUserMessageLimit:
		return errOutOfRange("rln-relay-user-message-limit", c.UserMessageLimit, 0, rln.MaxUserMessageLimit, "(the RLN circuit's limit)")
	case c.EpochSec > MaxEpochSec:
		return errOutOfRange("rln-relay-epoch-sec", c.EpochSec, 1, uint64(MaxEpochSec), "seconds")
	}
	mc := c.Membership
	mc.Endpoints, mc.Contract, mc.Logger = c.EthClientAddresses, common.HexToAddress(c.EthContractAddress), p.Logger
	if c.ChainID != 0 {
		mc.ChainID = new(big.Int).SetUint64(c.ChainID)
	}
	if c.EthPrivateKey != "" {
		key, err := membership.ParsePrivateKey(c.EthPrivateKey)
		if err != nil {
			return fmt.Errorf("%w: --rln-relay-eth-private-key: %w", ErrConfig, err)
		}
		mc.PrivateKey = key
	}
	for _, e := range mc.Endpoints {
		if err := membership.CheckEndpoint(e); err != nil {
			return fmt.Errorf("%w: --rln-relay-eth-client-address %w", ErrConfig, err)
		}
	}
	counterDir := p.DataDir
	if counterDir == "" {
		counterDir = filepath.Dir(c.CredPath)
	}
	p.rln = rlnnode.Config{EpochSec: c.EpochSec, Membership: mc, ContractAddress: c.EthContractAddress, CredPath: c.CredPath,
		CredPassword: c.CredPassword, MembershipIndex: c.MembershipIndex, UserMessageLimit: c.UserMessageLimit,
		CircuitDir: c.CircuitDir, CounterDir: counterDir, Logger: p.Logger}
	return nil
}
