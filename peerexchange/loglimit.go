package peerexchange

import (
	"sync"
	"time"
)

// logLimit lets at most one log line of a kind through per interval, so
// that events a remote peer can cause at will do not flood the log. The
// lines it holds back are counted, and the next line let through reports
// their number. Safe for concurrent use; the zero interval lets every line
// through.
type logLimit struct {
	interval time.Duration

	mu   sync.Mutex
	next time.Time // when the next line may go; zero before the first
	held uint64    // lines held back since the last one let through
}

// allow reports whether a line may be logged at now and, when it may, the
// number of lines held back since the previous one.
func (l *logLimit) allow(now time.Time) (ok bool, held uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.next.IsZero() && now.Before(l.next) {
		l.held++
		return false, 0
	}
	held, l.held = l.held, 0
	l.next = now.Add(l.interval)
	return true, held
}
