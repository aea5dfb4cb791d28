package metrics

import (
	"strconv"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/peerexchange"
)

// serviceRequests sends nwaku's waku_service_requests_total of a service
// protocol: the requests served and those rejected by its rate limit
// (common/rate_limit/request_limiter.nim checkUsageLimit).
func serviceRequests(ch chan<- prometheus.Metric, service protocol.ID, served, rejected uint64) {
	counter(ch, descService, float64(served), string(service), "served")
	counter(ch, descService, float64(rejected), string(service), "rejected")
}

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
	// nwaku labels a legacy refusal with the info text it answers
	// (lightpush.Stats.LegacyFailures).
	descLightpushV2Err = prometheus.NewDesc("waku_lightpush_errors_total", "number of lightpush protocol errors", []string{"type"}, nil)
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
		var requests uint64
		for _, v := range s.Requests {
			requests += v
		}
		serviceRequests(ch, filter.SubscribeProtocolID, requests+s.BadRequests, s.RateLimited)
		serviceBytes(ch, s.BytesIn, filter.SubscribeProtocolID, "in")
		serviceBytes(ch, s.BytesOut, filter.PushProtocolID, "out")
	}
	if src.Lightpush != nil {
		s := src.Lightpush()
		for version, id := range map[string]protocol.ID{"v3": lightpush.ProtocolID, "v2": lightpush.LegacyProtocolID} {
			var total, limited uint64
			for code, v := range s.Answers[version] {
				total += v
				switch {
				case code == lightpush.StatusTooManyRequests:
					limited += v
				case code != lightpush.StatusOK && version == "v3":
					count(descLightpushV3Err, v, strconv.FormatUint(uint64(code), 10))
				}
			}
			desc := descLightpushV3
			if version == "v2" {
				desc = descLightpushV2
			}
			count(desc, total, "PushRequest")
			serviceRequests(ch, id, total-limited, limited)
		}
		for info, v := range s.LegacyFailures {
			count(descLightpushV2Err, v, info)
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
	// waku/node/peer_manager/peer_manager.nim: failures of the peer
	// storage (--peer-persistence).
	descPeersErrors  = prometheus.NewDesc("waku_peers_errors_total", "Number of peer manager errors", []string{"type"}, nil)
	descDNSDiscovery = prometheus.NewDesc("courier_dns_discovery_errors_total", "DNS discovery failures: trees not fetched or verified, records rejected", []string{"type"}, nil)
	discoveryDescs   = []*prometheus.Desc{descPxPeersSent, descPxErrors, descPxReceived, descDiscv5Errors, descDiscv5Found, descPeerManager, descPeersErrors, descDNSDiscovery}
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
	if ds.PxServing {
		serviceRequests(ch, peerexchange.ProtocolID, srv.Requests-srv.RateLimited, srv.RateLimited)
	}
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
		count(descPeersErrors, p.StorageFailures, "storage_failure")
		count(descPeersErrors, p.StorageLoadFailures, "storage_load_failure")
		count(descDNSDiscovery, p.DNSFailures, "tree")
		count(descDNSDiscovery, p.DNSRejected, "record")
	}
}
