package health

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// archiveLogEvery is the least time between two log lines about failing
// archive writes; the failures in between are summed into the next line.
const archiveLogEvery = 10 * time.Second

// Archive follows the outcome of the archive's commits, for the log and
// for /health (Node.ArchiveFailing): from a failed batch
// (archive.Config.OnFailure) until the next commit that succeeds
// (OnInsert), archive writes are failing. The first failure of such a run
// is logged at once, later ones at most every archiveLogEvery with the
// messages lost meanwhile, and the end of the run once, with its length
// and count. Messages the archive failed to write
// are counted by the archive (archive.Stats.Failed, the metric
// waku_archive_errors_total{type="insert_failure"}); store-sync fetches them
// again once writes succeed (the node's indexCommits, node/storesync.go,
// keeps them out of its index).
type Archive struct {
	logger  *slog.Logger
	now     func() time.Time
	failing atomic.Bool // read by every commit; set and cleared under mu

	mu       sync.Mutex
	since    time.Time // first failure of the current run
	lastErr  error
	lost     uint64    // messages failed in the current run
	unlogged uint64    // messages failed since the last log line
	logged   time.Time // time of the last log line about the run
}

// NewArchive returns an Archive that logs to logger; writes are not
// failing until the archive reports a failed batch.
func NewArchive(logger *slog.Logger) *Archive {
	return &Archive{logger: logger, now: time.Now}
}

// Observe has cfg's archive report its failed batches and its commits to
// h; the OnInsert already set (the metrics') is called first.
func (h *Archive) Observe(cfg *archive.Config) {
	cfg.OnFailure = h.Failed
	next := cfg.OnInsert
	cfg.OnInsert = func(env *message.Envelope, d time.Duration) {
		if next != nil {
			next(env, d)
		}
		if h.failing.Load() {
			h.recovered()
		}
	}
}

// Failed is archive.Config.OnFailure: a batch of n messages was not
// written, for err.
func (h *Archive) Failed(err error, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if !h.failing.Load() {
		h.since, h.lost, h.unlogged, h.logged = now, 0, 0, time.Time{}
		h.failing.Store(true)
	}
	h.lastErr = err
	h.lost += uint64(n)
	h.unlogged += uint64(n)
	if !h.logged.IsZero() && now.Sub(h.logged) < archiveLogEvery {
		return
	}
	h.logger.Error("archive write failed: messages not stored"+diskFullHint(err),
		"err", err, "messages", h.unlogged, "failing_for", now.Sub(h.since).Round(time.Second), "lost_since_first_failure", h.lost)
	h.logged, h.unlogged = now, 0
}

// recovered ends a run of failures at the first commit that succeeds.
func (h *Archive) recovered() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() {
		return
	}
	h.failing.Store(false)
	h.logger.Warn("archive writes succeed again", "failed_for", h.now().Sub(h.since).Round(time.Second),
		"messages_not_stored", h.lost, "last_err", h.lastErr)
}

// Status returns whether archive writes are failing and, when they are,
// the reason /health gives (Node.ArchiveFailing).
func (h *Archive) Status() (failing bool, desc string) {
	if !h.failing.Load() {
		return false, ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return true, fmt.Sprintf("Archive writes failing since %s (%d messages not stored)%s: %v",
		h.since.UTC().Format(time.RFC3339), h.lost, diskFullHint(h.lastErr), h.lastErr)
}

// diskFullHint names a full disk when err is one: ENOSPC from the file
// system, or the database's own report (SQLite's SQLITE_FULL "database or
// disk is full", Postgres's "could not extend file" with "No space left on
// device").
func diskFullHint(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return ", disk full"
	}
	s := strings.ToLower(err.Error())
	if strings.Contains(s, "disk is full") || strings.Contains(s, "no space left") {
		return ", disk full"
	}
	return ""
}

// Since returns the time of the first failure of the current run of
// failing writes, the zero time when writes are not failing.
func (h *Archive) Since() time.Time {
	if !h.failing.Load() {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since
}
