// Package restapi is the node as its REST API sees it: the backends of
// rest.Config over the node's parts, which the node hands it (API).
package restapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/node/internal/metrics"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/internal/rlnnode"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// API implements every rest backend over the node's parts. Which of them
// a node mounts is Config's choice.
type API struct {
	Host        host.Host
	PeerManager *peers.Manager
	Metadata    *metadata.Service
	Metrics     *metrics.Metrics
	Counters    *message.Counters
	// NodeVersion is the node's version string.
	NodeVersion string
	// NodeHealth computes the node's health report.
	NodeHealth func() rest.Health
	// Auto is the node's autosharding, nil under static sharding.
	Auto      *shard.Autosharding
	ClusterID uint16
	// Relay is the node's relay, nil without relay; Subscribe subscribes
	// it to pubsub topics for the REST API (relay.OwnerREST) once the
	// metadata protocol would carry their shards; Publish publishes with
	// the payload written in place (node.Node.PublishWith).
	Relay     *relay.Relay
	Subscribe func(pubsubTopics []string) error
	Publish   func(ctx context.Context, pubsubTopic string, msg *message.Message, payloadLen int, fill func([]byte) error) error
	// Archive is the archive the node's store serves, nil when it serves
	// none; StorePeer returns the store node queried without a peerAddr.
	Archive   archive.Archive
	StorePeer func() peer.ID
	// SelectPeer picks the service peer of a light client's codec
	// (node.Node.SelectServicePeer).
	SelectPeer      func(codec protocol.ID) (peer.ID, bool)
	LightpushClient *lightpush.Client
	FilterClient    *filter.Client
	// FilterServer is the node's filter service, nil without --filter.
	FilterServer *filter.Service
	// LogLevel is the level POST /admin/v1/log-level sets, nil when fixed.
	LogLevel *slog.LevelVar
}

// Config returns cfg with the backends a node mounts, as nwaku's builder
// installs its routes (waku/rest_api/endpoint/builder.nim
// startRestServerProtocolSupport): relay with a Relay, the filter
// service's admin listing with a FilterServer, /admin with admin; store
// and the lightpush and filter clients on every node, as nwaku mounts the
// clients on every node (waku/factory/node_factory.nim).
func (a *API) Config(cfg rest.Config, admin bool) rest.Config {
	cfg.Node, cfg.Store, cfg.Lightpush, cfg.Filter = a, a, a, a
	if a.Relay != nil {
		cfg.Relay = a
	}
	if a.FilterServer != nil {
		cfg.FilterService = a
	}
	if admin {
		cfg.Admin = a
	}
	return cfg
}

// Info, Version, Health and ContentTopicShard are rest.NodeBackend's.

func (a *API) Info() rest.Info {
	return rest.Info{ListenAddresses: a.PeerManager.Announced(), ENRURI: a.PeerManager.ENR()}
}

func (a *API) Version() string { return a.NodeVersion }

func (a *API) Health() rest.Health { return a.NodeHealth() }

func (a *API) ContentTopicShard(ct string) (string, error) {
	if a.Auto == nil {
		return "", rest.ErrAutoshardingDisabled
	}
	return a.Auto.PubsubTopic(ct)
}

// RelaySubscribe and the methods below it to ShardPeers are
// rest.RelayBackend's, mounted with relay on.

func (a *API) RelaySubscribe(topics []string) error {
	return a.Subscribe(topics)
}

func (a *API) RelayUnsubscribe(topics []string) error {
	for _, t := range topics {
		if err := a.Relay.Unsubscribe(t, relay.OwnerREST); err != nil && !errors.Is(err, relay.ErrNotSubscribed) {
			return err
		}
	}
	return nil
}

// RelayPublish publishes through Publish; a message the relay's
// validators refuse is rest.ErrInvalidMessage. With RLN relay, nwaku's
// answers follow from the errors' texts: a proof that could not be made
// (rlnnode.ProofError) is answered 500 "Failed to publish: error appending
// RLN proof to message: ...", a message the RLN validator refuses
// (rlnnode.ErrInvalid) 400 "Failed to publish: RLN validation failed".
func (a *API) RelayPublish(ctx context.Context, topic string, msg *message.Message, n int, fill func([]byte) error) error {
	if !slices.Contains(a.Relay.Topics(), topic) {
		return fmt.Errorf("%w: %s", rest.ErrNotSubscribed, topic)
	}
	err := a.Publish(ctx, topic, msg, n, fill)
	switch {
	case errors.Is(err, rlnnode.ErrInvalid):
		return invalidMessage{err}
	case errors.Is(err, relay.ErrInvalid):
		return fmt.Errorf("%w: %w", rest.ErrInvalidMessage, err)
	}
	return err
}

