package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// restAPI is the node as the REST API sees it: the backends of rest.Config,
// over the node's parts. It is the Node itself under another method set.
type restAPI Node

// newREST builds the REST API with the backends the configuration mounts,
// as nwaku's builder installs its routes (waku/rest_api/endpoint/builder.nim
// startRestServerProtocolSupport): relay with relay on, the filter
// service's admin listing with --filter, /admin with --rest-admin; store
// and the lightpush and filter clients on every node, as nwaku mounts the
// clients on every node (waku/factory/node_factory.nim). The listener is
// bound at Start.
func (n *Node) newREST() error {
	if !n.cfg.REST {
		return nil
	}
	api := (*restAPI)(n)
	rc := rest.Config{Node: api, Store: api, Lightpush: api, Filter: api,
		CacheSize: n.cfg.RESTCacheCapacity, AllowOrigin: n.cfg.RESTAllowOrigin, Logger: n.cfg.Logger}
	if n.relay != nil {
		rc.Relay = api
	}
	if n.cfg.Filter {
		rc.FilterService = api
	}
	if n.cfg.RESTAdmin {
		rc.Admin = api
	}
	srv, err := rest.New(rc)
	if err != nil {
		return fmt.Errorf("%w: REST API: %w", ErrConfig, err)
	}
	n.http.rest = srv
	n.light.onFilterPush = srv.DeliverFilter
	return nil
}

// node returns the Node under its own method set.
func (a *restAPI) node() *Node { return (*Node)(a) }

// Info, Version, Health and ContentTopicShard are rest.NodeBackend's.

func (a *restAPI) Info() rest.Info {
	return rest.Info{ListenAddresses: a.peers.Announced(), ENRURI: a.node().ENR()}
}

func (a *restAPI) Version() string { return Version }

func (a *restAPI) Health() rest.Health { return a.node().healthReport() }

func (a *restAPI) ContentTopicShard(ct string) (string, error) {
	if a.cfg.auto == nil {
		return "", rest.ErrAutoshardingDisabled
	}
	return a.cfg.auto.PubsubTopic(ct)
}

// RelaySubscribe and the methods below it to ShardPeers are
// rest.RelayBackend's, mounted with relay on.

func (a *restAPI) RelaySubscribe(topics []string) error {
	a.shardMu.Lock()
	defer a.shardMu.Unlock()
	if err := a.node().checkMoreShards(topics); err != nil {
		return err
	}
	for _, t := range topics {
		if err := a.relay.Subscribe(t, relay.OwnerREST); err != nil {
			return err
		}
	}
	return nil
}

func (a *restAPI) RelayUnsubscribe(topics []string) error {
	for _, t := range topics {
		if err := a.relay.Unsubscribe(t, relay.OwnerREST); err != nil && !errors.Is(err, relay.ErrNotSubscribed) {
			return err
		}
	}
	return nil
}

// RelayPublish publishes through Node.PublishWith; a message the relay's
// validators refuse is rest.ErrInvalidMessage.
func (a *restAPI) RelayPublish(ctx context.Context, topic string, msg *message.Message, n int, fill func([]byte) error) error {
	if !slices.Contains(a.relay.Topics(), topic) {
		return fmt.Errorf("%w: %s", rest.ErrNotSubscribed, topic)
	}
	_, err := a.node().PublishWith(ctx, topic, msg, n, fill)
	if errors.Is(err, relay.ErrInvalid) {
		return fmt.Errorf("%w: %w", rest.ErrInvalidMessage, err)
	}
	return err
}

func (a *restAPI) RelayTopicPeers(topic string) int { return len(a.relay.TopicPeers(topic)) }

// RelayPeers gives, per static-shard pubsub topic the relay is subscribed
// to, ascending by shard, the peers gossipsub knows on it or those in its
// mesh (relay.Relay.TopicPeers, MeshPeers).
func (a *restAPI) RelayPeers(mesh bool) []rest.PeersOfShard {
	var out []rest.PeersOfShard
	for _, t := range a.relay.Topics() {
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
func (a *restAPI) ShardPeers(s uint16, mesh bool) []rest.Peer {
	return a.topicPeers(shard.RelayShard{ClusterID: a.cfg.ClusterID, ShardID: s}.PubsubTopic(), mesh)
}

// topicPeers returns the relay peers of pubsubTopic (or its mesh peers),
// sorted by peer id, each with its gossipsub score. A peer gossipsub has
// not scored yet (before its first heartbeat) has score 0, the score nwaku
// starts a peer at (nim-libp2p pubsubpeer.nim).
func (a *restAPI) topicPeers(pubsubTopic string, mesh bool) []rest.Peer {
	var ids []peer.ID
	if mesh {
		ids = a.relay.MeshPeers(pubsubTopic)
	} else {
		ids = a.relay.TopicPeers(pubsubTopic)
		slices.Sort(ids)
	}
	out := make([]rest.Peer, 0, len(ids))
	for _, id := range ids {
		p := a.peer(id)
		score, _ := a.relay.PeerScore(id)
		p.Score = (*rest.Score)(&score)
		out = append(out, p)
	}
	return out
}

// StoreLocal and StoreRemote are rest.StoreBackend's.

// StoreLocal answers from the node's own archive.
func (a *restAPI) StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error) {
	if a.store.server == nil {
		return nil, rest.ErrNoLocalStore
	}
	return store.Answer(ctx, a.archive, req)
}

// StoreRemote asks peerAddr, else Node.StorePeer.
func (a *restAPI) StoreRemote(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error) {
	p := a.node().StorePeer()
	if peerAddr != "" {
		pi, err := parsePeerAddr(peerAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", rest.ErrPeerAddr, err)
		}
		if a.host.Network().Connectedness(pi.ID) != network.Connected {
			a.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.TempAddrTTL)
		}
		p = pi.ID
	}
	if p == "" {
		return nil, rest.ErrNoStorePeer
	}
	return store.Query(ctx, a.host, p, req, a.cfg.Counters)
}

