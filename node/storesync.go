package node

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	n.storeSync = svc
	return nil
}

// startStoreSync loads the sync index from the archive and mounts the
// protocols; from then on the archive's commits feed the index
// (indexCommits).
func (n *Node) startStoreSync(ctx context.Context) error {
	if n.storeSync == nil {
		return nil
	}
	return n.storeSync.Start(ctx)
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
// writer; n.storeSync is set in New, before the first Append.
func (n *Node) indexCommits(cfg *archive.Config) {
	if !n.cfg.StoreSync {
		return
	}
	next := cfg.OnInsert
	cfg.OnInsert = func(env *message.Envelope, d time.Duration) {
		if next != nil {
			next(env, d)
		}
		if s := n.storeSync; s != nil {
			s.Ingest(env)
		}
	}
}

// StoreSync returns the store-sync service, nil when it is off.
func (n *Node) StoreSync() *storesync.Service { return n.storeSync }

// Store-sync metrics, with nwaku's names (waku_store_sync/protocols_metrics.nim)
// where nwaku has one.
var (
	descSyncBytes    = prometheus.NewDesc("total_bytes_exchanged_total", "Bytes of store-sync frames, by protocol and direction.", []string{"protocol", "direction"}, nil)
	descSyncMessages = prometheus.NewDesc("total_transfer_messages_exchanged_total", "Messages transferred by store-sync, by direction.", []string{"direction"}, nil)
	descSyncCached   = prometheus.NewDesc("total_messages_cached", "Items in the store-sync index.", nil, nil)
	descSyncRounds   = prometheus.NewDesc("courier_store_sync_rounds_total", "Store-sync sessions, by role and result.", []string{"role", "result"}, nil)
	descSyncRanges   = prometheus.NewDesc("courier_store_sync_ranges_total", "Ranges received in store-sync payloads.", nil, nil)
	descSyncRejected = prometheus.NewDesc("courier_store_sync_rejected_total", "Transferred messages refused: undecodable, or not found missing by reconciliation.", nil, nil)
)

type storeSyncCollector struct{ n *Node }

func (c storeSyncCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSyncBytes, descSyncMessages, descSyncCached, descSyncRounds, descSyncRanges, descSyncRejected} {
		ch <- d
	}
}

func (c storeSyncCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.storeSync == nil {
		return
	}
	s := c.n.storeSync.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descSyncBytes, s.ReconciliationBytesSent, "reconciliation", "sent")
	counter(descSyncBytes, s.ReconciliationBytesReceived, "reconciliation", "receive")
	counter(descSyncBytes, s.TransferBytesSent, "transfer", "sent")
	counter(descSyncBytes, s.TransferBytesReceived, "transfer", "receive")
	counter(descSyncMessages, s.MessagesSent, "sent")
	counter(descSyncMessages, s.MessagesReceived, "receive")
	ch <- prometheus.MustNewConstMetric(descSyncCached, prometheus.GaugeValue, float64(s.Items))
	counter(descSyncRounds, s.Rounds-s.RoundsFailed, "initiator", "ok")
	counter(descSyncRounds, s.RoundsFailed, "initiator", "failed")
	counter(descSyncRounds, s.Served, "responder", "served")
	counter(descSyncRanges, s.Ranges)
	counter(descSyncRejected, s.Rejected)
}
