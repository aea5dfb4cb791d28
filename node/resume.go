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

// errNoStorePeer: no connected peer serves store v3 yet.
var errNoStorePeer = errors.New("no connected peer serves store")

// resume runs store resume (--store-resume) once, as soon as a connected
// peer serves store v3: it asks that peer for every message from the newest
// one archived here (at most resumeRangeLimit back) until now, and appends
// them to the archive through the same Append the relay uses. Each
// returned message was decoded once by the store client; it is hashed
// once here, and one whose hash is not the one the peer gave is refused.
func (n *Node) resume(ctx context.Context) {
	defer n.wg.Done()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		got, err := n.resumeOnce(ctx)
		if !errors.Is(err, errNoStorePeer) {
			if err != nil {
				n.cfg.Logger.Warn("store resume failed", "err", err, "archived", got)
			} else {
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

// resumeOnce returns how many messages it handed to the archive.
func (n *Node) resumeOnce(ctx context.Context) (int, error) {
	p := n.connectedStorePeer()
	if p == "" {
		return 0, errNoStorePeer
	}
	now := time.Now()
	start := max(n.newestArchived(ctx), now.Add(-resumeRangeLimit).UnixNano())
	end := now.UnixNano()
	req := &store.Request{IncludeData: true, StartTime: &start, EndTime: &end, Forward: true, Limit: archive.MaxPageSize}
	n.cfg.Logger.Info("store resume started", "peer", p, "since", time.Unix(0, start).UTC())
	total := 0
	for {
		qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := store.Query(qctx, n.host, p, req, n.cfg.Counters)
		cancel()
		if err != nil {
			return total, fmt.Errorf("query %s: %w", p, err)
		}
		for _, kv := range res.Messages {
			if kv.Message == nil {
				continue
			}
			env := message.NewEnvelope(kv.Message, kv.PubsubTopic, kv.Wire, n.cfg.Counters)
			if env.Hash() != kv.Hash {
				n.cfg.Logger.Warn("store resume: message does not match its hash", "peer", p, "hash", kv.Hash)
				continue
			}
			if err := n.archive.Append(ctx, env, n.resumed(env)); err != nil {
				return total, err
			}
			total++
		}
		if res.Cursor == nil {
			return total, nil
		}
		req.Cursor = res.Cursor
	}
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
