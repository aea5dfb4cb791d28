package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// ProtocolID is the relay protocol id of 11/WAKU2-RELAY.
const ProtocolID = "/vac/waku/relay/2.0.0"

// Config configures a Relay. The zero value of every field means its
// documented default.
type Config struct {
	// GossipSub holds the router parameters. Zero means NwakuGossipSubParams:
	// D=6, Dlo=4, Dhi=8, Dscore=6, Dout=3, Dlazy=6, heartbeat 1 s, history 6
	// with gossip over 3, fanout TTL 1 min (nwaku waku_relay/protocol.nim).
	GossipSub *pubsub.GossipSubParams
	// SeenTTL is how long message ids stay in the seen cache. Default 2 min.
	SeenTTL time.Duration
	// ValidateQueueSize is gossipsub's validation queue length in messages.
	// Default 1024 (go-waku's value; pubsub's own is 32).
	ValidateQueueSize int
	// PeerOutboundQueueSize is gossipsub's per-peer outbound queue length in
	// RPCs. Default 1024.
	PeerOutboundQueueSize int
	// SubscriptionBufferSize is the buffer of each topic subscription in
	// messages. Default 1024.
	SubscriptionBufferSize int
	// HandlerQueueSize is the queue length of each Handler in envelopes;
	// when it is full the envelope is dropped for that handler and counted.
	// Default 1024.
	HandlerQueueSize int
	// MaxTimestampSkew, when positive, Ignores messages whose timestamp is
	// farther than this from local time (64/WAKU2-NETWORK uses 20 s). Zero
	// turns the rule off, nwaku's default without RLN.
	MaxTimestampSkew time.Duration
	// RLN, when set, is RLN relay's check (17/WAKU2-RLN-RELAY, package
	// rln/rlnrelay), run on every message received from a peer after the
	// relay's own rules; a message it does not Accept is dropped with its
	// result (counted as DropRLN), and the proof it returns rides in the
	// envelope (message.Envelope.RateLimitProof). Nil means RLN relay is
	// off.
	RLN MessageValidator
	// Counters receives the node's decode and hash counts. Nil means a
	// private set, read through Relay.Counters.
	Counters *message.Counters
	// Archive, when set, receives every relayed envelope before the
	// handlers (lossless: Append pushes back). ArchiveDone, when set, is
	// called from the archive's writer once the envelope is committed.
	Archive     Archiver
	ArchiveDone func(env *message.Envelope, err error)
	// OnDelivered, when set, is called with every envelope a subscription
	// delivers (received from a peer or published by this node), once per
	// message, on the topic's subscription goroutine before the archive
	// and the handlers get it; it must be quick and must not block. It is
	// where nwaku observes waku_histogram_message_size (its relay handler,
	// waku/node/kernel_api/relay.nim traceHandler).
	OnDelivered func(env *message.Envelope)
	// PeerTopics reports whether the relay keeps track of the peers
	// subscribed to pubsubTopic while it has not joined the topic itself,
	// so that PublishEnvelope can reach them (the lightpush service's
	// case). A peer's subscriptions to other topics are dropped as they
	// arrive (see the package doc, "Peers' subscriptions"). It is called
	// from gossipsub's event loop and must not block nor call the Relay.
	// Nil keeps track of the topics the relay has joined only.
	PeerTopics func(pubsubTopic string) bool
	// Logger receives warnings. Nil means slog.Default().
	Logger *slog.Logger
}

