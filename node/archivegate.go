package node

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// DefaultArchiveTimestampDrift is nwaku's MaxMessageTimestampVariance
// (waku/waku_archive/archive.nim).
const DefaultArchiveTimestampDrift = 20 * time.Second

// archiveGate stands between the relay and the archive and passes on the
// relayed messages nwaku's archive would keep: ephemeral ones go through
// (the archive acknowledges them without storing), others only with a
// timestamp within drift of now. A refused message is acknowledged at
// once with a nil error, as the archive acknowledges a duplicate, and
// counted by reason (tooOld and futures: nwaku's waku_archive_errors
// invalid_message_too_old and invalid_message_future_timestamp,
// waku/waku_archive/archive_metrics.nim).
type archiveGate struct {
	archive.Archive
	drift           int64 // nanoseconds
	now             func() time.Time
	tooOld, futures atomic.Uint64
}

func newArchiveGate(a archive.Archive, drift time.Duration) *archiveGate {
	return &archiveGate{Archive: a, drift: int64(drift), now: time.Now}
}

// Append is archive.Archive's, with the timestamp check first.
func (g *archiveGate) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
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
