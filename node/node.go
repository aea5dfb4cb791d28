package node

import (
	"context"
	cryptotls "crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/dirlock"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/mplex"
	"github.com/couriernet/courier/peerexchange"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/storesync"
)

// Errors of the node's API.
var (
	// ErrNotRelaying is returned by Publish when the relay protocol is off.
	ErrNotRelaying = errors.New("node: relay is not enabled")
	// ErrStarted is returned by a second Start, or a Start after Stop.
	ErrStarted = errors.New("node: already started or stopped")
)

// Node is a Waku node: a libp2p host with relay, metadata and an archive.
type Node struct {
	cfg     Config
	host    host.Host
	relay   *relay.Relay
	archive archive.Archive // nil when store is off
	// archiveGate checks relayed messages' timestamps before the archive;
	// nil without archive or with the check off.
	archiveGate *archiveGate
	metadata    *metadata.Service
	ping        *ping.PingService
	auto        *shard.Autosharding // nil under static sharding
	// topics are the pubsub topics relayed from the start (startTopics).
	topics []string
	// shardMu is held from the shard-count check of a relay subscription
	// (checkMoreShards) until the subscription is made.
	shardMu sync.Mutex
	// resumeLimits bound store resume: defaultResumeLimits.
	resumeLimits resumeLimits
	// sameIDWarned is set once a peer with the node's own id was warned of.
	sameIDWarned atomic.Bool

	cancel     context.CancelFunc
	wg         sync.WaitGroup
	servers    []*http.Server
	httpAddrs  []string
	removeREST func()
	static     map[peer.ID]bool
	// refused holds the static nodes the metadata check disconnected for
	// their cluster, with the reason; they are not dialled again.
	refused   map[peer.ID]error
	lock      *os.File // flock on DataDir/LOCK
	key       crypto.PrivKey
	record    *discovery.LocalRecord
	dns4IP    net.IP // --dns4-domain-name resolved at start, nil without it or with --nat=extip:
	discv5    *discovery.Discv5
	peers     *peerManager
	pxServer  *peerexchange.Server
	pxClient  *peerexchange.Client
	rest      *rest.Server
	storeSync *storesync.Service
	store     storeParts
	light     light

	health health
	// archiveHealth follows the archive's failed and successful commits
	// for the log and /health; nil when store is off.
	archiveHealth *archiveHealth

	reg   *prometheus.Registry
	nwaku nwakuMetrics

	stopOnce sync.Once

	mu      sync.Mutex
	state   string
	started bool // Start or Stop has been called
}

// New builds a node from cfg without starting it: it loads or creates the
// node key, opens the archive and creates the libp2p host (already
// listening) with relay and metadata mounted.
func New(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, state: "INITIALIZING", resumeLimits: defaultResumeLimits}
	n.newRegistry()
	if cfg.NumShardsInNetwork > 0 {
		auto, err := shard.NewAutosharding(cfg.ClusterID, cfg.NumShardsInNetwork)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.auto = &auto
	}
	for _, ct := range cfg.ContentTopics {
		if _, err := shard.ParseContentTopic(ct); err != nil {
			return nil, fmt.Errorf("%w: --content-topic %s: %w", ErrConfig, ct, err)
		}
	}
	topics, err := n.startTopics()
	if err != nil {
		return nil, err
	}
	n.topics = topics
	shards := cfg.Shards
	if cfg.Relay {
		shards = n.clusterShards(topics)
	}
	if err := n.checkShards(shards); err != nil {
		return nil, fmt.Errorf("%w: %w (--shard, --pubsub-topic and --content-topic)", ErrConfig, err)
	}
	if err := n.build(); err != nil {
		n.closeParts()
		return nil, err
	}
	return n, nil
}