// Lightpush and LightpushLegacy are rest.LightpushBackend's: to the
// selected service peer. nwaku v0.38.1 always mounts the lightpush client,
// so its REST handler never uses the node's own service
// (useSelfHostedLightPush is false): a node serving lightpush pushes
// through another peer too.
func (a *restAPI) Lightpush(ctx context.Context, req lightpush.Request) (lightpush.Response, error) {
	p, ok := a.node().SelectServicePeer(lightpush.ProtocolID)
	if !ok {
		return lightpush.Response{}, a.noServicePeer()
	}
	return a.light.lightpushClient.Send(ctx, p, req)
}

// LightpushLegacy pushes with lightpush v2.
func (a *restAPI) LightpushLegacy(ctx context.Context, pubsubTopic string, msg *message.Message) error {
	p, ok := a.node().SelectServicePeer(lightpush.LegacyProtocolID)
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
	req := lightpush.LegacyRequest{PubsubTopic: pubsubTopic, Message: msg.Encode(a.cfg.Counters)}
	return a.light.lightpushClient.SendLegacy(ctx, p, req)
}

// FilterService is rest.FilterBackend's: requests go to the service peer
// selected once for the REST call. A subscribe or unsubscribe that fails
// or is refused counts in waku_node_errors as nwaku's filter API counts it
// (waku/node/kernel_api/filter.nim: subscribe_filter_failure,
// unsubscribe_filter_failure).
func (a *restAPI) FilterService() (rest.FilterSender, error) {
	p, ok := a.node().SelectServicePeer(filter.SubscribeProtocolID)
	if !ok {
		return nil, a.noServicePeer()
	}
	c, m := a.light.filterClient, a.metrics
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
func (a *restAPI) noServicePeer() error {
	if a.peers.Discv5Running() {
		return rest.ErrNoneDiscovered
	}
	return rest.ErrNoServicePeer
}

// FilterSubscriptions is rest.FilterServiceBackend's, mounted with
// --filter.
func (a *restAPI) FilterSubscriptions() []filter.PeerSubscriptions {
	return a.light.filter.Subscriptions()
}

// Peers and the methods below it are rest.AdminBackend's, mounted with
// --rest-admin.

func (a *restAPI) Peers() []rest.Peer {
	var out []rest.Peer
	for _, id := range a.host.Peerstore().Peers() {
		if id == a.host.ID() {
			continue
		}
		out = append(out, a.peer(id))
	}
	return out
}

func (a *restAPI) peer(id peer.ID) rest.Peer {
	ps := a.host.Peerstore()
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
	info, ok := a.metadata.Peer(id)
	p.Shards = a.peers.KnownShards(id, info.Shards, ok)
	p.Connected = a.peers.Connectedness(id)
	if agent, err := ps.Get(id, "AgentVersion"); err == nil {
		p.Agent, _ = agent.(string)
	}
	p.Origin = a.peers.Origin(id)
	return p
}

// ParsePeer checks a multiaddr with /p2p/<id>.
func (a *restAPI) ParsePeer(addr string) error {
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
func (a *restAPI) ConnectPeer(ctx context.Context, addr string) error {
	pi, err := parsePeerAddr(addr)
	if err != nil {
		return err
	}
	a.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	return a.peers.Connect(ctx, *pi)
}

// SetLogLevel sets Config.LogLevel by nwaku's level names.
func (a *restAPI) SetLogLevel(level string) error {
	if a.cfg.LogLevel == nil {
		return errors.New("the log level of this node is fixed")
	}
	l, ok := map[string]slog.Level{
		"TRACE": slog.LevelDebug - 4, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo, "NOTICE": slog.LevelInfo + 2,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError + 4,
	}[level]
	if !ok {
		return fmt.Errorf("unknown log level %q", level)
	}
	a.cfg.LogLevel.Set(l)
	return nil
}
