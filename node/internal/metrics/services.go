package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
)

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

var syncDescs = []*prometheus.Desc{descSyncBytes, descSyncMessages, descSyncCached, descSyncRounds, descSyncRanges, descSyncRejected}

func collectStoreSync(ch chan<- prometheus.Metric, src *Sources) {
	if src.StoreSync == nil {
		return
	}
	s := src.StoreSync()
	count := func(d *prometheus.Desc, v uint64, labels ...string) { counter(ch, d, float64(v), labels...) }
	count(descSyncBytes, s.ReconciliationBytesSent, "reconciliation", "sent")
	count(descSyncBytes, s.ReconciliationBytesReceived, "reconciliation", "receive")
	count(descSyncBytes, s.TransferBytesSent, "transfer", "sent")
	count(descSyncBytes, s.TransferBytesReceived, "transfer", "receive")
	count(descSyncMessages, s.MessagesSent, "sent")
	count(descSyncMessages, s.MessagesReceived, "receive")
	gauge(ch, descSyncCached, float64(s.Items))
	count(descSyncRounds, s.Rounds-s.RoundsFailed, "initiator", "ok")
	count(descSyncRounds, s.RoundsFailed, "initiator", "failed")
	count(descSyncRounds, s.Served, "responder", "served")
	count(descSyncRanges, s.Ranges)
	count(descSyncRejected, s.Rejected)
}

// Filter and lightpush metrics, with nwaku's names
// (waku_filter_v2/protocol_metrics.nim, waku_lightpush/protocol_metrics.nim,
// waku_lightpush_legacy/protocol_metrics.nim) and courier's own for the
// push path.
var (
	descFilterRequests = prometheus.NewDesc("waku_filter_requests_total", "Filter subscribe requests received, by type.", []string{"type"}, nil)
	descFilterSubs     = prometheus.NewDesc("waku_filter_subscriptions", "Subscribed filter clients.", nil, nil)
	descFilterErrors   = prometheus.NewDesc("waku_filter_errors_total", "Filter protocol errors, by type.", []string{"type"}, nil)
	descFilterPushes   = prometheus.NewDesc("courier_filter_pushes_total", "Filter push frames, by result: written, dropped on a full subscriber queue, failed.", []string{"result"}, nil)
	descFilterDupes    = prometheus.NewDesc("courier_filter_duplicates_total", "Matching messages not pushed again (same message hash within 2 min).", nil, nil)
	descLightpushV3    = prometheus.NewDesc("waku_lightpush_v3_messages_total", "Lightpush v3 requests answered.", []string{"type"}, nil)
	descLightpushV3Err = prometheus.NewDesc("waku_lightpush_v3_errors_total", "Lightpush v3 answers other than 200, by status code.", []string{"type"}, nil)
	descLightpushV2    = prometheus.NewDesc("waku_lightpush_messages_total", "Legacy lightpush (v2) requests answered.", []string{"type"}, nil)
	descLightpushV2Err = prometheus.NewDesc("waku_lightpush_errors_total", "Legacy lightpush refusals, by the v3 status code of the cause.", []string{"type"}, nil)
	descLightpushPub   = prometheus.NewDesc("courier_lightpush_published_total", "Lightpush messages published, by how: as_arrived (the request's bytes) or reencoded (zero timestamp filled).", []string{"how"}, nil)
)

var lightDescs = []*prometheus.Desc{descFilterRequests, descFilterSubs, descFilterErrors, descFilterPushes, descFilterDupes,
	descLightpushV3, descLightpushV3Err, descLightpushV2, descLightpushV2Err, descLightpushPub}