func (n *Node) build() error {
	if n.cfg.DataDir != "" {
		if err := os.MkdirAll(n.cfg.DataDir, 0o700); err != nil {
			return fmt.Errorf("node: data directory: %w", err)
		}
		lock, err := dirlock.Lock(n.cfg.DataDir)
		if errors.Is(err, dirlock.ErrLocked) {
			return fmt.Errorf("node: data directory %s: %w (is another node running on it?)", n.cfg.DataDir, err)
		}
		if err != nil {
			return fmt.Errorf("node: data directory %s: %w", n.cfg.DataDir, err)
		}
		n.lock = lock
	}
	key, err := loadKey(n.cfg.NodeKey, n.cfg.DataDir)
	if err != nil {
		return err
	}
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("node: node key: %w", err)
	}
	if err := n.refuseOwnStatic(self); err != nil {
		return err
	}
	n.key = key
	if n.cfg.Store {
		if err := n.openArchive(); err != nil {
			return err
		}
	}
	if n.host, err = n.newHost(key); err != nil {
		return err
	}
	n.peers = newPeerManager(n)
	n.ping = ping.NewPingService(n.host)
	if n.cfg.Relay {
		rc := relay.Config{Counters: n.cfg.Counters, ArchiveDone: n.cfg.OnArchived, HandlerQueueSize: n.cfg.RelayHandlerQueue, Logger: n.cfg.Logger}
		n.nwaku.observeRelay(&rc)
		switch {
		case n.archive != nil && n.cfg.ArchiveTimestampDrift > 0:
			n.archiveGate = newArchiveGate(n.archive, n.cfg.ArchiveTimestampDrift)
			rc.Archive = n.archiveGate
		case n.archive != nil:
			rc.Archive = n.archive
		}
		if n.relay, err = relay.New(n.host, rc); err != nil {
			return err
		}
	}
	if err := n.buildStore(); err != nil {
		return err
	}
	if err := n.buildStoreSync(); err != nil {
		return err
	}
	if err := n.buildLight(); err != nil {
		return err
	}
	n.watchConnectedness()
	n.metadata, err = metadata.New(n.host, metadata.Config{ClusterID: n.cfg.ClusterID, Shards: n.shards, OnChecked: n.onMetadataChecked, Logger: n.cfg.Logger})
	return err
}

func (n *Node) newHost(key crypto.PrivKey) (host.Host, error) {
	cm, err := connmgr.NewConnManager(max(1, n.cfg.MaxConnections*4/5), n.cfg.MaxConnections)
	if err != nil {
		return nil, fmt.Errorf("node: connection manager: %w", err)
	}
	rm, err := n.resourceManager()
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ResourceManager(rm),
		// Without SO_REUSEPORT, so that a second process cannot listen on a
		// port a node already holds and take half of its inbound dials.
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		// TLS 1.3 first, then Noise: go-libp2p's defaults, which go-waku uses.
		// nwaku speaks Noise only, and multistream-select settles on it.
		libp2p.Security(tls.ID, tls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.ConnectionManager(cm),
		libp2p.Ping(false), // mounted by the node itself, below
		libp2p.UserAgent(n.cfg.AgentString),
	}
	// By default yamux first, then mplex for js-libp2p clients (js-waku),
	// which speak nothing else; nwaku offers both.
	for _, m := range n.cfg.Muxers {
		if m == MuxerMplex {
			opts = append(opts, libp2p.Muxer(mplex.ID, mplex.DefaultTransport()))
		} else {
			opts = append(opts, libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
		}
	}
	ws, err := n.webSocket()
	if err != nil {
		return nil, err
	}
	opts = append(opts, ws...)
	if n.cfg.Discovery.portMapping() {
		opts = append(opts, libp2p.NATPortMap())
	}
	var listen []listenAddr
	if n.cfg.NoListen {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		if listen, err = n.cfg.configuredListen(ipMultiaddr(net.ParseIP(n.cfg.ListenAddress))); err != nil {
			return nil, err
		}
		opts = append(opts, libp2p.ListenAddrs(listenAddrs(listen)...))
	}
	opts = append(opts, libp2p.PrometheusRegisterer(n.reg))
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("node: start libp2p host: %w", err)
	}
	if err := checkListening(h, listen); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// ipMultiaddr returns ip as the first part of a multiaddr: /ip4/<ip> or,
// for an IPv6 address, /ip6/<ip>, as nim-libp2p's MultiAddress.init of
// an IpAddress gives nwaku's listen address (waku/node/net_config.nim).
func ipMultiaddr(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return "/ip4/" + ip4.String()
	}
	return "/ip6/" + ip.String()
}

// webSocket returns the options that add the WebSocket transport, with
// the certificate for /wss loaded, or none when WebSocket is off.
func (n *Node) webSocket() ([]libp2p.Option, error) {
	if !n.cfg.WebSocket {
		return nil, nil
	}
	if !n.cfg.WebSocketSecure {
		return []libp2p.Option{libp2p.Transport(websocket.New)}, nil
	}
	cert, err := cryptotls.LoadX509KeyPair(n.cfg.WebSocketSecureCertPath, n.cfg.WebSocketSecureKeyPath)
	if err != nil {
		return nil, fmt.Errorf("node: secure WebSocket certificate: %w", err)
	}
	conf := &cryptotls.Config{Certificates: []cryptotls.Certificate{cert}, MinVersion: cryptotls.VersionTLS12}
	return []libp2p.Option{libp2p.Transport(websocket.New, websocket.WithTLSConfig(conf))}, nil
}

