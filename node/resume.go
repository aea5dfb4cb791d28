package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// resumeRangeLimit is how far back store resume reaches at most (nwaku
// waku_store/resume.nim, ResumeRangeLimit: 6 hours).
const resumeRangeLimit = 6 * time.Hour

// resumeLimits bound one store resume (see the package doc, Store resume).
// Messages are bounded by pages times archive.MaxPageSize, the most a page
// may hold.
type resumeLimits struct {
	pages   int           // store queries, the first one included
	timeout time.Duration // the whole resume, every page
	page    time.Duration // one query
}

// defaultResumeLimits: 1,000 pages of at most archive.MaxPageSize (100)
// messages, so 100,000 messages, in 10 minutes in all and 30 s per page.
var defaultResumeLimits = resumeLimits{pages: 1000, timeout: 10 * time.Minute, page: 30 * time.Second}

var (
	// errNoStorePeer: no connected peer serves store v3 yet.
	errNoStorePeer = errors.New("no connected peer serves store")
	// errResumePeer: the store peer's answer breaks the query it was asked
	// (window, page size, hashes, cursor); the resume stops there.
	errResumePeer = errors.New("store resume: peer's answer refused")
	// errResumeLimit: the resume reached one of its bounds.
	errResumeLimit = errors.New("store resume: limit reached")
)

// resume runs store resume (--store-resume) once, as soon as a connected
// peer serves store v3: it asks that peer for every message from the newest
// one archived here (at most resumeRangeLimit back) until now, and appends
// them to the archive through the same Append the relay uses. Each
// returned message was decoded once by the store client and is hashed once
// here. What the peer answers is checked as resumeOnce says; a resume that
// stops early keeps what it archived, and store-sync, when on, repairs the
// rest.
func (n *Node) resume(ctx context.Context) {
	defer n.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		got, err := n.resumeOnce(ctx)
		if !errors.Is(err, errNoStorePeer) {
			switch {
			case errors.Is(err, errResumeLimit):
				n.cfg.Logger.Warn("store resume stopped at its limit", "err", err, "archived", got)
			case err != nil && ctx.Err() == nil:
				n.cfg.Logger.Warn("store resume failed", "err", err, "archived", got)
			case err == nil:
				n.cfg.Logger.Info("store resume done", "archived", got)
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

// resumeOnce returns how many messages it handed to the archive. It stops
// with an error wrapping errResumeLimit after n.resumeLimits' pages or
// time, and with one wrapping errResumePeer at the first page
// that holds more messages than asked for, a message without data, one
// whose hash is not the one the peer gave, one whose timestamp is outside
// the requested window, or a cursor that is not the hash of the page's
// last message (nwaku's and courier's stores set it so;
// waku_archive/archive.nim findMessages), repeats an earlier cursor or
// steps back in time. The pages before it are kept. A message without a
// timestamp (0 or less) is left out: its time cannot be checked, and
// nwaku's archive refuses one too (waku_archive/archive.nim validate).
func (n *Node) resumeOnce(ctx context.Context) (int, error) {
	p := n.connectedStorePeer()
	if p == "" {
		return 0, errNoStorePeer
	}
	lim := n.resumeLimits
	ctx, cancel := context.WithTimeout(ctx, lim.timeout)
	defer cancel()
	now := time.Now()
	start := max(n.newestArchived(ctx), now.Add(-resumeRangeLimit).UnixNano())
	end := now.UnixNano()
	req := &store.Request{IncludeData: true, StartTime: &start, EndTime: &end, Forward: true, Limit: archive.MaxPageSize}
	n.cfg.Logger.Info("store resume started", "peer", p, "since", time.Unix(0, start).UTC())
	total := 0
	var last int64 // the newest timestamp of the pages before
	seen := map[message.Hash]bool{}
	for page := 1; ; page++ {
		if page > lim.pages {
			return total, fmt.Errorf("%w: %d pages from %s", errResumeLimit, lim.pages, p)
		}
		qctx, qcancel := context.WithTimeout(ctx, lim.page)
		res, err := store.Query(qctx, n.host, p, req, n.cfg.Counters)
		qcancel()
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %v in all: %w", errResumeLimit, lim.timeout, err)
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
			env := message.NewEnvelope(kv.Message, kv.PubsubTopic, kv.Wire, n.cfg.Counters)
			if env.Hash() != kv.Hash {
				return total, fmt.Errorf("%w: %s, page %d: message %s has hash %s", errResumePeer, p, page, kv.Hash, env.Hash())
			}
			envs = append(envs, env)
		}
		for _, env := range envs {
			if err := n.archive.Append(ctx, env, n.resumed(env)); err != nil {
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

// resumed indexes a resumed message for store-sync once it is archived.
func (n *Node) resumed(env *message.Envelope) func(error) {
	return func(err error) {
		if err == nil && n.storeSync != nil {
			n.storeSync.Ingest(env)
		}
	}
}

// newestArchived returns the timestamp of the newest archived message, 0
// for an empty archive.
func (n *Node) newestArchived(ctx context.Context) int64 {
	res, err := n.archive.Query(ctx, archive.Query{Limit: 1})
	if err != nil || len(res.Messages) == 0 {
		return 0
	}
	return res.Messages[len(res.Messages)-1].Timestamp
}
