package node

import (
	"context"
	"fmt"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/restapi"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
)

// newREST builds the REST API with the backends the configuration mounts
// (restapi.API.Config); the listener is bound at Start.
func (n *Node) newREST() error {
	if !n.cfg.REST {
		return nil
	}
	rc := n.restAPI().Config(rest.Config{CacheSize: n.cfg.RESTCacheCapacity, AllowOrigin: n.cfg.RESTAllowOrigin, Logger: n.cfg.Logger}, n.cfg.RESTAdmin)
	srv, err := rest.New(rc)
	if err != nil {
		return fmt.Errorf("%w: REST API: %w", ErrConfig, err)
	}
	n.http.rest = srv
	n.light.onFilterPush = srv.DeliverFilter
	return nil
}

// restAPI is the node as the REST API sees it.
func (n *Node) restAPI() *restapi.API {
	a := &restapi.API{Host: n.host, PeerManager: n.peers, Metadata: n.metadata, Metrics: n.metrics, Counters: n.cfg.Counters,
		NodeVersion: Version, NodeHealth: n.healthReport, Auto: n.cfg.auto, ClusterID: n.cfg.ClusterID,
		StorePeer: n.StorePeer, SelectPeer: n.SelectServicePeer, LightpushClient: n.light.lightpushClient,
		FilterClient: n.light.filterClient, FilterServer: n.light.filter, LogLevel: n.cfg.LogLevel}
	if n.relay != nil {
		a.Relay, a.Subscribe = n.relay, n.subscribeREST
		a.Publish = func(ctx context.Context, topic string, msg *message.Message, size int, fill func([]byte) error) error {
			_, err := n.PublishWith(ctx, topic, msg, size, fill)
			return err
		}
	}
	if n.store.server != nil {
		a.Archive = n.archive
	}
	return a
}

// subscribeREST subscribes the relay to topics for the REST API, refused
// whole when the metadata protocol would not carry their shards: the
// error wraps ErrTooManyShards and matches rest.ErrSubscriptionRefused, so
// that the client is answered 400.
func (n *Node) subscribeREST(topics []string) error {
	n.shardMu.Lock()
	defer n.shardMu.Unlock()
	if err := n.checkMoreShards(topics); err != nil {
		return refusedSubscription{err}
	}
	for _, t := range topics {
		if err := n.relay.Subscribe(t, relay.OwnerREST); err != nil {
			return err
		}
	}
	return nil
}

// refusedSubscription is a REST subscription the node refuses whatever its
// state, the client's fault: it matches rest.ErrSubscriptionRefused and
// keeps the text of the error it wraps.
type refusedSubscription struct{ error }

func (e refusedSubscription) Unwrap() error { return e.error }

func (e refusedSubscription) Is(target error) bool { return target == rest.ErrSubscriptionRefused }