// invalidMessage is a rest.ErrInvalidMessage answered with err's text
// alone.
type invalidMessage struct{ err error }

func (e invalidMessage) Error() string   { return e.err.Error() }
func (e invalidMessage) Unwrap() []error { return []error{rest.ErrInvalidMessage, e.err} }

func (a *API) RelayTopicPeers(topic string) int { return len(a.Relay.TopicPeers(topic)) }

// RelayPeers gives, per static-shard pubsub topic the relay is subscribed
// to, ascending by shard, the peers gossipsub knows on it or those in its
// mesh (relay.Relay.TopicPeers, MeshPeers).
func (a *API) RelayPeers(mesh bool) []rest.PeersOfShard {
	var out []rest.PeersOfShard
	for _, t := range a.Relay.Topics() {
		rs, err := shard.ParsePubsubTopic(t)
		if err != nil {
			continue // a named topic: nwaku lists static shards only
		}
		out = append(out, rest.PeersOfShard{Shard: rs.ShardID, Peers: a.topicPeers(t, mesh)})
	}
	slices.SortFunc(out, func(x, y rest.PeersOfShard) int { return cmp.Compare(x.Shard, y.Shard) })
	return out
}

// ShardPeers is RelayPeers for the shard of the node's cluster.
func (a *API) ShardPeers(s uint16, mesh bool) []rest.Peer {
	return a.topicPeers(shard.RelayShard{ClusterID: a.ClusterID, ShardID: s}.PubsubTopic(), mesh)
}

// topicPeers returns the relay peers of pubsubTopic (or its mesh peers),
// sorted by peer id, each with its gossipsub score. A peer gossipsub has
// not scored yet (before its first heartbeat) has score 0, the score nwaku
// starts a peer at (nim-libp2p pubsubpeer.nim).
func (a *API) topicPeers(pubsubTopic string, mesh bool) []rest.Peer {
	var ids []peer.ID
	if mesh {
		ids = a.Relay.MeshPeers(pubsubTopic)
	} else {
		ids = a.Relay.TopicPeers(pubsubTopic)
		slices.Sort(ids)
	}
	out := make([]rest.Peer, 0, len(ids))
	for _, id := range ids {
		p := a.peer(id)
		score, _ := a.Relay.PeerScore(id)
		p.Score = (*rest.Score)(&score)
		out = append(out, p)
	}
	return out
}

// StoreLocal and StoreRemote are rest.StoreBackend's.

// StoreLocal answers from the node's own archive.
func (a *API) StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error) {
	if a.Archive == nil {
		return nil, rest.ErrNoLocalStore
	}
	return store.Answer(ctx, a.Archive, req)
}

// StoreRemote asks peerAddr, else StorePeer.
func (a *API) StoreRemote(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error) {
	p := a.StorePeer()
	if peerAddr != "" {
		pi, err := parsePeerAddr(peerAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", rest.ErrPeerAddr, err)
		}
		if a.Host.Network().Connectedness(pi.ID) != network.Connected {
			a.Host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.TempAddrTTL)
		}
		p = pi.ID
	}
	if p == "" {
		return nil, rest.ErrNoStorePeer
	}
	return store.Query(ctx, a.Host, p, req, a.Counters)
}

// Lightpush and LightpushLegacy are rest.LightpushBackend's: to the
// selected service peer. nwaku v0.38.1 always mounts the lightpush client,
// so its REST handler never uses the node's own service
// (useSelfHostedLightPush is false): a node serving lightpush pushes
// through another peer too.
func (a *API) Lightpush(ctx context.Context, req lightpush.Request) (lightpush.Response, error) {
	p, ok := a.SelectPeer(lightpush.ProtocolID)
	if !ok {
		return lightpush.Response{}, a.noServicePeer()
	}
	return a.LightpushClient.Send(ctx, p, req)
}

// LightpushLegacy pushes with lightpush v2.
func (a *API) LightpushLegacy(ctx context.Context, pubsubTopic string, msg *message.Message) error {
	p, ok := a.SelectPeer(lightpush.LegacyProtocolID)
	if !ok {
		return a.noServicePeer()
	}
	if pubsubTopic == "" {
		t, err := a.ContentTopicShard(msg.ContentTopic)
		if err != nil {
			return &lightpush.StatusError{Desc: "Pubsub topic must be specified when static sharding is enabled"}
		}
		pubsubTopic = t
	}
	req := lightpush.LegacyRequest{PubsubTopic: pubsubTopic, Message: msg.Encode(a.Counters)}
	return a.LightpushClient.SendLegacy(ctx, p, req)
}

