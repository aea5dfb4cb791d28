// Package resume is store resume (--store-resume): at start, a node asks
// one connected store peer for the messages it missed since the newest one
// it archived, and archives them, within bounds that stop a peer that
// answers slowly, endlessly or wrongly (nwaku waku/waku_store/resume.nim).
package resume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// resumeRangeLimit is how far back store resume reaches at most (nwaku
// waku_store/resume.nim, ResumeRangeLimit: 6 hours).
const resumeRangeLimit = 6 * time.Hour

// Limits bound one store resume. Messages are bounded by Pages times
// archive.MaxPageSize, the most a page may hold.
type Limits struct {
	Pages   int           // store queries, the first one included
	Timeout time.Duration // the whole resume, every page
	Page    time.Duration // one query
}

// DefaultLimits: 1,000 pages of at most archive.MaxPageSize (100)
// messages, so 100,000 messages, in 10 minutes in all and 30 s per page.
var DefaultLimits = Limits{Pages: 1000, Timeout: 10 * time.Minute, Page: 30 * time.Second}

// Config is what a resume needs of the node.
type Config struct {
	Host    host.Host
	Archive archive.Archive
	// Peer returns a connected peer that serves store v3, "" for none yet.
	Peer     func() peer.ID
	Counters *message.Counters
	// Archived, when set, is told of each resumed message once the archive
	// committed it (store-sync's index).
	Archived func(env *message.Envelope)
	Limits   Limits
	Logger   *slog.Logger
}

var (
	// errNoStorePeer: no connected peer serves store v3 yet.
	errNoStorePeer = errors.New("no connected peer serves store")
	// errResumePeer: the store peer's answer breaks the query it was asked
	// (window, page size, hashes, cursor); the resume stops there.
	errResumePeer = errors.New("store resume: peer's answer refused")
	// errResumeLimit: the resume reached one of its bounds.
	errResumeLimit = errors.New("store resume: limit reached")
)