// loadKey parses hexKey, or else reads DataDir/nodekey, or else creates it
// there (mode 0600), or else generates an ephemeral key.
func loadKey(hexKey, dataDir string) (crypto.PrivKey, error) {
	source := "--nodekey"
	if hexKey == "" && dataDir != "" {
		path := filepath.Join(dataDir, "nodekey")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			hexKey, source = strings.TrimSpace(string(b)), path
		case errors.Is(err, os.ErrNotExist):
			return createKey(path)
		default:
			return nil, fmt.Errorf("node: read node key: %w", err)
		}
	}
	if hexKey == "" {
		k, _, err := crypto.GenerateSecp256k1Key(nil)
		return k, err
	}
	k, err := parseKey(hexKey)
	if err != nil {
		return nil, fmt.Errorf("%w: node key from %s: %w", ErrConfig, source, err)
	}
	return k, nil
}

// parseKey parses a secp256k1 private key given as 64 hex digits (an
// optional 0x prefix); the scalar must be in 1..n-1, n the curve order.
func parseKey(hexKey string) (crypto.PrivKey, error) {
	raw, err := hex.DecodeString(strings.TrimPrefix(hexKey, "0x"))
	if err != nil || len(raw) != 32 {
		return nil, errors.New("want 32 bytes as 64 hex digits (secp256k1)")
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(raw); overflow || s.IsZero() {
		return nil, errors.New("not a secp256k1 private key: zero or not below the curve order")
	}
	return crypto.UnmarshalSecp256k1PrivateKey(raw)
}

func createKey(path string) (crypto.PrivKey, error) {
	k, _, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		return nil, err
	}
	raw, err := k.Raw()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("node: create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("node: write node key: %w", err)
	}
	return k, nil
}

// shards returns the shards of the node's cluster that the relay is
// subscribed to at the time of the call (configured shards, --pubsub-topic,
// content topics and REST subscriptions alike), for metadata; without
// relay, the configured shards, as nwaku mounts metadata with them.
func (n *Node) shards() []uint16 {
	if n.relay == nil {
		return n.cfg.Shards
	}
	return n.clusterShards(n.relay.Topics())
}

// Start subscribes the relay to the node's pubsub topics and starts
// dialling the static nodes. It returns once the subscriptions are made;
// dialling goes on in the background until Stop.
//
// ctx bounds Start itself, not the node's life: when ctx ends before Start
// is done, Start returns an error wrapping ctx.Err(). A node may be started
// once; a second Start, or a Start after Stop, returns ErrStarted. Whether
// Start succeeded or not, Stop releases everything New and Start took.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	again := n.started
	n.started = true
	n.mu.Unlock()
	if again {
		return ErrStarted
	}
	if err := startCanceled(ctx); err != nil {
		return err
	}
	if n.relay != nil {
		for _, t := range n.topics {
			if err := n.relay.Subscribe(t, relay.OwnerConfig); err != nil {
				return err
			}
		}
	}
	peers, err := n.cfg.staticPeers()
	if err != nil {
		return err
	}
	if err := n.startStoreSync(ctx); err != nil {
		return err
	}
	n.startLight()
	if err := n.startDiscovery(); err != nil {
		return err
	}
	if err := startCanceled(ctx); err != nil {
		return err
	}
	if err := n.startHTTP(); err != nil {
		return err
	}
	n.mu.Lock()
	n.static, n.refused = map[peer.ID]bool{}, map[peer.ID]error{}
	for _, pi := range peers {
		n.static[pi.ID] = true
	}
	n.mu.Unlock()
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, pi := range peers {
		n.wg.Add(1)
		go n.keepConnected(runCtx, pi)
	}
	if n.cfg.StoreResume && n.archive != nil {
		n.wg.Add(1)
		go n.resume(runCtx)
	}
	// nwaku logs its totals only along with its metrics server
	// (waku/node/waku_metrics.nim startMetricsServerAndLogging).
	if n.cfg.MetricsServer && n.cfg.MetricsLogging {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			logTotals(runCtx, n.reg, n.cfg.Logger, metricsLogInterval)
		}()
	}
	if err := startCanceled(ctx); err != nil {
		return err
	}
	if err := n.runPeerManager(runCtx, peers); err != nil {
		return err
	}
	n.setState("READY")
	return nil
}

