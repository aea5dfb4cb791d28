package filter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
)

// Defaults of Config, nwaku v0.38.1's (tools/confutils/cli_args.nim,
// waku_filter_v2/subscriptions.nim and protocol.nim).
const (
	DefaultMaxPeers            = 1000              // --filter-max-peers-to-serve
	DefaultMaxCriteria         = 1000              // --filter-max-criteria
	DefaultSubscriptionTimeout = 300 * time.Second // --filter-subscription-timeout
	DefaultPushTimeout         = 20 * time.Second  // MessagePushTimeout
	DefaultDedupTTL            = 2 * time.Minute   // MessageCacheTTL
	DefaultDedupSize           = 32768
	DefaultPushQueueSize       = 64
	DefaultRequestTimeout      = 10 * time.Second
	// MaxContentTopicsPerRequest is nwaku's limit on content topics in one
	// SUBSCRIBE or UNSUBSCRIBE.
	MaxContentTopicsPerRequest = 100
	// MaxTopicSize is the longest pubsub topic or content topic in bytes
	// a SUBSCRIBE or UNSUBSCRIBE may name: message.MaxContentTopicSize,
	// the longest content topic the node relays (a subscription to a
	// longer one could never be served). nwaku has no such limit; its
	// request limit (MaxRequestSize) lets one content topic reach 1.6 MB.
	MaxTopicSize = message.MaxContentTopicSize
	// CriterionOverhead is what a criterion is charged in bytes beyond the
	// bytes of its two topics: the heap its entries in the service's
	// indexes take. BenchmarkCriteriaHeld measures 256 bytes of heap for a
	// criterion with a 16-byte content topic (and a pubsub topic shared
	// with the rest of its request), so 240 of index entries; the heap
	// held by criteria of any size stays within 5% of what they are
	// charged.
	CriterionOverhead = 256
	// CriterionBytesAllowance is what Config.MaxCriteriaBytes allows each
	// of a peer's Config.MaxCriteria criteria by default: CriterionOverhead
	// and 256 bytes of topics, where a static-shard pubsub topic is at most
	// 21 bytes and the content topics in use are under 100.
	CriterionBytesAllowance = CriterionOverhead + 256
	// DefaultMaxCriteriaBytes is the default of Config.MaxCriteriaBytes
	// with the default MaxCriteria: 512,000 bytes.
	DefaultMaxCriteriaBytes = DefaultMaxCriteria * CriterionBytesAllowance
	// DefaultMaxTotalCriteriaBytes is the default of
	// Config.MaxTotalCriteriaBytes: 128 MiB, room for 250 peers holding
	// DefaultMaxCriteriaBytes each or 1000 peers holding a quarter of it.
	DefaultMaxTotalCriteriaBytes = 128 << 20
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("filter: invalid config")

// Config configures a Service. The zero value of every field means its
// documented default; negative values are errors.
type Config struct {
	// MaxPeers is the most subscribed peers served at once. Default 1000.
	MaxPeers int
	// MaxCriteria is the most (pubsub topic, content topic) pairs one peer
	// may hold. Default 1000.
	MaxCriteria int
	// MaxCriteriaBytes bounds what one peer's criteria are charged, in
	// bytes: each criterion counts the bytes of its pubsub topic and its
	// content topic plus CriterionOverhead. A SUBSCRIBE that would pass it
	// is refused 503 "SERVICE_UNAVAILABLE: peer has reached maximum size
	// of filter criteria: <n> bytes" and changes nothing. Default
	// MaxCriteria × CriterionBytesAllowance (512 bytes), 512,000 with the
	// default MaxCriteria.
	MaxCriteriaBytes int
	// MaxTotalCriteriaBytes bounds what the criteria of all peers are
	// charged together, counted as for MaxCriteriaBytes; a SUBSCRIBE that
	// would pass it is refused 503 "SERVICE_UNAVAILABLE: node has reached
	// maximum size of filter criteria: <n> bytes". Default
	// DefaultMaxTotalCriteriaBytes (128 MiB).
	MaxTotalCriteriaBytes int
	// SubscriptionTimeout is how long a peer's subscriptions live without a
	// request (any of the four refreshes them). Default 300 s.
	SubscriptionTimeout time.Duration
	// PushQueueSize is the number of pushes queued for one subscriber; when
	// its queue is full a push to it is dropped and counted. Default 64.
	// Frames are shared by all subscribers, so stalled subscribers together
	// hold at most PushQueueSize recent messages, not that many each.
	PushQueueSize int
	// PushTimeout bounds opening a push stream and writing one push to it.
	// Default 20 s.
	PushTimeout time.Duration
	// DedupTTL is how long a pushed message hash is remembered so that the
	// same message is not pushed twice. Default 2 min.
	DedupTTL time.Duration
	// DedupSize is the most message hashes remembered. Default 32768.
	DedupSize int
	// RequestTimeout bounds reading a request and writing its response.
	// Default 10 s.
	RequestTimeout time.Duration
	// RateLimit is each peer's request budget, as nwaku's PerPeerRateLimiter
	// for filter (--rate-limit filter:V/P; nwaku's default, which the node
	// passes, is 30 a minute): a request over it is answered 429 with
	// request id "N/A" and is not read. The zero value sets no limit.
	RateLimit ratelimit.Setting
	// OnTopic, when set, is called with subscribed=true when the first
	// criterion on a pubsub topic arrives and with false when the last one
	// leaves, so that the node can relay the topics filter clients need. It
	// is called with the service's lock held and must not call the Service.
	OnTopic func(pubsubTopic string, subscribed bool)
	// OnRequest, when set, is called with the type of each subscribe
	// request of a known type and the time applying it took, for nwaku's
	// waku_filter_request_duration_seconds (waku_filter_v2/protocol.nim
	// handleSubscribeRequest). OnMessage, when set, is called for each
	// message that matched a subscriber with the time Push took, for
	// waku_filter_handle_message_duration_seconds (protocol.nim
	// handleMessage). nwaku's handleMessage waits for the pushes to be
	// written; Push queues them for each subscriber's writer, so this is
	// the time to hand the message to every subscriber. Both must be safe
	// for concurrent use and must not call the Service.
	OnRequest func(t RequestType, d time.Duration)
	OnMessage func(d time.Duration)
	// Logger receives debug and warning records. Nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxPeers, DefaultMaxPeers)
	def(&c.MaxCriteria, DefaultMaxCriteria)
	def(&c.MaxCriteriaBytes, c.MaxCriteria*CriterionBytesAllowance)
	def(&c.MaxTotalCriteriaBytes, DefaultMaxTotalCriteriaBytes)
	def(&c.PushQueueSize, DefaultPushQueueSize)
	def(&c.DedupSize, DefaultDedupSize)
	defDur(&c.SubscriptionTimeout, DefaultSubscriptionTimeout)
	defDur(&c.PushTimeout, DefaultPushTimeout)
	defDur(&c.DedupTTL, DefaultDedupTTL)
	defDur(&c.RequestTimeout, DefaultRequestTimeout)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.MaxPeers < 0, c.MaxCriteria < 0, c.MaxCriteriaBytes < 0, c.MaxTotalCriteriaBytes < 0, c.PushQueueSize < 0, c.DedupSize < 0:
		return fmt.Errorf("%w: limits and queue sizes must not be negative", ErrConfig)
	case c.SubscriptionTimeout < 0, c.PushTimeout < 0, c.DedupTTL < 0, c.RequestTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	}
	return nil
}