// FilterService is rest.FilterBackend's: requests go to the service peer
// selected once for the REST call. A subscribe or unsubscribe that fails
// or is refused counts in waku_node_errors as nwaku's filter API counts it
// (waku/node/kernel_api/filter.nim: subscribe_filter_failure,
// unsubscribe_filter_failure).
func (a *API) FilterService() (rest.FilterSender, error) {
	p, ok := a.SelectPeer(filter.SubscribeProtocolID)
	if !ok {
		return nil, a.noServicePeer()
	}
	c, m := a.FilterClient, a.Metrics
	return func(ctx context.Context, req filter.SubscribeRequest) (filter.SubscribeResponse, error) {
		resp, err := c.Request(ctx, p, req)
		if err != nil || resp.StatusCode != filter.StatusOK {
			switch req.Type {
			case filter.Subscribe:
				m.NodeError("subscribe_filter_failure")
			case filter.Unsubscribe, filter.UnsubscribeAll:
				m.NodeError("unsubscribe_filter_failure")
			}
		}
		return resp, err
	}, nil
}

// noServicePeer is the error of a REST light request with no service
// peer: nwaku answers "none discovered" when discv5 runs (its discovery
// handler found nothing), "no discovery method" otherwise
// (waku/rest_api/endpoint/lightpush/handlers.nim). Courier's discv5 feeds
// the peer manager continuously, so the peers it found are already
// candidates; no extra lookup is made per request.
func (a *API) noServicePeer() error {
	if a.PeerManager.Discv5Running() {
		return rest.ErrNoneDiscovered
	}
	return rest.ErrNoServicePeer
}

// FilterSubscriptions is rest.FilterServiceBackend's, mounted with
// --filter.
func (a *API) FilterSubscriptions() []filter.PeerSubscriptions {
	return a.FilterServer.Subscriptions()
}

// Peers and the methods below it are rest.AdminBackend's, mounted with
// --rest-admin.

func (a *API) Peers() []rest.Peer {
	var out []rest.Peer
	for _, id := range a.Host.Peerstore().Peers() {
		if id == a.Host.ID() {
			continue
		}
		out = append(out, a.peer(id))
	}
	return out
}

func (a *API) peer(id peer.ID) rest.Peer {
	ps := a.Host.Peerstore()
	p := rest.Peer{Protocols: []string{}, Shards: []uint16{}, Connected: state.NotConnected, Origin: state.UnknownOrigin}
	if addrs := ps.Addrs(id); len(addrs) > 0 {
		p.Multiaddr = fmt.Sprintf("%s/p2p/%s", addrs[0], id)
	} else {
		p.Multiaddr = "/p2p/" + id.String()
	}
	// Sorted: the peerstore keeps no order (nwaku lists them in the order
	// of the peer's identify message).
	if protos, err := ps.GetProtocols(id); err == nil {
		for _, pr := range protos {
			p.Protocols = append(p.Protocols, string(pr))
		}
		slices.Sort(p.Protocols)
	}
	info, ok := a.Metadata.Peer(id)
	p.Shards = a.PeerManager.KnownShards(id, info.Shards, ok)
	p.Connected = a.PeerManager.Connectedness(id)
	if agent, err := ps.Get(id, "AgentVersion"); err == nil {
		p.Agent, _ = agent.(string)
	}
	p.Origin = a.PeerManager.Origin(id)
	return p
}

// ParsePeer checks a multiaddr with /p2p/<id>.
func (a *API) ParsePeer(addr string) error {
	_, err := parsePeerAddr(addr)
	return err
}

func parsePeerAddr(addr string) (*peer.AddrInfo, error) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return nil, err
	}
	return peer.AddrInfoFromP2pAddr(m)
}

// ConnectPeer keeps the peer's addresses and dials it; a failed dial
// leaves it CannotConnect.
func (a *API) ConnectPeer(ctx context.Context, addr string) error {
	pi, err := parsePeerAddr(addr)
	if err != nil {
		return err
	}
	a.Host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	return a.PeerManager.Connect(ctx, *pi)
}

// SetLogLevel sets LogLevel by nwaku's level names.
func (a *API) SetLogLevel(level string) error {
	if a.LogLevel == nil {
		return errors.New("the log level of this node is fixed")
	}
	l, ok := map[string]slog.Level{
		"TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo, "NOTICE": slog.LevelInfo + 2,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4,
	}[level]
	if !ok {
		return fmt.Errorf("unknown log level %q", level)
	}
	a.LogLevel.Set(l)
	return nil
}
