package node

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
)

// light holds the node's light-client protocols: the filter and lightpush
// services it serves, and the clients the REST API uses with FilterNode
// and LightpushNode.
type light struct {
	filter          *filter.Service
	lightpush       *lightpush.Service
	filterClient    *filter.Client
	lightpushClient *lightpush.Client
	filterPeer      peer.ID
	lightpushPeer   peer.ID
	removePush      func()
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
		svc, err := filter.New(n.host, filter.Config{
			MaxPeers: n.cfg.FilterMaxPeersToServe, MaxCriteria: n.cfg.FilterMaxCriteria,
			SubscriptionTimeout: n.cfg.FilterSubscriptionTimeout,
			OnTopic:             n.filterTopic,
			RateLimit:           limits.Get(ratelimit.Filter),
			Logger:              n.cfg.Logger.With("protocol", "filter"),
		})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.light.filter = svc
		n.MarkMounted(HealthFilter, filter.SubscribeProtocolID)
	}
	if n.cfg.Lightpush {
		lc := lightpush.Config{Relay: n.relay, Counters: n.cfg.Counters, RateLimit: limits.Get(ratelimit.Lightpush),
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
		if n.light.filterPeer, err = n.addServicePeer("filternode", n.cfg.FilterNode); err != nil {
			return err
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
	}
	if n.cfg.LightpushNode != "" {
		if n.light.lightpushPeer, err = n.addServicePeer("lightpushnode", n.cfg.LightpushNode); err != nil {
			return err
		}
		n.light.lightpushClient = lightpush.NewClient(n.host, lightpush.ClientConfig{Counters: n.cfg.Counters})
		n.MarkMounted(HealthLightpushClient, lightpush.ProtocolID)
		n.MarkMounted(HealthLegacyLightpushClient, lightpush.LegacyProtocolID)
	}
	return nil
}

// filterTopic makes the relay follow the pubsub topics filter subscribers
// need, as the relay's OwnerFilter, so that a subscription to a shard the
// node was not configured with still gets messages; the topic is left
// when its last subscriber goes (and no other owner needs it). Only the
// static-shard topics of the node's cluster are followed: a subscriber
// cannot make the node join arbitrary gossipsub topics.
func (n *Node) filterTopic(pubsubTopic string, subscribed bool) {
	if n.relay == nil {
		return
	}
	rs, err := shard.ParsePubsubTopic(pubsubTopic)
	if err != nil || rs.ClusterID != n.cfg.ClusterID {
		return
	}
	if subscribed {
		err = n.relay.Subscribe(pubsubTopic, relay.OwnerFilter)
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

// FilterClient returns the filter client and its service peer, nil unless
// Config.FilterNode is set.
func (n *Node) FilterClient() (*filter.Client, peer.ID) {
	return n.light.filterClient, n.light.filterPeer
}

// LightpushClient returns the lightpush client and its service peer, nil
// unless Config.LightpushNode is set.
func (n *Node) LightpushClient() (*lightpush.Client, peer.ID) {
	return n.light.lightpushClient, n.light.lightpushPeer
}

// Lightpush implements rest.LightBackend: through --lightpushnode, else
// through the node's own service (nwaku useSelfHostedLightPush).
func (b restBackend) Lightpush(ctx context.Context, req lightpush.Request) (lightpush.Response, error) {
	l := &b.n.light
	switch {
	case l.lightpushClient != nil:
		return l.lightpushClient.Send(ctx, l.lightpushPeer, req)
	case l.lightpush != nil:
		return l.lightpush.Push(ctx, req), nil
	}
	return lightpush.Response{}, rest.ErrNoServicePeer
}

// LightpushLegacy implements rest.LightBackend with lightpush v2.
func (b restBackend) LightpushLegacy(ctx context.Context, pubsubTopic string, msg *message.Message) error {
	l := &b.n.light
	if l.lightpushClient == nil && l.lightpush == nil {
		return rest.ErrNoServicePeer
	}
	if pubsubTopic == "" {
		t, err := b.ContentTopicShard(msg.ContentTopic)
		if err != nil {
			return &lightpush.StatusError{Desc: "Pubsub topic must be specified when static sharding is enabled"}
		}
		pubsubTopic = t
	}
	req := lightpush.LegacyRequest{PubsubTopic: pubsubTopic, Message: msg.Encode(b.n.cfg.Counters)}
	if l.lightpushClient != nil {
		return l.lightpushClient.SendLegacy(ctx, l.lightpushPeer, req)
	}
	if resp := l.lightpush.PushLegacy(ctx, req); !resp.IsSuccess {
		return &lightpush.StatusError{Desc: resp.Info}
	}
	return nil
}

// FilterRequest implements rest.LightBackend: the request goes to
// --filternode. A subscribe or unsubscribe that fails or is refused counts
// in waku_node_errors as nwaku's filter API counts it
// (waku/node/kernel_api/filter.nim: subscribe_filter_failure,
// unsubscribe_filter_failure).
func (b restBackend) FilterRequest(ctx context.Context, req filter.SubscribeRequest) (filter.SubscribeResponse, error) {
	l := &b.n.light
	if l.filterClient == nil {
		return filter.SubscribeResponse{}, rest.ErrNoServicePeer
	}
	resp, err := l.filterClient.Request(ctx, l.filterPeer, req)
	if err != nil || resp.StatusCode != filter.StatusOK {
		switch req.Type {
		case filter.Subscribe:
			b.n.nwaku.nodeErrors.WithLabelValues("subscribe_filter_failure").Inc()
		case filter.Unsubscribe, filter.UnsubscribeAll:
			b.n.nwaku.nodeErrors.WithLabelValues("unsubscribe_filter_failure").Inc()
		}
	}
	return resp, err
}

// FilterSubscriptions implements rest.LightBackend.
func (b restBackend) FilterSubscriptions() ([]filter.PeerSubscriptions, bool) {
	if b.n.light.filter == nil {
		return nil, false
	}
	return b.n.light.filter.Subscriptions(), true
}
