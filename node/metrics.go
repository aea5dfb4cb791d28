package node

import (
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/store"
)

// collector exports the node's counters at scrape time, so the message
// path pays nothing for metrics beyond its own atomic counters. Names
// follow nwaku where one exists (waku_node_messages_total,
// waku_archive_messages, waku_connected_peers).
type collector struct{ n *Node }

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

// serviceBytes sends one waku_service_network_bytes_total sample when v
// counted anything.
func serviceBytes(ch chan<- prometheus.Metric, v uint64, service protocol.ID, direction string) {
	if v > 0 {
		ch <- prometheus.MustNewConstMetric(descServiceBytes, prometheus.CounterValue, float64(v), string(service), direction)
	}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNodeMessages, descArchive, descArchiveBat, descArchiveErrors, descArchiveQueue,
		descCodec, descCodecBytes, descMsgID, descDrops, descTopicMsgs, descTopicBytes,
		descStoreQueries, descStoreErrors, descService, descServiceBytes, descStoreTime} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	n := c.n
	s := n.cfg.Counters.Snapshot()
	counter(descCodec, float64(s.Decodes), "decode")
	counter(descCodec, float64(s.Encodes), "encode")
	counter(descCodec, float64(s.Hashes), "hash")
	counter(descCodecBytes, float64(s.DecodedBytes), "decode")
	counter(descCodecBytes, float64(s.EncodedBytes), "encode")
	counter(descCodecBytes, float64(s.HashedBytes), "hash")
	if n.relay != nil {
		rs := n.relay.Stats()
		counter(descNodeMessages, float64(rs.Delivered), "relay")
		counter(descMsgID, float64(rs.MsgIDHashes))
		for reason, v := range rs.Drops {
			counter(descDrops, float64(v), reason.String())
		}
		if n.rest != nil {
			counter(descDrops, float64(n.rest.Stats().DroppedOldest), rest.DropCacheFull)
		}
		for topic, ts := range rs.Topics {
			counter(descTopicMsgs, float64(ts.Messages), topic)
			counter(descTopicBytes, float64(ts.Bytes), topic)
		}
	}
	if n.store.server != nil {
		ss := n.store.server.Stats()
		counter(descStoreQueries, float64(ss.Queries))
		counter(descStoreErrors, float64(ss.BadRequests), "decode_rpc_failure")
		counter(descService, float64(ss.Answered+ss.Failed-ss.RateLimited), string(store.ProtocolID), "served")
		counter(descService, float64(ss.RateLimited), string(store.ProtocolID), "rejected")
		serviceBytes(ch, ss.BytesIn, store.ProtocolID, "in")
		serviceBytes(ch, ss.BytesOut, store.ProtocolID, "out")
		if ss.QueryTime >= 0 {
			gauge(descStoreTime, ss.QueryTime.Seconds(), "query-db-time")
		}
		if ss.WriteTime >= 0 {
			gauge(descStoreTime, ss.WriteTime.Seconds(), "send-store-resp-time")
		}
	}
	if n.archive != nil {
		as := n.archive.Stats()
		gauge(descArchive, float64(as.Messages), "stored")
		gauge(descArchive, float64(as.Duplicates), "duplicate")
		gauge(descArchive, float64(as.Ephemeral), "ephemeral")
		counter(descArchiveBat, float64(as.Batches))
		// Every message a commit failed to write, from relay, store-sync or
		// store resume, as nwaku counts insert_failure in handleMessage and
		// syncMessageIngress (waku_archive/archive.nim).
		counter(descArchiveErrors, float64(as.Failed), "insert_failure")
		counter(descArchiveErrors, float64(as.RetentionErrors), "retpolicy_failure")
		if g := n.archiveGate; g != nil {
			counter(descArchiveErrors, float64(g.tooOld.Load()), archiveErrTooOld)
			counter(descArchiveErrors, float64(g.futures.Load()), archiveErrFuture)
		}
		gauge(descArchiveQueue, float64(as.QueuedBytes))
	}
}

// Registry returns the node's Prometheus registry: the node's metrics,
// nwaku's (nwakumetrics.go), go-libp2p's own, and the Go runtime and
// process collectors. It is the registry /metrics serves.
func (n *Node) Registry() *prometheus.Registry { return n.reg }

// newRegistry makes the node's registry before the host, so that go-libp2p
// registers its metrics there (libp2p.PrometheusRegisterer).
func (n *Node) newRegistry() {
	n.reg = prometheus.NewRegistry()
	n.nwaku = newNwakuMetrics()
	n.reg.MustRegister(collector{n}, nwakuCollector{n}, storeSyncCollector{n}, lightCollector{n}, discoveryCollector{n},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	n.reg.MustRegister(n.nwaku.collectors()...)
}
