package node

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/relay"
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
	// onFilterPush receives the messages the filter client is pushed for
	// the REST API, before Config.OnFilterPush.
	onFilterPush func(env *message.Envelope)
}

// buildLight mounts the services and clients the config asks for.
func (n *Node) buildLight() error {
	limits := n.cfg.limits
	if n.cfg.Filter {
		fc := filter.Config{
			MaxPeers: n.cfg.FilterMaxPeersToServe, MaxCriteria: n.cfg.FilterMaxCriteria,
			SubscriptionTimeout: n.cfg.FilterSubscriptionTimeout,
			OnTopic:             n.filterTopic,
			RateLimit:           limits.Get(ratelimit.Filter),
			Logger:              n.cfg.Logger.With("protocol", "filter"),
		}
		n.metrics.ObserveFilter(&fc)
		svc, err := filter.New(n.host, fc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.light.filter = svc
		n.health.Mount(health.Filter, filter.SubscribeProtocolID)
	}
	if n.cfg.Lightpush {
		lc := lightpush.Config{Relay: n.relay, ClusterID: n.cfg.ClusterID, Counters: n.cfg.Counters, RateLimit: limits.Get(ratelimit.Lightpush),
			Logger: n.cfg.Logger.With("protocol", "lightpush")}
		if n.cfg.auto != nil {
			lc.Autoshard = n.cfg.auto.PubsubTopic
		}
		if n.rln != nil {
			lc.RLN = n.rln.Lightpush()
		}
		svc, err := lightpush.New(n.host, lc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.light.lightpush = svc
		n.health.Mount(health.Lightpush, lightpush.ProtocolID)
		n.health.Mount(health.LegacyLightpush, lightpush.LegacyProtocolID)
	}
	n.light.filterSlot = n.addServicePeer(n.cfg.filterNode)
	n.light.lightpushSlot = n.addServicePeer(n.cfg.lightpushNode)
	n.light.filterClient = filter.NewClient(n.host, filter.ClientConfig{
		Counters: n.cfg.Counters, Logger: n.cfg.Logger.With("protocol", "filter-client"),
		Handler: func(env *message.Envelope, from peer.ID) {
			if f := n.light.onFilterPush; f != nil {
				f(env)
			}
			if f := n.cfg.OnFilterPush; f != nil {
				f(env, from)
			}
		},
	})
	n.health.Mount(health.FilterClient, filter.SubscribeProtocolID)
	n.light.lightpushClient = lightpush.NewClient(n.host, lightpush.ClientConfig{Counters: n.cfg.Counters})
	n.health.Mount(health.LightpushClient, lightpush.ProtocolID)
	n.health.Mount(health.LegacyLightpushClient, lightpush.LegacyProtocolID)
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

// addServicePeer keeps the addresses of a service node and returns its
// id, "" for none.
func (n *Node) addServicePeer(pi *peer.AddrInfo) peer.ID {
	if pi == nil {
		return ""
	}
	n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.PermanentAddrTTL)
	return pi.ID
}

// startLight feeds the filter service from the relay's dispatcher: the
// same envelope every consumer gets, pushed to the matching subscribers.
func (n *Node) startLight() {
	if n.light.filter != nil && n.relay != nil {
		n.light.removePush = n.relay.AddHandler("filter", n.light.filter.Push)
	}
}

// closeLight stops the light-client protocols and returns every error
// they give; the relay is closed after.
func (n *Node) closeLight() error {
	if n.light.removePush != nil {
		n.light.removePush()
	}
	var errs []error
	if n.light.filter != nil {
		errs = append(errs, n.light.filter.Close())
	}
	if n.light.lightpush != nil {
		errs = append(errs, n.light.lightpush.Close())
	}
	if n.light.filterClient != nil {
		errs = append(errs, n.light.filterClient.Close())
	}
	return errors.Join(errs...)
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
	return n.peers.ServicePeer(codec, cap)
}
