package rest

import (
	"context"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// The backends below are what a node provides to the REST API, one per
// group of routes; Config names them. Their methods are called
// concurrently from HTTP handlers.

// NodeBackend is what every node answers.
type NodeBackend interface {
	// Info returns the node's listen addresses and ENR.
	Info() Info
	// Version returns the node's version string.
	Version() string
	// Health returns the node's health report.
	Health() Health
	// ContentTopicShard returns the pubsub topic of contentTopic under the
	// node's autosharding (shard.Autosharding.PubsubTopic); the error wraps
	// ErrAutoshardingDisabled under static sharding.
	ContentTopicShard(contentTopic string) (pubsubTopic string, err error)
}

// RelayBackend is the node's relay, for /relay/v1 and the relay peers of
// /admin/v1.
type RelayBackend interface {
	// RelaySubscribe subscribes the relay to the pubsub topics (static-shard
	// topics, already validated). Subscribing a topic already subscribed
	// succeeds. An error that matches ErrSubscriptionRefused is the
	// client's fault (answered 400), any other the node's (500).
	RelaySubscribe(pubsubTopics []string) error
	// RelayUnsubscribe unsubscribes the relay from the pubsub topics.
	// Unsubscribing a topic not subscribed succeeds.
	RelayUnsubscribe(pubsubTopics []string) error
	// RelayPublish validates and publishes on pubsubTopic a message of
	// msg's fields (its Payload ignored) with a payload of payloadLen
	// bytes that fill writes into the region it is given
	// (relay.Relay.PublishWith), so that the handlers decode a payload's
	// base64 once, into its final place. The answer is "OK", as nwaku's, so
	// no hash is asked for. msg is handed over: the backend may keep it and
	// its slices, and the caller does not touch it afterwards. fill may
	// only be called before RelayPublish returns; its error is returned.
	// ctx carries the publish timeout. Errors may wrap ErrNotSubscribed or
	// ErrInvalidMessage.
	RelayPublish(ctx context.Context, pubsubTopic string, msg *message.Message, payloadLen int, fill func(payload []byte) error) error
	// RelayTopicPeers returns how many connected relay peers follow
	// pubsubTopic: POST /relay/v1/auto/messages answers a message published
	// to none 400 "Failed to publish: publish failed in relay:
	// NoPeersToPublish", as nwaku, whose gossipsub publish returns the
	// number of peers sent to (rest_api/endpoint/relay/handlers.nim,
	// waku_relay/protocol.nim). POST /relay/v1/messages answers OK either
	// way, as nwaku's handler does not read the outcome.
	RelayTopicPeers(pubsubTopic string) int
	// RelayPeers returns, for each static-shard pubsub topic the relay is
	// subscribed to (/waku/2/rs/<cluster>/<shard>, any cluster; other
	// topics are left out, as nwaku's RelayShard.parse leaves them), the
	// peers gossipsub knows to be subscribed to it, or with mesh those in
	// its mesh for the topic. Each Peer has its gossipsub Score.
	RelayPeers(mesh bool) []PeersOfShard
	// ShardPeers is RelayPeers for /waku/2/rs/<the node's cluster>/<shard>,
	// whether the relay is subscribed to it or not (no peers then).
	ShardPeers(shard uint16, mesh bool) []Peer
}

// StoreBackend answers store queries for GET /store/v3/messages.
type StoreBackend interface {
	// StoreLocal answers req from the node's own archive (store.Answer).
	// Errors wrap ErrNoLocalStore or are the archive's (*store.AnswerError).
	StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error)
	// StoreRemote sends req to the store node at peerAddr (a multiaddr with
	// /p2p/<id>), or when peerAddr is "" to the default store node
	// (--storenode, else a connected peer that serves store), and returns
	// its response (store.Query). Errors wrap ErrPeerAddr, ErrNoStorePeer or
	// are store.Query's.
	StoreRemote(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error)
}

// LightpushBackend is the node's lightpush client. The service peer of
// each request is selected as nwaku v0.38.1's REST handlers do
// (waku/rest_api/endpoint/lightpush/handlers.nim:
// peerManager.selectPeer(codec)).
type LightpushBackend interface {
	// Lightpush sends req (lightpush v3) to a lightpush service peer and
	// returns the answer. req.Message is handed over. Errors wrap
	// ErrNoServicePeer or ErrNoneDiscovered, or are the client's
	// transport errors.
	Lightpush(ctx context.Context, req lightpush.Request) (lightpush.Response, error)
	// LightpushLegacy does the same with lightpush v2; pubsubTopic "" lets
	// autosharding pick the topic. msg is handed over. A refusal is a
	// *lightpush.StatusError.
	LightpushLegacy(ctx context.Context, pubsubTopic string, msg *message.Message) error
}

// FilterBackend is the node's filter client.
type FilterBackend interface {
	// FilterService selects the filter service peer for one REST call, as
	// nwaku's filter handlers do (filter/handlers.nim), and returns the
	// sender bound to it. Errors wrap ErrNoServicePeer or
	// ErrNoneDiscovered.
	FilterService() (FilterSender, error)
}

// FilterServiceBackend is the node's filter service (nwaku --filter).
type FilterServiceBackend interface {
	// FilterSubscriptions returns the service's subscriptions.
	FilterSubscriptions() []filter.PeerSubscriptions
}

// AdminBackend is what the /admin/v1 routes read and change.
type AdminBackend interface {
	// Peers returns the peers the node knows.
	Peers() []Peer
	// ParsePeer checks one multiaddr with /p2p/<peer id>.
	ParsePeer(addr string) error
	// ConnectPeer dials addr (checked by ParsePeer) within ctx and keeps
	// the peer in the peer store, as nwaku's connectPeer.
	ConnectPeer(ctx context.Context, addr string) error
	// SetLogLevel sets the node's log level to one of nwaku's names
	// (TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL), given upper
	// case.
	SetLogLevel(level string) error
}
