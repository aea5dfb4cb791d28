// Package archivegate stands between the relay and the archive and passes
// on the relayed messages nwaku's archive would keep
// (waku/waku_archive/archive.nim validate, MaxMessageTimestampVariance).
package archivegate

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// Gate passes on to the archive the relayed messages nwaku's archive
// would keep: ephemeral ones go through
// (the archive acknowledges them without storing), others only with a
// timestamp within drift of now. A refused message is acknowledged at
// once with a nil error, as the archive acknowledges a duplicate, and
// counted by reason (Refused: nwaku's waku_archive_errors
// invalid_message_too_old and invalid_message_future_timestamp,
// waku/waku_archive/archive_metrics.nim).
type Gate struct {
	archive.Archive
	drift           int64 // nanoseconds
	now             func() time.Time
	tooOld, futures atomic.Uint64
}

// New returns the gate before a that keeps messages whose timestamp is
// within drift of the clock, either way.
func New(a archive.Archive, drift time.Duration) *Gate {
	return &Gate{Archive: a, drift: int64(drift), now: time.Now}
}

// Refused returns how many messages the gate refused as too old and as
// from the future.
func (g *Gate) Refused() (tooOld, future uint64) { return g.tooOld.Load(), g.futures.Load() }

// Append is archive.Archive's, with the timestamp check first.
func (g *Gate) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
	if m := env.Message(); m != nil && !m.Ephemeral {
		now := g.now().UnixNano()
		var refused *atomic.Uint64
		switch {
		case m.Timestamp < now-g.drift:
			refused = &g.tooOld
		case m.Timestamp > now+g.drift:
			refused = &g.futures
		}
		if refused != nil {
			refused.Add(1)
			if done != nil {
				done(nil)
			}
			return nil
		}
	}
	return g.Archive.Append(ctx, env, done)
}
