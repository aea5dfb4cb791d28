package node

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
)

// light holds the node's light-client protocols: the filter and lightpush
// services it serves, and the clients the REST API uses. As nwaku v0.38.1
// (waku/factory/node_factory.nim), the clients are always mounted: they
// cost a stream handler (filter push) and nothing else until used.
type light struct {
	filter          *filter.Service
	lightpush       *lightpush.Service
	filterClient    *filter.Client
	lightpushClient *lightpush.Client
	// filterSlot and lightpushSlot are the service peers of --filternode
	// and --lightpushnode ("" when not given), nwaku's service slots.
	filterSlot    peer.ID
	lightpushSlot peer.ID
	removePush    func()
	// onFilterPush receives the messages the filter client is pushed.
	onFilterPush func(env *message.Envelope)
}

// buildLight mounts the services and clients the config asks for.
func (n *Node) buildLight() error {
	limits, err := ratelimit.Parse(n.cfg.RateLimit)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if n.cfg.Filter {
		fc := filter.Config{
			MaxPeers: n.cfg.FilterMaxPeersToServe, MaxCriteria: n.cfg.FilterMaxCriteria,
			SubscriptionTimeout: n.cfg.FilterSubscriptionTimeout,
			OnTopic:             n.filterTopic,
			RateLimit:           limits.Get(ratelimit.Filter),
			Logger:              n.cfg.Logger.With("protocol", "filter"),
		}
		n.nwaku.observeFilter(&fc)
		svc, err := filter.New(n.host, fc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.light.filter = svc
		n.MarkMounted(HealthFilter, filter.SubscribeProtocolID)
	}
	if n.cfg.Lightpush {
		lc := lightpush.Config{Relay: n.relay, ClusterID: n.cfg.ClusterID, Counters: n.cfg.Counters, RateLimit: limits.Get(ratelimit.Lightpush),
			Logger: n.cfg.Logger.With("protocol", "lightpush")}
		if n.auto != nil {
			lc.Autoshard = n.auto.PubsubTopic
		}
		svc, err := lightpush.New(n.host, lc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.light.lightpush = svc
		n.MarkMounted(HealthLightpush, lightpush.ProtocolID)
		n.MarkMounted(HealthLegacyLightpush, lightpush.LegacyProtocolID)
	}
	if n.cfg.FilterNode != "" {
		if n.light.filterSlot, err = n.addServicePeer("filternode", n.cfg.FilterNode); err != nil {
			return err
		}
	}
	if n.cfg.LightpushNode != "" {
		if n.light.lightpushSlot, err = n.addServicePeer("lightpushnode", n.cfg.LightpushNode); err != nil {
			return err
		}
	}
	n.light.filterClient = filter.NewClient(n.host, filter.ClientConfig{
		Counters: n.cfg.Counters, Logger: n.cfg.Logger.With("protocol", "filter-client"),
		Handler: func(env *message.Envelope, _ peer.ID) {
			if f := n.light.onFilterPush; f != nil {
				f(env)
			}
		},
	})
	n.MarkMounted(HealthFilterClient, filter.SubscribeProtocolID)
	n.light.lightpushClient = lightpush.NewClient(n.host, lightpush.ClientConfig{Counters: n.cfg.Counters})
	n.MarkMounted(HealthLightpushClient, lightpush.ProtocolID)
	n.MarkMounted(HealthLegacyLightpushClient, lightpush.LegacyProtocolID)
	return nil
}

// filterTopic makes the relay follow the pubsub topics filter subscribers
// need, as the relay's OwnerFilter, so that a subscription to a shard the
// node was not configured with still gets messages; the topic is left
// when its last subscriber goes (and no other owner needs it). Only the
// static-shard topics of the node's cluster are followed: a subscriber
// cannot make the node join arbitrary gossipsub topics, nor more shards
// than its metadata carries (ErrTooManyShards, logged).
func (n *Node) filterTopic(pubsubTopic string, subscribed bool) {
	if n.relay == nil {
		return
	}
	rs, err := shard.ParsePubsubTopic(pubsubTopic)
	if err != nil || rs.ClusterID != n.cfg.ClusterID {
		return
	}
	if subscribed {
		n.shardMu.Lock()
		if err = n.checkMoreShards([]string{pubsubTopic}); err == nil {
			err = n.relay.Subscribe(pubsubTopic, relay.OwnerFilter)
		}
		n.shardMu.Unlock()
	} else {
		err = n.relay.Unsubscribe(pubsubTopic, relay.OwnerFilter)
	}
	if err != nil {
		n.cfg.Logger.Warn("filter: relay subscription", "pubsub_topic", pubsubTopic, "subscribed", subscribed, "err", err)
	}
}

// addServicePeer parses a service node's multiaddr and keeps its addresses.
func (n *Node) addServicePeer(flag, s string) (peer.ID, error) {
	addr, err := ma.NewMultiaddr(s)
	if err != nil {
		return "", fmt.Errorf("%w: --%s %q: %w", ErrConfig, flag, s, err)
	}
	pi, err := peer.AddrInfoFromP2pAddr(addr)
	if err != nil {
		return "", fmt.Errorf("%w: --%s %q needs /p2p/<peer id>: %w", ErrConfig, flag, s, err)
	}
	n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	return pi.ID, nil
}

// startLight feeds the filter service from the relay's dispatcher: the
// same envelope every consumer gets, pushed to the matching subscribers.
func (n *Node) startLight() {
	if n.light.filter != nil && n.relay != nil {
		n.light.removePush = n.relay.AddHandler("filter", n.light.filter.Push)
	}
}

// closeLight stops the light-client protocols; the relay is closed after.
func (n *Node) closeLight() error {
	if n.light.removePush != nil {
		n.light.removePush()
	}
	var err error
	if n.light.filter != nil {
		err = n.light.filter.Close()
	}
	if n.light.lightpush != nil {
		err = n.light.lightpush.Close()
	}
	if n.light.filterClient != nil {
		err = n.light.filterClient.Close()
	}
	return err
}

// Filter returns the filter service, nil unless Config.Filter.
func (n *Node) Filter() *filter.Service { return n.light.filter }

// Lightpush returns the lightpush service, nil unless Config.Lightpush.
func (n *Node) Lightpush() *lightpush.Service { return n.light.lightpush }

// FilterClient returns the filter client and the peer it would use now:
// --filternode, else a peer selected as SelectServicePeer does ("" when
// none is known).
func (n *Node) FilterClient() (*filter.Client, peer.ID) {
	p, _ := n.SelectServicePeer(filter.SubscribeProtocolID)
	return n.light.filterClient, p
}

// LightpushClient returns the lightpush client and the peer it would use
// now, as FilterClient.
func (n *Node) LightpushClient() (*lightpush.Client, peer.ID) {
	p, _ := n.SelectServicePeer(lightpush.ProtocolID)
	return n.light.lightpushClient, p
}

// SelectServicePeer picks the peer a light client sends codec's requests
// to, as nwaku v0.38.1's PeerManager.selectPeer
// (waku/node/peer_manager/peer_manager.nim): the service slot
// (--filternode for filter, --lightpushnode for lightpush v3 and v2) when
// set, else a random known peer that supports codec, connected or not.
// A peer supports codec when identify said so, or, for filter and
// lightpush v3, when its discovery record announces the capability (nwaku
// maps ENR capabilities to those codecs only). The node itself never
// counts. ok is false when there is no such peer.
func (n *Node) SelectServicePeer(codec protocol.ID) (p peer.ID, ok bool) {
	var cap discovery.Capabilities
	switch codec {
	case filter.SubscribeProtocolID:
		p, cap = n.light.filterSlot, discovery.Filter
	case lightpush.ProtocolID:
		p, cap = n.light.lightpushSlot, discovery.Lightpush
	case lightpush.LegacyProtocolID:
		p = n.light.lightpushSlot
	}
	if p != "" {
		return p, true
	}
	seen := map[peer.ID]bool{n.host.ID(): true}
	var candidates []peer.ID
	for _, id := range n.host.Peerstore().Peers() {
		if seen[id] {
			continue
		}
		if got, err := n.host.Peerstore().SupportsProtocols(id, codec); err == nil && len(got) > 0 {
			seen[id] = true
			candidates = append(candidates, id)
		}
	}
	if cap != 0 {
		for _, id := range n.peers.withCaps(cap) {
			if !seen[id] {
				seen[id] = true
				candidates = append(candidates, id)
			}
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	return candidates[rand.IntN(len(candidates))], true
}

// noServicePeer is the error of a REST light request with no service
// peer: nwaku answers "none discovered" when discv5 runs (its discovery
// handler found nothing), "no discovery method" otherwise
// (waku/rest_api/endpoint/lightpush/handlers.nim). Courier's discv5 feeds
// the peer manager continuously, so the peers it found are already
// candidates; no extra lookup is made per request.
func (n *Node) noServicePeer() error {
	if n.discv5 != nil {
		return rest.ErrNoneDiscovered
	}
	return rest.ErrNoServicePeer
}

// Lightpush implements rest.LightBackend: to the selected service peer.
// nwaku v0.38.1 always mounts the lightpush client, so its REST handler
// never uses the node's own service (useSelfHostedLightPush is false):
// a node serving lightpush pushes through another peer too.
func (b restBackend) Lightpush(ctx context.Context, req lightpush.Request) (lightpush.Response, error) {
	p, ok := b.n.SelectServicePeer(lightpush.ProtocolID)
	if !ok {
		return lightpush.Response{}, b.n.noServicePeer()
	}
	return b.n.light.lightpushClient.Send(ctx, p, req)
}

// LightpushLegacy implements rest.LightBackend with lightpush v2.
func (b restBackend) LightpushLegacy(ctx context.Context, pubsubTopic string, msg *message.Message) error {
	p, ok := b.n.SelectServicePeer(lightpush.LegacyProtocolID)
	if !ok {
		return b.n.noServicePeer()
	}
	if pubsubTopic == "" {
		t, err := b.ContentTopicShard(msg.ContentTopic)
		if err != nil {
			return &lightpush.StatusError{Desc: "Pubsub topic must be specified when static sharding is enabled"}
		}
		pubsubTopic = t
	}
	req := lightpush.LegacyRequest{PubsubTopic: pubsubTopic, Message: msg.Encode(b.n.cfg.Counters)}
	return b.n.light.lightpushClient.SendLegacy(ctx, p, req)
}

// FilterService implements rest.LightBackend: requests go to the service
// peer selected once for the REST call. A subscribe or unsubscribe that
// fails or is refused counts in waku_node_errors as nwaku's filter API
// counts it (waku/node/kernel_api/filter.nim: subscribe_filter_failure,
// unsubscribe_filter_failure).
func (b restBackend) FilterService() (rest.FilterSender, error) {
	p, ok := b.n.SelectServicePeer(filter.SubscribeProtocolID)
	if !ok {
		return nil, b.n.noServicePeer()
	}
	c, errs := b.n.light.filterClient, b.n.nwaku.nodeErrors
	return func(ctx context.Context, req filter.SubscribeRequest) (filter.SubscribeResponse, error) {
		resp, err := c.Request(ctx, p, req)
		if err != nil || resp.StatusCode != filter.StatusOK {
			switch req.Type {
			case filter.Subscribe:
				errs.WithLabelValues("subscribe_filter_failure").Inc()
			case filter.Unsubscribe, filter.UnsubscribeAll:
				errs.WithLabelValues("unsubscribe_filter_failure").Inc()
			}
		}
		return resp, err
	}, nil
}

// FilterSubscriptions implements rest.LightBackend.
func (b restBackend) FilterSubscriptions() ([]filter.PeerSubscriptions, bool) {
	if b.n.light.filter == nil {
		return nil, false
	}
	return b.n.light.filter.Subscriptions(), true
}
