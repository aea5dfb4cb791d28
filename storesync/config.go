package storesync

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/storesync/internal/rbsr"
)

// Protocol ids (waku-org/specs standards/core/sync.md; nwaku codecs.nim).
const (
	ReconciliationID = "/vac/waku/reconciliation/1.0.0"
	TransferID       = "/vac/waku/transfer/1.0.0"
)

// Defaults, nwaku v0.38.1's (waku_store_sync/common.nim,
// reconciliation.nim, storage/seq_storage.nim) unless said otherwise.
const (
	DefaultInterval         = 300 * time.Second
	DefaultRange            = time.Hour
	DefaultRelayJitter      = 20 * time.Second
	DefaultStorageCapacity  = rbsr.DefaultCapacity
	DefaultItemSetThreshold = rbsr.DefaultThreshold
	DefaultPartitions       = rbsr.DefaultPartitions
	// DefaultMaxPayloadSize bounds one reconciliation frame in bytes (nwaku
	// reads any length). A full storage's items fit in about 2.1 MB.
	DefaultMaxPayloadSize = 8 << 20
	// DefaultMaxRoundTrips bounds the payloads one session may exchange.
	DefaultMaxRoundTrips = 64
	// DefaultIOTimeout bounds each read or write of a session.
	DefaultIOTimeout = 30 * time.Second
	// DefaultExpectTTL is how long after its last use what a session found
	// missing is still accepted over transfer.
	DefaultExpectTTL = 2 * time.Minute
	// DefaultMaxInboundSessions bounds the sessions served at once.
	DefaultMaxInboundSessions = 4
	// DefaultMaxMissing bounds what one peer's sessions may find missing
	// here: as many items as the index holds by default.
	DefaultMaxMissing = DefaultStorageCapacity
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("storesync: invalid configuration")

// Config tunes a Service. A zero field means its default.
type Config struct {
	// PubsubTopics and ContentTopics are the topics synced; empty means all.
	// nwaku syncs the pubsub topics of its relayed shards and its
	// --content-topic list.
	PubsubTopics, ContentTopics []string
	// Interval is the time between two sync rounds (--store-sync-interval).
	// Default 300 s; negative: only the round right after Start. With a
	// positive Interval the service also syncs with each store-sync peer
	// it dials, once, RelayJitter after the connection is identified:
	// that round reaches up to the connection, so what the peer holds
	// from before it (a partition's messages, which relay cannot bring
	// across once the halves reconnect) is repaired then, not when the
	// periodic rounds come to that peer. nwaku syncs on its interval only
	// (waku/waku_store_sync/reconciliation.nim periodicSync); the round is
	// an ordinary session, which any responder serves.
	Interval time.Duration
	// Range is how far back a round reaches (--store-sync-range). Default
	// 1 h.
	Range time.Duration
	// RelayJitter is how far before now a round stops, so that messages
	// still travelling through relay are not fetched twice
	// (--store-sync-relay-jitter). Default 20 s; negative: none, a round
	// reaches up to now, as nwaku's --store-sync-relay-jitter=0 does
	// (waku/waku_store_sync/storage/range_processing.nim
	// calculateTimeRange subtracts the jitter from now).
	RelayJitter time.Duration
	// StorageCapacity bounds the index in items. Default 50,000.
	StorageCapacity int
	// ItemSetThreshold and Partitions: ranges of at most ItemSetThreshold
	// items are sent as item sets, larger differing ones split into
	// Partitions parts. Defaults 100 and 8.
	ItemSetThreshold, Partitions int
	// MaxPayloadSize bounds a received reconciliation frame, in bytes.
	MaxPayloadSize int
	// MaxRoundTrips bounds the payloads of one session. Default 64.
	MaxRoundTrips int
	// IOTimeout bounds each read and write. Default 30 s.
	IOTimeout time.Duration
	// ExpectTTL: see DefaultExpectTTL.
	ExpectTTL time.Duration
	// MaxInboundSessions bounds the sessions served at once; more are reset.
	MaxInboundSessions int
	// MaxMissing bounds the entries (hashes named, ranges this side holds
	// nothing in) kept from one peer's sessions to check its transfers
	// against; (MaxInboundSessions+1) times it bounds them for all peers.
	// A session that would pass either fails with ErrTooManyDifferences.
	// Default 50,000.
	MaxMissing int
	// Peers returns the peers a round picks from (Service.Round). Nil means
	// the connected peers that announced ReconciliationID.
	Peers func() []peer.ID
	// OnReconciled, when set, is called after each reconciliation that
	// ended well, on the initiator's side and the responder's, with the
	// payloads received and the hashes found missing on either side, as
	// nwaku observes its reconciliation_roundtrips and
	// reconciliation_differences (waku_store_sync/reconciliation.nim). It
	// is called from the session's goroutine and must not block.
	OnReconciled func(roundTrips, differences int)
	// Counters receives the decode and hash counts of transferred
	// messages. Nil means a new set.
	Counters *message.Counters
	// Logger receives the service's logs. Nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Interval, DefaultInterval)
	def(&c.Range, DefaultRange)
	def(&c.RelayJitter, DefaultRelayJitter)
	c.RelayJitter = max(c.RelayJitter, 0) // negative: none
	def(&c.IOTimeout, DefaultIOTimeout)
	def(&c.ExpectTTL, DefaultExpectTTL)
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	defInt(&c.StorageCapacity, DefaultStorageCapacity)
	defInt(&c.ItemSetThreshold, DefaultItemSetThreshold)
	defInt(&c.Partitions, DefaultPartitions)
	defInt(&c.MaxPayloadSize, DefaultMaxPayloadSize)
	defInt(&c.MaxRoundTrips, DefaultMaxRoundTrips)
	defInt(&c.MaxInboundSessions, DefaultMaxInboundSessions)
	defInt(&c.MaxMissing, DefaultMaxMissing)
	if c.Counters == nil {
		c.Counters = new(message.Counters)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.Range < 0, c.IOTimeout < 0, c.ExpectTTL < 0:
		return fmt.Errorf("%w: negative duration", ErrConfig)
	case c.StorageCapacity < 0, c.ItemSetThreshold < 0, c.MaxPayloadSize < 0, c.MaxRoundTrips < 0, c.MaxInboundSessions < 0, c.MaxMissing < 0:
		return fmt.Errorf("%w: negative size", ErrConfig)
	case c.Partitions < 2:
		return fmt.Errorf("%w: partitions %d, want at least 2", ErrConfig, c.Partitions)
	}
	return nil
}
