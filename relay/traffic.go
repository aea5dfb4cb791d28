package relay

import (
	"sync"
	"sync/atomic"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
)

// traffic follows the messages gossipsub receives and sends on the topics
// the relay has joined, for nwaku's traffic figures (waku_relay/protocol.nim
// initRelayObservers and logMessageInfo). It implements pubsub.RawTracer;
// gossipsub calls it from its event loop, so it never takes Relay.mu (held
// while the relay calls into gossipsub). Topics a peer sends that the relay
// has not joined are not counted, which keeps the topics, and so the metric
// labels, to the relay's own.
type traffic struct {
	noTrace

	mu     sync.RWMutex
	topics map[string]*topicCounters
}

func newTraffic() *traffic { return &traffic{topics: map[string]*topicCounters{}} }

// add starts counting pubsubTopic's traffic into c.
func (t *traffic) add(pubsubTopic string, c *topicCounters) {
	t.mu.Lock()
	t.topics[pubsubTopic] = c
	t.mu.Unlock()
}

// RecvRPC counts every message of a received RPC, duplicates and messages
// that will fail validation included: nwaku's "gross" "in" (its onRecv
// observer). nwaku leaves out a message that does not decode as a
// WakuMessage; telling those apart here would decode every received
// message a second time, duplicates included, so they are counted too.
func (t *traffic) RecvRPC(rpc *pubsub.RPC) {
	if len(rpc.GetPublish()) == 0 {
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, m := range rpc.GetPublish() {
		topic := m.GetTopic()
		if c := t.topics[topic]; c != nil {
			c.grossIn.Add(uint64(len(m.GetData()) + len(topic)))
		}
	}
}

// SendRPC counts every message queued for a peer, once per peer: nwaku's
// "net" "out" (its onSend observer), and a payload in the per-shard size
// figures, which nwaku folds in for every message sent. gossipsub calls it
// once the RPC is in the peer's queue; nwaku counts a message before its
// queue too, and also one its queue then drops (courier counts those drops
// as peer_queue_full instead).
func (t *traffic) SendRPC(rpc *pubsub.RPC, _ peer.ID) {
	if len(rpc.GetPublish()) == 0 {
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, m := range rpc.GetPublish() {
		topic := m.GetTopic()
		if c := t.topics[topic]; c != nil {
			c.netOut.Add(uint64(len(m.GetData()) + len(topic)))
			c.payload(payloadLen(m.GetData()))
		}
	}
}

// payloadLen returns the length of a WakuMessage's payload (field 1, the
// last occurrence as protobuf has it) by skipping over its fields, without
// decoding them: the messages gossipsub sends have passed the validator.
// It returns 0 for a message without a payload or that does not parse.
func payloadLen(wire []byte) int {
	n := 0
	r := protowalk.NewReader(wire)
	for r.Next() {
		if r.Num() == 1 && r.Type() == protowire.BytesType {
			if v := r.Bytes(); v != nil {
				n = len(v)
			}
		}
	}
	return n
}

// topicCounters count one pubsub topic's traffic. The relay's subscription
// loop, its validator and the traffic tracer add to them concurrently.
type topicCounters struct {
	messages atomic.Uint64 // envelopes dispatched
	bytes    atomic.Uint64 // their encoded WakuMessage bytes
	grossIn  atomic.Uint64 // see traffic.RecvRPC
	netOut   atomic.Uint64 // see traffic.SendRPC
	// The per-shard size figures: payloads of messages validated from
	// peers and of every message sent to a peer.
	sizes, sizeSum, sizeMax atomic.Uint64
}

func (t *topicCounters) add(env interface{ Wire() []byte }) {
	t.messages.Add(1)
	t.bytes.Add(uint64(len(env.Wire())))
}

// payload folds a payload of n bytes into the size figures.
func (t *topicCounters) payload(n int) {
	t.sizes.Add(1)
	t.sizeSum.Add(uint64(n))
	for {
		m := t.sizeMax.Load()
		if uint64(n) <= m || t.sizeMax.CompareAndSwap(m, uint64(n)) {
			return
		}
	}
}

func (t *topicCounters) snapshot() TopicStats {
	return TopicStats{
		Messages: t.messages.Load(), Bytes: t.bytes.Load(),
		GrossInBytes: t.grossIn.Load(), NetOutBytes: t.netOut.Load(),
		Sizes: t.sizes.Load(), SizeSum: t.sizeSum.Load(), SizeMax: t.sizeMax.Load(),
	}
}
