// Package filter implements 12/WAKU2-FILTER v2 (rfc-index 12/filter.md):
// light clients subscribe at a service node to (pubsub topic, content topic)
// pairs and the service pushes them every matching relayed message.
//
// # Service
//
// Service answers the four request types with nwaku v0.38.1's status codes,
// descriptions and limits (waku_filter_v2/protocol.nim, subscriptions.nim):
// 100 content topics per request, a peer limit, a per-peer criteria limit and
// subscriptions that expire without a request.
//
// Subscriptions are indexed by (pubsub topic, content topic), so a message
// costs one map lookup whatever the number of peers that do not match it.
// Service.Push builds the MessagePush frame once per message around the
// encoded WakuMessage the relay already holds and queues that one buffer
// for every matching peer; each peer has its own bounded queue and writer,
// so a stalled peer neither delays the others nor grows memory, and what
// its full queue drops is counted.
//
// # Memory bounds
//
// nwaku bounds the number of criteria, not their size: its request limit
// (1.6 MB) lets 1000 criteria of 16 kB each fill 16 MB per peer, 16 GB
// for its 1000 peers. The service adds three bounds so that what subscribers make it hold is
// bounded in bytes:
//
//   - each topic of a SUBSCRIBE or UNSUBSCRIBE is at most MaxTopicSize
//     (1024) bytes, message.MaxContentTopicSize, the longest content topic
//     the node relays (nwaku has no such limit); a content topic must also
//     not be empty or white space (message.CheckContentTopic), as go-waku's
//     request validation wants; else 400 BAD_REQUEST;
//   - a peer's criteria are charged at most Config.MaxCriteriaBytes
//     (default 512 bytes for each of Config.MaxCriteria criteria, 512,000
//     bytes for nwaku's 1000: room for 256 bytes of topics each),
//     each criterion its two topics and CriterionOverhead (256 bytes, the
//     heap of its index entries as BenchmarkCriteriaHeld measures it);
//   - all peers' criteria together at most Config.MaxTotalCriteriaBytes
//     (default 128 MiB);
//
// a SUBSCRIBE past either byte limit is answered 503 SERVICE_UNAVAILABLE,
// the code nwaku gives its peer and criteria limits, and changes nothing.
// Criteria a peer holds already are not charged again. With the defaults
// one peer holds at most about 0.5 MB and all of them about 134 MB.
// Beyond its criteria, each subscribed peer costs a writer goroutine and a
// queue of PushQueueSize frame pointers, bounded by Config.MaxPeers.
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
