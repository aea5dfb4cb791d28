// Package filter implements 12/WAKU2-FILTER v2 (rfc-index 12/filter.md):
// light clients subscribe at a service node to (pubsub topic, content topic)
// pairs and the service pushes them every matching relayed message.
//
// # Service
//
// Service answers the four request types with nwaku v0.38.1's status codes,
// descriptions and limits (waku_filter_v2/protocol.nim, subscriptions.nim):
// 100 content topics per request, a peer limit, a per-peer criteria limit and
// subscriptions that expire without a request. Subscriptions are indexed by
// (pubsub topic, content topic), so a message costs one map lookup whatever
// the number of peers that do not match it. Service.Push builds the
// MessagePush frame once per message around the encoded WakuMessage the
// relay already holds and queues that one buffer for every matching peer;
// each peer has its own bounded queue and writer, so a stalled peer neither
// delays the others nor grows memory, and what its full queue drops is
// counted.
//
// # Client
//
// Client sends requests to a service node and receives pushes: each pushed
// WakuMessage is decoded once and handed to the handler as an Envelope.
//
// # Wire
//
// Every RPC is one protobuf behind an unsigned-varint length prefix. A push
// stream carries any number of pushes; the client sends nothing back.
package filter

import "github.com/libp2p/go-libp2p/core/protocol"

// Protocol ids of 12/WAKU2-FILTER v2.
const (
	SubscribeProtocolID protocol.ID = "/vac/waku/filter-subscribe/2.0.0-beta1"
	PushProtocolID      protocol.ID = "/vac/waku/filter-push/2.0.0-beta1"
)