// startCanceled returns an error wrapping ctx.Err() once ctx has ended.
func startCanceled(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("node: start: %w", err)
	}
	return nil
}

// keepConnected dials pi now and again whenever it is not connected. Each
// dial, failed or not, doubles the wait before the next check, from
// StaticRedialMin up to StaticRedialMax; the wait starts over only when
// the peer was found connected at two checks in a row, so a peer that
// drops us soon after each dial is not re-dialled at the shortest wait.
// The first failure of a run of failures is logged as a warning, the
// others at debug level. A peer the metadata check disconnected for its
// cluster is not dialled again: nwaku disconnects such a peer and deletes
// it from its peer store (waku/node/peer_manager/peer_manager.nim
// refreshPeerMetadata), so never dials it again either; that is logged
// once, as a warning.
func (n *Node) keepConnected(ctx context.Context, pi peer.AddrInfo) {
	defer n.wg.Done()
	backoff := n.cfg.StaticRedialMin
	failing, wasConnected := false, false
	for {
		if err := n.staticRefused(pi.ID); err != nil {
			n.cfg.Logger.Warn("static node refused by the metadata check; not dialling it again", "peer", pi.ID, "reason", err)
			return
		}
		connected := n.host.Network().Connectedness(pi.ID) == network.Connected
		switch {
		case connected && wasConnected:
			backoff = n.cfg.StaticRedialMin
		case !connected:
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := n.connect(dctx, pi)
			cancel()
			switch {
			case err != nil && !failing:
				n.cfg.Logger.Warn("static node unreachable; retrying", "peer", pi.ID, "err", err, "retry_in", backoff)
			case err != nil:
				n.cfg.Logger.Debug("static node dial failed", "peer", pi.ID, "err", err, "retry_in", backoff)
			default:
				n.cfg.Logger.Info("connected to static node", "peer", pi.ID)
			}
			failing = err != nil
			backoff = min(backoff*2, n.cfg.StaticRedialMax)
		}
		wasConnected = connected
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refuseStatic records that the metadata check disconnected the static
// node id because of its cluster (metadata.ErrClusterMismatch or
// ErrNoClusterID); other failures, a timeout say, leave it to the backoff.
func (n *Node) refuseStatic(id peer.ID, err error) {
	if !errors.Is(err, metadata.ErrClusterMismatch) && !errors.Is(err, metadata.ErrNoClusterID) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.static[id] {
		n.refused[id] = err
	}
}

// staticRefused returns why the metadata check refused id, or nil.
func (n *Node) staticRefused(id peer.ID) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.refused[id]
}

// Stop shuts the node down: the HTTP servers finish the requests in
// progress (until ctx ends), no new relayed messages arrive, handlers run
// what they have queued, the archive commits everything queued and fsyncs,
// then the host closes its connections. Stop may be called whether or not
// Start was, or succeeded; it runs once, and later calls return nil.
//
// Peers cannot hold Stop: once the HTTP servers stopped, the services get
// StopGrace (5 s) to end their streams; then, or as soon as ctx ends, the
// host's connections are closed, which ends every stream read and write,
// whatever the peers do. What is left is local work (the archive's
// commit).
func (n *Node) Stop(ctx context.Context) error {
	var err error
	n.stopOnce.Do(func() { err = n.stop(ctx) })
	return err
}

// StopGrace is how long Stop lets the services end their streams with
// peers before it closes the host's connections.
const StopGrace = 5 * time.Second

func (n *Node) stop(ctx context.Context) error {
	n.mu.Lock()
	n.started = true // no Start after Stop
	n.mu.Unlock()
	n.setState("SHUTTING_DOWN")
	herr := n.stopHTTP(ctx)
	if n.cancel != nil {
		n.cancel()
	}
	defer n.dropPeersAfter(ctx, StopGrace)()
	n.wg.Wait()
	return errors.Join(herr, n.closeParts())
}

// dropPeersAfter closes the host's network, and so every connection and
// stream, once grace has passed or ctx ended, whichever is first, unless
// the returned func is called before.
func (n *Node) dropPeersAfter(ctx context.Context, grace time.Duration) (cancel func()) {
	if n.host == nil {
		return func() {}
	}
	var once sync.Once
	drop := func() {
		once.Do(func() {
			n.cfg.Logger.Warn("stop: services still busy with peers; closing the connections", "grace", grace)
			n.host.Network().Close()
		})
	}
	timer := time.AfterFunc(grace, drop)
	stopCtx := context.AfterFunc(ctx, drop)
	return func() {
		timer.Stop()
		stopCtx()
	}
}

func (n *Node) isStatic(id peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.static[id]
}

func (n *Node) getState() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

func (n *Node) closeParts() error {
	errs := []error{n.closeLight(), n.closeStore()}
	if n.relay != nil {
		errs = append(errs, n.relay.Close())
	}
	if n.storeSync != nil {
		errs = append(errs, n.storeSync.Close())
	}
	if n.archive != nil {
		errs = append(errs, n.archive.Close())
	}
	if n.metadata != nil {
		errs = append(errs, n.metadata.Close())
	}
	if n.ping != nil {
		n.host.RemoveStreamHandler(ping.ID)
	}
	if n.host != nil {
		errs = append(errs, n.host.Close())
	}
	n.closeDiscovery()
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	return errors.Join(errs...)
}

func (n *Node) setState(s string) {
	n.mu.Lock()
	n.state = s
	n.mu.Unlock()
}

// Publish relays msg on pubsubTopic. A zero timestamp is set to the current
// time first, as nwaku's publish does; msg must not be modified afterwards.
func (n *Node) Publish(ctx context.Context, pubsubTopic string, msg *message.Message) (*message.Envelope, error) {
	if n.relay == nil {
		return nil, ErrNotRelaying
	}
	if msg.Timestamp == 0 {
		msg.Timestamp = time.Now().UnixNano()
	}
	env, err := n.relay.Publish(ctx, pubsubTopic, msg)
	if err != nil {
		n.nwaku.nodeErrors.WithLabelValues("publish_failure").Inc()
	}
	return env, err
}

// PublishWith relays on pubsubTopic a message of msg's fields with a
// payload of payloadLen bytes that fill writes straight into the encoding
// (relay.Relay.PublishWith): the payload is written once, never copied. A
// zero timestamp is set as Publish does.
func (n *Node) PublishWith(ctx context.Context, pubsubTopic string, msg *message.Message, payloadLen int, fill func(payload []byte) error) (*message.Envelope, error) {
	if n.relay == nil {
		return nil, ErrNotRelaying
	}
	if msg.Timestamp == 0 {
		msg.Timestamp = time.Now().UnixNano()
	}
	return n.relay.PublishWith(ctx, pubsubTopic, msg, payloadLen, fill)
}

// Host returns the libp2p host.
func (n *Node) Host() host.Host { return n.host }

// Relay returns the relay service, nil when relay is off.
func (n *Node) Relay() *relay.Relay { return n.relay }

// Archive returns the archive, nil when store is off.
func (n *Node) Archive() archive.Archive { return n.archive }

// Counters returns the node's codec and hash counters.
func (n *Node) Counters() *message.Counters { return n.cfg.Counters }

// Metadata returns the metadata service.
func (n *Node) Metadata() *metadata.Service { return n.metadata }

// Autosharding returns the node's autosharding of content topics; ok is
// false under static sharding (NumShardsInNetwork 0).
func (n *Node) Autosharding() (a shard.Autosharding, ok bool) {
	if n.auto == nil {
		return shard.Autosharding{}, false
	}
	return *n.auto, true
}

// startTopics returns the pubsub topics relayed from the start: the
// configured shards and pubsub topics and, under autosharding, the shards
// of the configured content topics, each once.
func (n *Node) startTopics() ([]string, error) {
	topics := n.cfg.pubsubTopics()
	if len(n.cfg.ContentTopics) > 0 && n.auto == nil {
		n.cfg.Logger.Warn("static sharding: --content-topic gives no shard to relay, as in nwaku; set --num-shards-in-network for autosharding",
			"content_topics", n.cfg.ContentTopics)
	}
	if n.auto != nil {
		for _, ct := range n.cfg.ContentTopics {
			t, err := n.auto.PubsubTopic(ct)
			if err != nil {
				return nil, fmt.Errorf("%w: --content-topic %s: %w", ErrConfig, ct, err)
			}
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

// ListenAddresses returns the host's listen addresses with /p2p/<id>.
// Secure WebSocket is written /wss, as nwaku writes it, where go-libp2p
// writes the equivalent /tls/ws.
func (n *Node) ListenAddresses() []string {
	var out []string
	for _, a := range n.host.Addrs() {
		s := strings.Replace(a.String(), "/tls/ws", "/wss", 1)
		out = append(out, fmt.Sprintf("%s/p2p/%s", s, n.host.ID()))
	}
	return out
}
