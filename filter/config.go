package filter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/couriernet/courier/internal/ratelimit"
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
	case c.MaxPeers < 0, c.MaxCriteria < 0, c.PushQueueSize < 0, c.DedupSize < 0:
		return fmt.Errorf("%w: limits and queue sizes must not be negative", ErrConfig)
	case c.SubscriptionTimeout < 0, c.PushTimeout < 0, c.DedupTTL < 0, c.RequestTimeout < 0:
		return fmt.Errorf("%w: durations must not be negative", ErrConfig)
	}
	return nil
}
