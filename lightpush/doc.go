// Package lightpush implements 19/WAKU2-LIGHTPUSH: a light client hands a
// WakuMessage to a service node, which publishes it on relay for it. Both
// versions nwaku v0.38.1 serves are here, service and client: v3
// /vac/waku/lightpush/3.0.0 (waku-org/specs standards/core/lightpush.md,
// nwaku waku_lightpush/) and the legacy v2 /vac/waku/lightpush/2.0.0-beta1
// (rfc-index 19/lightpush.md, nwaku waku_lightpush_legacy/).
//
// # Service
//
// The service decodes the WakuMessage inside a request once, holds it to
// the rules every way into a node applies (message.Validate: a content
// topic neither empty nor white space and at most 1024 bytes, else 420
// INVALID_MESSAGE, the code nwaku gives a message its relay validation
// refuses), picks the pubsub topic by autosharding when a v3 request names
// none, applies the relay's policy (relay.Relay.Check), hashes the message
// once, with its message id in the same pass when it is
// message.PairMin bytes or more (message.Envelope.HashWithID, which the
// relay's gossipsub then takes), and publishes the bytes as they arrived
// (relay.Relay.PublishEnvelope): no encode, unless the timestamp is 0,
// which nwaku's publish fills with the current time. Answers carry
// nwaku's status codes and texts; a publish that reached no relay peer is
// 505 NO_PEERS_TO_RELAY (v2: is_success false,
// "not_published_to_any_peer").
//
// # Pubsub topics
//
// The relay joins every topic a push is published on, so the service
// accepts only the static-shard topics of its own cluster
// (/waku/2/rs/<Config.ClusterID>/<0..1023>, at most 1024 topics of at most
// 21 bytes), as the node's filter service follows only those. A topic of
// another cluster is refused 421 UNSUPPORTED_PUBSUB_TOPIC (nwaku
// waku_lightpush/common.nim; the lightpush spec's code for a pubsub topic
// the service does not serve), a topic that is not a static shard 400
// BAD_REQUEST, as nwaku refuses an empty one; both before anything is
// published. A push that reaches no relay peer joins nothing
// (relay.Relay.PublishEnvelope).
//
// # Wire
//
// One request and one response per stream, each one protobuf behind an
// unsigned-varint length prefix.
package lightpush

import "github.com/libp2p/go-libp2p/core/protocol"

// Protocol ids of 19/WAKU2-LIGHTPUSH.
const (
	ProtocolID       protocol.ID = "/vac/waku/lightpush/3.0.0"
	LegacyProtocolID protocol.ID = "/vac/waku/lightpush/2.0.0-beta1"
)

// Status codes of LightPushResponse as nwaku v0.38.1 answers them
// (waku_lightpush/common.nim). The spec has 503 for no peers; nwaku has 505
// and we follow nwaku.
const (
	StatusOK                     = 200
	StatusBadRequest             = 400
	StatusPayloadTooLarge        = 413
	StatusInvalidMessage         = 420
	StatusUnsupportedPubsubTopic = 421
	StatusTooManyRequests        = 429
	StatusInternalServerError    = 500
	StatusServiceNotAvailable    = 503
	StatusOutOfRLNProof          = 504
	StatusNoPeersToRelay         = 505
)
