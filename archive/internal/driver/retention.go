package driver

import (
	"context"
	"time"

	"github.com/couriernet/courier/archive"
)

// CapacityKeep is how many messages a run under capacity c keeps, and
// CapacityTrigger the count from which it deletes (nwaku: capacity plus
// half the 30 % overflow window, and capacity times 1.3; see
// archive.Retention).
func CapacityKeep(c int64) int64    { return c + c*3/20 }
func CapacityTrigger(c int64) int64 { return c + c*3/10 }

// Retain is a driver's side of retention: one run deletes what r says has
// expired at now and returns how many messages it deleted.
type Retain func(ctx context.Context, r archive.Retention, now time.Time) (int64, error)

// RetentionLoop applies a policy at start and then every interval.
type RetentionLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartRetention logs the policy in force and, unless it keeps
// everything, starts its loop, which counts its runs in st. Stop on the
// result is safe either way.
func StartRetention(s Settings, retain Retain, st *Counters) *RetentionLoop {
	r := s.Policy
	if r == (archive.Retention{}) {
		s.Logger.Info("archive: retention policy", "policy", "none")
		return nil
	}
	s.Logger.Info("archive: retention policy", "policy", r.String(), "interval", s.RetentionInterval)
	ctx, cancel := context.WithCancel(context.Background())
	l := &RetentionLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(s.RetentionInterval)
		defer t.Stop()
		for {
			start := time.Now()
			n, err := retain(ctx, r, s.Now())
			st.RetentionRuns.Add(1)
			st.Deleted.Add(uint64(n))
			if err != nil && ctx.Err() == nil {
				st.RetentionErrors.Add(1)
				s.Logger.Error("archive: retention", "policy", r.String(), "deleted", n, "err", err)
			} else if n > 0 {
				s.Logger.Info("archive: retention", "policy", r.String(), "deleted", n, "took", time.Since(start).Round(time.Millisecond))
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

// Stop ends the loop, cancelling a run in progress, and waits for it.
func (l *RetentionLoop) Stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}
