package metrics

import (
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/store"
)

// The node's own figures. Names follow nwaku where one exists
// (waku_node_messages_total, waku_archive_messages).
var (
	descNodeMessages = prometheus.NewDesc("waku_node_messages_total", "Relayed messages dispatched, by type.", []string{"type"}, nil)
	descArchive      = prometheus.NewDesc("waku_archive_messages", "Messages in the archive (type stored), and messages acknowledged without storing since start (duplicate, ephemeral).", []string{"type"}, nil)
	descArchiveBat   = prometheus.NewDesc("waku_archive_batches_total", "Archive batch commits.", nil, nil)
	// nwaku waku/waku_archive/archive_metrics.nim: relayed messages the
	// archive refused (archiveGate) or failed to insert, and failed
	// retention runs. nim-metrics exposes a counter with "_total".
	descArchiveErrors = prometheus.NewDesc("waku_archive_errors_total", "number of store protocol errors", []string{"type"}, nil)
	descArchiveQueue  = prometheus.NewDesc("courier_archive_queue_bytes", "Bytes queued for the archive writer.", nil, nil)
	descCodec         = prometheus.NewDesc("courier_codec_operations_total", "WakuMessage decodes, encodes and deterministic hashes.", []string{"op"}, nil)
	descCodecBytes    = prometheus.NewDesc("courier_codec_bytes_total", "Bytes decoded, encoded and hashed.", []string{"op"}, nil)
	descMsgID         = prometheus.NewDesc("courier_relay_msgid_hashes_total", "gossipsub message-id SHA-256 passes.", nil, nil)
	descDrops         = prometheus.NewDesc("courier_drops_total", "Messages lost, by reason.", []string{"reason"}, nil)
	descTopicMsgs     = prometheus.NewDesc("waku_relay_messages_total", "Relayed messages by pubsub topic.", []string{"pubsub_topic"}, nil)
	descTopicBytes    = prometheus.NewDesc("waku_relay_bytes_total", "Relayed encoded bytes by pubsub topic.", []string{"pubsub_topic"}, nil)
	// nwaku waku_store/protocol_metrics.nim and common/rate_limit/service_metrics.nim.
	descStoreQueries = prometheus.NewDesc("waku_store_queries_total", "number of store queries received", nil, nil)
	descStoreErrors  = prometheus.NewDesc("waku_store_errors_total", "number of store protocol errors", []string{"type"}, nil)
	descService      = prometheus.NewDesc("waku_service_requests_total", "number of non-relay service requests received", []string{"service", "state"}, nil)
	// waku_service_network_bytes: per service protocol and direction
	// ("in", "out"), the bytes nwaku counts (store.ServerStats,
	// filter.Stats, lightpush.Stats say which). As with nim-metrics'
	// labelled counters, a series appears once it has counted.
	descServiceBytes = prometheus.NewDesc("waku_service_network_bytes_total", "total incoming traffic of specific waku services", []string{"service", "direction"}, nil)
	// waku_store_time_seconds: the duration of the last store request's
	// phase, "query-db-time" and "send-store-resp-time", each listed once
	// measured (a gauge nwaku sets per request).
	descStoreTime = prometheus.NewDesc("waku_store_time_seconds", "Time in seconds spent by each store phase", []string{"phase"}, nil)
)

var nodeDescs = []*prometheus.Desc{descNodeMessages, descArchive, descArchiveBat, descArchiveErrors, descArchiveQueue,
	descCodec, descCodecBytes, descMsgID, descDrops, descTopicMsgs, descTopicBytes,
	descStoreQueries, descStoreErrors, descService, descServiceBytes, descStoreTime}

// serviceBytes sends one waku_service_network_bytes_total sample when v
// counted anything.
func serviceBytes(ch chan<- prometheus.Metric, v uint64, service protocol.ID, direction string) {
	if v > 0 {
		ch <- prometheus.MustNewConstMetric(descServiceBytes, prometheus.CounterValue, float64(v), string(service), direction)
	}
}

func collectNode(ch chan<- prometheus.Metric, src *Sources) {
	if src.Counters != nil {
		s := src.Counters.Snapshot()
		counter(ch, descCodec, float64(s.Decodes), "decode")
		counter(ch, descCodec, float64(s.Encodes), "encode")
		counter(ch, descCodec, float64(s.Hashes), "hash")
		counter(ch, descCodecBytes, float64(s.DecodedBytes), "decode")
		counter(ch, descCodecBytes, float64(s.EncodedBytes), "encode")
		counter(ch, descCodecBytes, float64(s.HashedBytes), "hash")
	}
	var rs relay.Stats
	if src.Relay != nil {
		rs = src.Relay()
		counter(ch, descNodeMessages, float64(rs.Delivered), "relay")
		counter(ch, descMsgID, float64(rs.MsgIDHashes))
		for reason, v := range rs.Drops {
			counter(ch, descDrops, float64(v), reason.String())
		}
		if src.RESTCache != nil {
			counter(ch, descDrops, float64(src.RESTCache().DroppedOldest), rest.DropCacheFull)
		}
		for topic, ts := range rs.Topics {
			counter(ch, descTopicMsgs, float64(ts.Messages), topic)
			counter(ch, descTopicBytes, float64(ts.Bytes), topic)
		}
	}
	if src.Store != nil {
		ss := src.Store()
		counter(ch, descStoreQueries, float64(ss.Queries))
		counter(ch, descStoreErrors, float64(ss.BadRequests), "decode_rpc_failure")
		counter(ch, descService, float64(ss.Answered+ss.Failed-ss.RateLimited), string(store.ProtocolID), "served")
		counter(ch, descService, float64(ss.RateLimited), string(store.ProtocolID), "rejected")
		serviceBytes(ch, ss.BytesIn, store.ProtocolID, "in")
		serviceBytes(ch, ss.BytesOut, store.ProtocolID, "out")
		if ss.QueryTime >= 0 {
			gauge(ch, descStoreTime, ss.QueryTime.Seconds(), "query-db-time")
		}
		if ss.WriteTime >= 0 {
			gauge(ch, descStoreTime, ss.WriteTime.Seconds(), "send-store-resp-time")
		}
	}
	if src.Archive != nil {
		as := src.Archive()
		gauge(ch, descArchive, float64(as.Messages), "stored")
		gauge(ch, descArchive, float64(as.Duplicates), "duplicate")
		gauge(ch, descArchive, float64(as.Ephemeral), "ephemeral")
		counter(ch, descArchiveBat, float64(as.Batches))
		if src.Relay != nil {
			counter(ch, descArchiveErrors, float64(rs.Drops[relay.DropArchive]), "insert_failure")
		}
		counter(ch, descArchiveErrors, float64(as.RetentionErrors), "retpolicy_failure")
		if src.ArchiveRefused != nil {
			tooOld, future := src.ArchiveRefused()
			counter(ch, descArchiveErrors, float64(tooOld), "invalid_message_too_old")
			counter(ch, descArchiveErrors, float64(future), "invalid_message_future_timestamp")
		}
		gauge(ch, descArchiveQueue, float64(as.QueuedBytes))
	}
}
