package node

import (
	"context"
	cryptotls "crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/dirlock"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/node/internal/archivegate"
	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/internal/metrics"
	"github.com/couriernet/courier/node/internal/nodekey"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/internal/resume"
	"github.com/couriernet/courier/node/internal/rlnnode"
	"github.com/couriernet/courier/peerexchange"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/shard"
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
	cfg     *plan
	host    host.Host
	relay   *relay.Relay    // nil when relay is off
	archive archive.Archive // nil when store is off
	store   storeParts
	light   light
	// shardMu is held from the shard-count check of a relay subscription
	// (checkMoreShards) until the subscription is made.
	shardMu sync.Mutex
	// recordMu orders the ENR's shard updates (syncRecordShards).
	recordMu sync.Mutex
	metadata *metadata.Service
	peers    *peers.Manager
	http     httpParts
	health   health.Monitor
	metrics  *metrics.Metrics
	rln      *rlnnode.RLN // nil without RLN relay
	lock     *os.File     // flock on DataDir/LOCK
	life     lifecycle
}

// lifecycle is the node's state through Start and Stop.
type lifecycle struct {
	mu      sync.Mutex
	state   string // INITIALIZING, READY, SHUTTING_DOWN (state.HealthStatus)
	started bool   // Start or Stop has been called
	// cancel ends what Start began; wg waits for it.
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// New builds a node from cfg without starting it: it resolves the
// configuration (every field is checked here; an error wraps ErrConfig and
// names the field's flag), loads or creates the node key, opens the
// archive and creates the libp2p host (already listening) with relay and
// metadata mounted.
func New(cfg Config) (*Node, error) {
	p, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if len(p.ContentTopics) > 0 && p.auto == nil {
		p.Logger.Warn("static sharding: --content-topic gives no shard to relay, as in nwaku; set --num-shards-in-network for autosharding",
			"content_topics", p.ContentTopics)
	}
	n := &Node{cfg: p, store: storeParts{resumeLimits: resume.DefaultLimits}, metrics: metrics.New(), life: lifecycle{state: "INITIALIZING"}}
	if err := n.build(); err != nil {
		return nil, errors.Join(err, n.closeParts())
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
	key, err := n.loadKey()
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
	if n.cfg.Store {
		if err := n.openArchive(); err != nil {
			return err
		}
	}
	if n.host, err = n.newHost(key); err != nil {
		return err
	}
	n.peers = peers.New(n.host, key, n.cfg.peers)
	ping.NewPingService(n.host) // unmounted by closeParts
	if n.cfg.Relay {
		rc := relay.Config{Counters: n.cfg.Counters, ArchiveDone: n.cfg.OnArchived, HandlerQueueSize: n.cfg.RelayHandlerQueue, Logger: n.cfg.Logger,
			PeerTopics: n.cfg.isClusterTopic, OnTopicsChanged: n.syncRecordShards}
		n.metrics.ObserveRelay(&rc)
		if err := n.buildRLN(&rc); err != nil {
			return err
		}
		switch {
		case n.archive != nil && n.cfg.ArchiveTimestampDrift > 0:
			n.store.gate = archivegate.New(n.archive, n.cfg.ArchiveTimestampDrift)
			rc.Archive = n.store.gate
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
	n.metadata, err = metadata.New(n.host, metadata.Config{ClusterID: n.cfg.ClusterID, Shards: n.shards, OnChecked: n.onMetadataChecked, Logger: n.cfg.Logger})
	if err != nil {
		return err
	}
	if err := n.newREST(); err != nil {
		return err
	}
	n.metrics.SetSources(n.metricSources())
	return nil
}

// newHost makes the libp2p host (peers.NewHost) of the configuration, with
// the node's resource manager (peers.ResourceManager) and the certificate
// for secure WebSocket loaded.
func (n *Node) newHost(key crypto.PrivKey) (host.Host, error) {
	hc := peers.HostConfig{MaxConnections: n.cfg.MaxConnections, AgentString: n.cfg.AgentString, WebSocket: n.cfg.WebSocket,
		PortMapping: n.cfg.Discovery.portMapping(), Listen: n.cfg.listen, Registerer: n.metrics.Registry(),
		Wire: n.metrics.Wire()}
	// By default yamux first, then mplex for js-libp2p clients (js-waku),
	// which speak nothing else; nwaku offers both.
	for _, m := range n.cfg.Muxers {
		hc.Mplex = append(hc.Mplex, m == MuxerMplex)
	}
	rm, err := peers.ResourceManager(n.cfg.MaxConnections, n.cfg.Discovery.IPColocationLimit)
	if err != nil {
		return nil, err
	}
	hc.ResourceManager = rm
	if n.cfg.WebSocketSecure {
		cert, err := cryptotls.LoadX509KeyPair(n.cfg.WebSocketSecureCertPath, n.cfg.WebSocketSecureKeyPath)
		if err != nil {
			return nil, fmt.Errorf("node: secure WebSocket certificate: %w", err)
		}
		hc.WSSCert = &cert
	}
	return peers.NewHost(key, hc)
}

// loadKey returns the key of --nodekey, else the one kept in DataDir
// (created on the first start), else an ephemeral one.
func (n *Node) loadKey() (crypto.PrivKey, error) {
	if n.cfg.key != nil {
		return n.cfg.key, nil
	}
	key, err := nodekey.Load(n.cfg.DataDir)
	var invalid *nodekey.InvalidError
	if errors.As(err, &invalid) {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return key, err
}

// shards returns the shards of the node's cluster that the relay is
// subscribed to at the time of the call (configured shards, --pubsub-topic,
// content topics and REST subscriptions alike), for metadata; without
// relay, the configured shards, as nwaku mounts metadata with them.
func (n *Node) shards() []uint16 {
	if n.relay == nil {
		return n.cfg.Shards
	}
	return n.cfg.clusterShards(n.relay.Topics())
}

// syncRecordShards makes the ENR announce the shards the relay follows
// now (peers.Manager.SetRelayShards); recordMu keeps concurrent changes
// from leaving an older set in the record.
func (n *Node) syncRecordShards() {
	if n.relay == nil {
		return
	}
	n.recordMu.Lock()
	defer n.recordMu.Unlock()
	n.peers.SetRelayShards(n.shards())
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
	n.life.mu.Lock()
	again := n.life.started
	n.life.started = true
	n.life.mu.Unlock()
	if again {
		return ErrStarted
	}
	if err := startCanceled(ctx); err != nil {
		return err
	}
	if err := n.startRLN(ctx); err != nil {
		return err
	}
	if n.relay != nil {
		for _, t := range n.cfg.topics {
			if err := n.relay.Subscribe(t, relay.OwnerConfig); err != nil {
				return err
			}
		}
	}
	if err := n.startStoreSync(ctx); err != nil {
		return err
	}
	n.startLight()
	if err := n.peers.Start(ctx); err != nil {
		return err
	}
	n.syncRecordShards()
	if err := startCanceled(ctx); err != nil {
		return err
	}
	if err := n.startHTTP(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.life.cancel = cancel
	if n.cfg.StoreResume && n.archive != nil {
		rc := resume.Config{Host: n.host, Archive: n.archive, Peer: n.connectedStorePeer, Counters: n.cfg.Counters,
			Limits: n.store.resumeLimits, Logger: n.cfg.Logger}
		if n.store.sync != nil {
			rc.Archived = n.store.sync.Ingest
		}
		n.life.wg.Add(1)
		go func() {
			defer n.life.wg.Done()
			resume.Run(runCtx, rc)
		}()
	}
	// nwaku logs its totals only along with its metrics server
	// (waku/node/waku_metrics.nim startMetricsServerAndLogging).
	if n.cfg.MetricsServer && n.cfg.MetricsLogging {
		n.life.wg.Add(1)
		go func() {
			defer n.life.wg.Done()
			metrics.LogTotals(runCtx, n.metrics.Registry(), n.cfg.Logger, metrics.LogInterval)
		}()
	}
	if err := startCanceled(ctx); err != nil {
		return err
	}
	n.peers.Run(runCtx)
	if n.cfg.Discovery.PeerExchange {
		n.health.Mount(health.PeerExchange, peerexchange.ProtocolID)
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
	n.life.stopOnce.Do(func() { err = n.stop(ctx) })
	return err
}

// StopGrace is how long Stop lets the services end their streams with
// peers before it closes the host's connections.
const StopGrace = 5 * time.Second

func (n *Node) stop(ctx context.Context) error {
	n.life.mu.Lock()
	n.life.started = true // no Start after Stop
	n.life.mu.Unlock()
	n.setState("SHUTTING_DOWN")
	herr := n.stopHTTP(ctx)
	if n.life.cancel != nil {
		n.life.cancel()
	}
	defer peers.DropAfter(ctx, n.host, StopGrace, n.cfg.Logger)()
	n.life.wg.Wait()
	return errors.Join(herr, n.closeParts())
}

func (n *Node) getState() string {
	n.life.mu.Lock()
	defer n.life.mu.Unlock()
	return n.life.state
}

func (n *Node) closeParts() error {
	if n.peers != nil {
		n.peers.Close()
	}
	errs := []error{n.closeLight(), n.closeStore()}
	if n.rln != nil {
		errs = append(errs, n.rln.ClosePublisher())
	}
	if n.relay != nil {
		errs = append(errs, n.relay.Close())
	}
	if n.rln != nil {
		n.rln.CloseMembership()
	}
	if n.store.sync != nil {
		errs = append(errs, n.store.sync.Close())
	}
	if n.archive != nil {
		errs = append(errs, n.archive.Close())
	}
	if n.metadata != nil {
		errs = append(errs, n.metadata.Close())
	}
	if n.host != nil {
		n.host.RemoveStreamHandler(ping.ID)
		errs = append(errs, n.host.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	return errors.Join(errs...)
}

func (n *Node) setState(s string) {
	n.life.mu.Lock()
	n.life.state = s
	n.life.mu.Unlock()
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
	if n.rln != nil {
		return n.publishRLN(ctx, pubsubTopic, msg)
	}
	env, err := n.relay.Publish(ctx, pubsubTopic, msg)
	if err != nil {
		n.metrics.NodeError("publish_failure")
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
	if n.rln != nil {
		return n.publishWithRLN(ctx, pubsubTopic, msg, payloadLen, fill)
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
	if n.cfg.auto == nil {
		return shard.Autosharding{}, false
	}
	return *n.cfg.auto, true
}

// ListenAddresses returns the host's listen addresses with /p2p/<id>.
// Secure WebSocket is written /wss, as nwaku writes it, where go-libp2p
// writes the equivalent /tls/ws.
func (n *Node) ListenAddresses() []string { return peers.ListenAddresses(n.host) }

// onMetadataChecked tells the peer manager what the metadata check of id
// found.
func (n *Node) onMetadataChecked(id peer.ID, err error) {
	var shards []uint16
	if err == nil {
		info, ok := n.metadata.Peer(id)
		if !ok {
			return
		}
		shards = info.Shards
	}
	n.peers.MetadataChecked(id, shards, err)
}

// PeerStats returns a copy of the peer manager's counters.
func (n *Node) PeerStats() PeerStats { return PeerStats(n.peers.Stats()) }

// PeerExchangeStats returns the peer exchange server's and client's
// counters (zero values for what does not run).
func (n *Node) PeerExchangeStats() (peerexchange.ServerStats, peerexchange.ClientStats) {
	s := n.peers.DiscoveryStats()
	return s.PxServer, s.PxClient
}

// ENR returns the node's current record in its text form, "enr:...", or ""
// before Start.
func (n *Node) ENR() string { return n.peers.ENR() }

// PeerStats counts the peer manager's work. Take a copy with
// Node.PeerStats.
type PeerStats struct {
	Added          uint64 // peers learned (any origin)
	Dials          uint64 // dials of discovered peers
	DialFailures   uint64 // of which failed
	Removed        uint64 // peers forgotten after five failed dials (nwaku's MaxFailedAttempts)
	MetadataPruned uint64 // peers forgotten after failing the metadata check
	Colocation     uint64 // connections closed over the IP colocation limit
	InboundPruned  uint64 // inbound relay connections closed over the target
	StoreFull      uint64 // peers not kept: the store was full of connected ones
	DNSFailures    uint64 // DNS trees that could not be fetched or verified
	DNSRejected    uint64 // records of DNS trees whose Waku fields did not decode
	// StorageFailures and StorageLoadFailures count failed writes and
	// reads of DataDir/peers.json (Config.PeerPersistence).
	StorageFailures, StorageLoadFailures uint64
}
