package node

import (
	"context"
	"fmt"

	"github.com/couriernet/courier/storesync"
)

// buildStoreSync creates the store-sync service over the node's archive
// when Config.StoreSync is on. It syncs the pubsub topics the node relays.
func (n *Node) buildStoreSync() error {
	if !n.cfg.StoreSync {
		return nil
	}
	svc, err := storesync.New(n.host, n.archive, storesync.Config{
		PubsubTopics: n.cfg.pubsubTopics(),
		Interval:     n.cfg.StoreSyncInterval,
		Range:        n.cfg.StoreSyncRange,
		RelayJitter:  n.cfg.StoreSyncRelayJitter,
		Counters:     n.cfg.Counters,
		Logger:       n.cfg.Logger.With("protocol", "store-sync"),
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	n.store.sync = svc
	return nil
}

// startStoreSync loads the sync index from the archive, feeds it from the
// relay's dispatcher (the envelope's hash, no second one) and mounts the
// protocols.
func (n *Node) startStoreSync(ctx context.Context) error {
	if n.store.sync == nil {
		return nil
	}
	if n.relay != nil {
		n.relay.AddHandler("store-sync", n.store.sync.Ingest)
	}
	return n.store.sync.Start(ctx)
}

// StoreSync returns the store-sync service, nil when it is off.
func (n *Node) StoreSync() *storesync.Service { return n.store.sync }