// MessageValidator is a network's rule that the relay's topic validator
// applies to every message received from a peer, after message.Decode,
// message.Validate and Check: RLN relay's (rln/rlnrelay.Validator).
// ValidateMessage must be safe for concurrent use: gossipsub runs the
// validator on all its validation workers at once. m must not be modified
// or kept beyond the returned proof, which is m.RateLimitProof as decoded
// and verified (nil when the result is not Accept); the envelope carries it.
type MessageValidator interface {
	ValidateMessage(pubsubTopic string, m *message.Message) (*rln.RateLimitProof, pubsub.ValidationResult)
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("relay: invalid config")

func (c *Config) setDefaults() {
	if c.GossipSub == nil {
		p := NwakuGossipSubParams()
		c.GossipSub = &p
	}
	if c.SeenTTL == 0 {
		c.SeenTTL = 2 * time.Minute
	}
	if c.ValidateQueueSize == 0 {
		c.ValidateQueueSize = 1024
	}
	if c.PeerOutboundQueueSize == 0 {
		c.PeerOutboundQueueSize = 1024
	}
	if c.SubscriptionBufferSize == 0 {
		c.SubscriptionBufferSize = 1024
	}
	if c.HandlerQueueSize == 0 {
		c.HandlerQueueSize = 1024
	}
	if c.Counters == nil {
		c.Counters = new(message.Counters)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.SeenTTL < 0:
		return fmt.Errorf("%w: SeenTTL %v is negative", ErrConfig, c.SeenTTL)
	case c.ValidateQueueSize < 0, c.PeerOutboundQueueSize < 0, c.SubscriptionBufferSize < 0, c.HandlerQueueSize < 0:
		return fmt.Errorf("%w: queue sizes must not be negative", ErrConfig)
	case c.MaxTimestampSkew < 0:
		return fmt.Errorf("%w: MaxTimestampSkew %v is negative", ErrConfig, c.MaxTimestampSkew)
	case c.GossipSub.HeartbeatInterval <= 0:
		return fmt.Errorf("%w: GossipSub.HeartbeatInterval %v is not positive", ErrConfig, c.GossipSub.HeartbeatInterval)
	}
	return nil
}

// NwakuGossipSubParams returns gossipsub's parameters as nwaku sets them
// (waku_relay/protocol.nim): D=6, Dlo=4, Dhi=8, Dscore=6, Dlazy=6,
// heartbeat 1 s, history length 6 and gossip 3, fanout TTL 1 min,
// unsubscribe backoff 5 s. The message cache thus holds about 6 s of traffic.
// Dout is 2, not nwaku's 3: go-libp2p-pubsub requires Dout < D/2.
func NwakuGossipSubParams() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.D, p.Dlo, p.Dhi, p.Dscore, p.Dout, p.Dlazy = 6, 4, 8, 6, 2, 6
	p.HeartbeatInterval = time.Second
	p.HistoryLength, p.HistoryGossip = 6, 3
	p.FanoutTTL = time.Minute
	p.UnsubscribeBackoff = 5 * time.Second
	return p
}

// nwakuPeerScore returns nwaku's peer scoring: thresholds -100/-1000/-10000,
// decay every 12 s, IP colocation -50 above 5 peers, behaviour penalty -10,
// and per topic invalid message deliveries -100 (waku_relay/protocol.nim).
func nwakuPeerScore() (*pubsub.PeerScoreParams, *pubsub.PeerScoreThresholds) {
	params := &pubsub.PeerScoreParams{
		Topics:                      map[string]*pubsub.TopicScoreParams{},
		TopicScoreCap:               10,
		AppSpecificScore:            func(peer.ID) float64 { return 0 },
		IPColocationFactorWeight:    -50,
		IPColocationFactorThreshold: 5,
		BehaviourPenaltyWeight:      -10,
		BehaviourPenaltyDecay:       0.986,
		DecayInterval:               12 * time.Second,
		DecayToZero:                 0.01,
		RetainScore:                 10 * time.Minute,
	}
	thresholds := &pubsub.PeerScoreThresholds{
		GossipThreshold:   -100,
		PublishThreshold:  -1000,
		GraylistThreshold: -10000,
	}
	return params, thresholds
}

// topicScoreParams are nwaku's TopicParameters: time in mesh 0.01 per
// second up to 10, first deliveries weight 1 decaying 0.5 capped at 10,
// invalid deliveries -100 decaying 0.5; mesh delivery scoring off.
func topicScoreParams() *pubsub.TopicScoreParams {
	return &pubsub.TopicScoreParams{
		SkipAtomicValidation:           true,
		TopicWeight:                    1,
		TimeInMeshWeight:               0.01,
		TimeInMeshQuantum:              time.Second,
		TimeInMeshCap:                  10,
		FirstMessageDeliveriesWeight:   1,
		FirstMessageDeliveriesDecay:    0.5,
		FirstMessageDeliveriesCap:      10,
		InvalidMessageDeliveriesWeight: -100,
		InvalidMessageDeliveriesDecay:  0.5,
	}
}