// Run runs store resume once, as soon as a connected peer serves store
// v3, and returns when it is done or ctx ends: it asks that peer for every
// message from the newest one archived here (at most resumeRangeLimit
// back) until now, and appends them to the archive through the same
// Append the relay uses. Each returned message was decoded once by the
// store client and is hashed once here. What the peer answers is checked
// as once says; a resume that stops early keeps what it archived, and
// store-sync, when on, repairs the rest. The outcome is logged.
func Run(ctx context.Context, cfg Config) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		got, err := once(ctx, cfg)
		if !errors.Is(err, errNoStorePeer) {
			switch {
			case errors.Is(err, errResumeLimit):
				cfg.Logger.Warn("store resume stopped at its limit", "err", err, "archived", got)
			case err != nil && ctx.Err() == nil:
				cfg.Logger.Warn("store resume failed", "err", err, "archived", got)
			case err == nil:
				cfg.Logger.Info("store resume done", "archived", got)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// once returns how many messages it handed to the archive. It stops
// with an error wrapping errResumeLimit after cfg.Limits' pages or
// time, and with one wrapping errResumePeer at the first page
// that holds more messages than asked for, a message without data, one
// whose hash is not the one the peer gave, one whose timestamp is outside
// the requested window, or a cursor that is not the hash of the page's
// last message (nwaku's and courier's stores set it so;
// waku_archive/archive.nim findMessages), repeats an earlier cursor or
// steps back in time. The pages before it are kept. A message without a
// timestamp (0 or less) is left out: its time cannot be checked, and
// nwaku's archive refuses one too (waku_archive/archive.nim validate).
func once(ctx context.Context, cfg Config) (int, error) {
	p := cfg.Peer()
	if p == "" {
		return 0, errNoStorePeer
	}
	lim := cfg.Limits
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	now := time.Now()
	start := max(newestArchived(ctx, cfg.Archive), now.Add(-resumeRangeLimit).UnixNano())
	end := now.UnixNano()
	req := &store.Request{IncludeData: true, StartTime: &start, EndTime: &end, Forward: true, Limit: archive.MaxPageSize}
	cfg.Logger.Info("store resume started", "peer", p, "since", time.Unix(0, start).UTC())
	total := 0
	var last int64 // the newest timestamp of the pages before
	seen := map[message.Hash]bool{}
	for page := 1; ; page++ {
		if page > lim.Pages {
			return total, fmt.Errorf("%w: %d pages from %s", errResumeLimit, lim.Pages, p)
		}
		qctx, qcancel := context.WithTimeout(ctx, lim.Page)
		res, err := store.Query(qctx, cfg.Host, p, req, cfg.Counters)
		qcancel()
		if err != nil {
			// The stream's deadline, the context's, may pass a moment
			// before the context itself reports it.
			if d, _ := ctx.Deadline(); errors.Is(ctx.Err(), context.DeadlineExceeded) || !time.Now().Before(d) {
				err = fmt.Errorf("%w: %v in all: %w", errResumeLimit, lim.Timeout, err)
			}
			return total, fmt.Errorf("query %s: %w", p, err)
		}
		if err := checkResumePage(res, req, last, seen); err != nil {
			return total, fmt.Errorf("%w: %s, page %d: %w", errResumePeer, p, page, err)
		}
		envs := make([]*message.Envelope, 0, len(res.Messages))
		for _, kv := range res.Messages {
			if kv.Message.Timestamp <= 0 {
				continue
			}
			env := message.NewEnvelope(kv.Message, kv.PubsubTopic, kv.Wire, cfg.Counters)
			if env.Hash() != kv.Hash {
				return total, fmt.Errorf("%w: %s, page %d: message %s has hash %s", errResumePeer, p, page, kv.Hash, env.Hash())
			}
			envs = append(envs, env)
		}
		for _, env := range envs {
			if err := cfg.Archive.Append(ctx, env, archived(cfg, env)); err != nil {
				return total, err
			}
			total++
		}
		if res.Cursor == nil {
			return total, nil
		}
		last = max(last, newestTimestamp(res))
		seen[*res.Cursor] = true
		req.Cursor = res.Cursor
	}
}

// checkResumePage checks one page of a forward resume query against req
// and the pages before: last is their newest timestamp, seen their
// cursors.
func checkResumePage(res *store.Response, req *store.Request, last int64, seen map[message.Hash]bool) error {
	if len(res.Messages) > int(req.Limit) {
		return fmt.Errorf("%d messages, asked for at most %d", len(res.Messages), req.Limit)
	}
	for _, kv := range res.Messages {
		switch {
		case kv.Message == nil:
			return fmt.Errorf("message %s without data", kv.Hash)
		case kv.Message.Timestamp > 0 && (kv.Message.Timestamp < *req.StartTime || kv.Message.Timestamp > *req.EndTime):
			return fmt.Errorf("message %s has timestamp %d, outside the window %d..%d", kv.Hash, kv.Message.Timestamp, *req.StartTime, *req.EndTime)
		}
	}
	if res.Cursor == nil {
		return nil
	}
	switch tail := len(res.Messages) - 1; {
	case tail < 0:
		return errors.New("a cursor after an empty page")
	case *res.Cursor != res.Messages[tail].Hash:
		return fmt.Errorf("cursor %s is not the hash of the page's last message", res.Cursor)
	case seen[*res.Cursor]:
		return fmt.Errorf("cursor %s repeats an earlier one", res.Cursor)
	case newestTimestamp(res) < last:
		return fmt.Errorf("the page ends at timestamp %d, before the previous page's %d", newestTimestamp(res), last)
	}
	return nil
}

// newestTimestamp returns the largest message timestamp of the page, 0
// when none is positive.
func newestTimestamp(res *store.Response) int64 {
	var ts int64
	for _, kv := range res.Messages {
		ts = max(ts, kv.Message.Timestamp)
	}
	return ts
}

// archived tells cfg.Archived of a resumed message once it is archived.
func archived(cfg Config, env *message.Envelope) func(error) {
	return func(err error) {
		if err == nil && cfg.Archived != nil {
			cfg.Archived(env)
		}
	}
}

// newestArchived returns the timestamp of the newest archived message, 0
// for an empty archive.
func newestArchived(ctx context.Context, a archive.Archive) int64 {
	res, err := a.Query(ctx, archive.Query{Limit: 1})
	if err != nil || len(res.Messages) == 0 {
		return 0
	}
	return res.Messages[len(res.Messages)-1].Timestamp
}
