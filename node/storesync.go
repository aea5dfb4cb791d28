package node

import (
	"context"
	"fmt"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/storesync"
)

// buildStoreSync creates the store-sync service over the node's archive
// when Config.StoreSync is on. It syncs the pubsub topics the node relays.
func (n *Node) buildStoreSync() error {
	if !n.cfg.StoreSync {
		return nil
	}
	cfg := storesync.Config{
		PubsubTopics: n.cfg.pubsubTopics(),
		Interval:     n.cfg.StoreSyncInterval,
		Range:        n.cfg.StoreSyncRange,
		RelayJitter:  n.cfg.StoreSyncRelayJitter,
		Counters:     n.cfg.Counters,
		Logger:       n.cfg.Logger.With("protocol", "store-sync"),
	}
	n.metrics.ObserveStoreSync(&cfg)
	svc, err := storesync.New(n.host, n.archive, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	n.store.sync = svc
	return nil
}

// startStoreSync loads the sync index from the archive and mounts the
// protocols; from then on the archive's commits feed the index
// (indexCommits).
func (n *Node) startStoreSync(ctx context.Context) error {
	if n.store.sync == nil {
		return nil
	}
	return n.store.sync.Start(ctx)
}

// indexCommits has cfg's archive feed the store-sync index with every
// message it commits (stored, or already stored), from whichever path
// (relay, store-sync, store resume), reusing the envelope's hash. A message
// the archive failed to write (a full disk) or never got (refused by the
// timestamp check, archiveGate) stays out of the index, so the next round
// finds it missing and fetches it from a peer, which store-sync inserts
// without the timestamp check. nwaku feeds its index from the relay
// whatever the archive does (waku/node/kernel_api/relay.nim syncHandler),
// so that such a message is never repaired. With the index loaded from the
// archive at start (storesync.Service.Start), it holds what the archive
// holds in the sync window, across restarts. OnInsert runs on the archive's
// writer; n.store.sync is set in New, before the first Append.
func (n *Node) indexCommits(cfg *archive.Config) {
	if !n.cfg.StoreSync {
		return
	}
	next := cfg.OnInsert
	cfg.OnInsert = func(env *message.Envelope, d time.Duration) {
		if next != nil {
			next(env, d)
		}
		if s := n.store.sync; s != nil {
			s.Ingest(env)
		}
	}
}

// StoreSync returns the store-sync service, nil when it is off.
func (n *Node) StoreSync() *storesync.Service { return n.store.sync }