func collectLight(ch chan<- prometheus.Metric, src *Sources) {
	count := func(d *prometheus.Desc, v uint64, labels ...string) { counter(ch, d, float64(v), labels...) }
	if src.Filter != nil {
		s := src.Filter()
		for typ, v := range s.Requests {
			count(descFilterRequests, v, typ)
		}
		gauge(ch, descFilterSubs, float64(s.Subscribers))
		count(descFilterErrors, s.BadRequests, "decode_rpc_failure")
		count(descFilterErrors, s.Failed, "push_failure")
		count(descFilterErrors, s.RateLimited, "request_limit_reached_failure")
		count(descFilterPushes, s.Pushed, "written")
		count(descFilterPushes, s.Dropped, "dropped")
		count(descFilterPushes, s.Failed, "failed")
		count(descFilterDupes, s.Duplicates)
		serviceBytes(ch, s.BytesIn, filter.SubscribeProtocolID, "in")
		serviceBytes(ch, s.BytesOut, filter.PushProtocolID, "out")
	}
	if src.Lightpush != nil {
		s := src.Lightpush()
		for version, descs := range map[string][2]*prometheus.Desc{"v3": {descLightpushV3, descLightpushV3Err}, "v2": {descLightpushV2, descLightpushV2Err}} {
			var total uint64
			for code, v := range s.Answers[version] {
				total += v
				if code != 200 {
					count(descs[1], v, strconv.FormatUint(uint64(code), 10))
				}
			}
			count(descs[0], total, "PushRequest")
		}
		count(descLightpushPub, s.PublishedAsArrived, "as_arrived")
		count(descLightpushPub, s.Reencoded, "reencoded")
		serviceBytes(ch, s.BytesIn["v3"], lightpush.ProtocolID, "in")
		serviceBytes(ch, s.BytesIn["v2"], lightpush.LegacyProtocolID, "in")
	}
}

// Metrics of discovery, peer exchange and the peer manager. Names follow
// nwaku v0.38.1 where it has one (waku/discovery/waku_discv5.nim,
// waku/waku_peer_exchange/protocol.nim); the others are courier_*.
var (
	descPxPeersSent  = prometheus.NewDesc("waku_px_peers_sent_total", "number of ENRs sent to peer exchange requesters", nil, nil)
	descPxErrors     = prometheus.NewDesc("waku_px_errors_total", "number of peer exchange errors", []string{"type"}, nil)
	descPxReceived   = prometheus.NewDesc("courier_px_peers_received_total", "ENRs received from peer exchange servers that verified and decoded", nil, nil)
	descDiscv5Errors = prometheus.NewDesc("waku_discv5_errors_total", "number of waku discv5 errors", []string{"type"}, nil)
	descDiscv5Found  = prometheus.NewDesc("courier_discv5_records_total", "records discv5 lookups returned, by what became of them", []string{"result"}, nil)
	descPeerManager  = prometheus.NewDesc("courier_peer_manager_events_total", "peer manager events", []string{"event"}, nil)
	descDNSDiscovery = prometheus.NewDesc("courier_dns_discovery_errors_total", "DNS discovery failures: trees not fetched or verified, records rejected", []string{"type"}, nil)
	discoveryDescs   = []*prometheus.Desc{descPxPeersSent, descPxErrors, descPxReceived, descDiscv5Errors, descDiscv5Found, descPeerManager, descDNSDiscovery}
)

func collectDiscovery(ch chan<- prometheus.Metric, src *Sources) {
	count := func(d *prometheus.Desc, v uint64, labels ...string) { counter(ch, d, float64(v), labels...) }
	if src.Discovery == nil {
		return
	}
	ds := src.Discovery()
	srv, cl := ds.PxServer, ds.PxClient
	count(descPxPeersSent, srv.PeersSent)
	count(descPxErrors, srv.BadRequests, "decode_rpc_failure")
	count(descPxErrors, srv.RateLimited, "rate_limited")
	count(descPxErrors, cl.Failures, "request_failure")
	count(descPxErrors, cl.Rejected, "bad_enr")
	count(descPxReceived, cl.Received)
	if ds.Discv5Running {
		s := ds.Discv5
		count(descDiscv5Errors, s.Malformed, "ParseFailure")
		count(descDiscv5Found, s.Filtered, "filtered")
		count(descDiscv5Found, s.Found, "kept")
	}
	if src.Peers != nil {
		p := src.Peers()
		count(descPeerManager, p.Added, "added")
		count(descPeerManager, p.Dials, "dial")
		count(descPeerManager, p.DialFailures, "dial_failure")
		count(descPeerManager, p.Removed, "removed_after_failures")
		count(descPeerManager, p.MetadataPruned, "metadata_pruned")
		count(descPeerManager, p.Colocation, "colocation_closed")
		count(descPeerManager, p.InboundPruned, "inbound_pruned")
		count(descPeerManager, p.StoreFull, "store_full")
		count(descDNSDiscovery, p.DNSFailures, "tree")
		count(descDNSDiscovery, p.DNSRejected, "record")
	}
}
