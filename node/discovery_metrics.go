package node

import "github.com/prometheus/client_golang/prometheus"

// Metrics of discovery, peer exchange and the peer manager. Names follow
// nwaku v0.38.1 where it has one (waku/discovery/waku_discv5.nim,
// waku/waku_peer_exchange/protocol.nim); the others are courier_*.
var (
	descPxPeersSent                       = prometheus.NewDesc("waku_px_peers_sent_total", "number of ENRs sent to peer exchange requesters", nil, nil)
	descPxErrors                          = prometheus.NewDesc("waku_px_errors_total", "number of peer exchange errors", []string{"type"}, nil)
	descPxReceived                        = prometheus.NewDesc("courier_px_peers_received_total", "ENRs received from peer exchange servers that verified and decoded", nil, nil)
	descDiscv5Errors                      = prometheus.NewDesc("waku_discv5_errors_total", "number of waku discv5 errors", []string{"type"}, nil)
	descDiscv5Found                       = prometheus.NewDesc("courier_discv5_records_total", "records discv5 lookups returned, by what became of them", []string{"result"}, nil)
	descPeerManager                       = prometheus.NewDesc("courier_peer_manager_events_total", "peer manager events", []string{"event"}, nil)
	descDNSDiscovery                      = prometheus.NewDesc("courier_dns_discovery_errors_total", "DNS discovery failures: trees not fetched or verified, records rejected", []string{"type"}, nil)
	discoveryDescs                        = []*prometheus.Desc{descPxPeersSent, descPxErrors, descPxReceived, descDiscv5Errors, descDiscv5Found, descPeerManager, descDNSDiscovery}
	_                prometheus.Collector = discoveryCollector{}
)

type discoveryCollector struct{ n *Node }

func (c discoveryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range discoveryDescs {
		ch <- d
	}
}

func (c discoveryCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	n := c.n
	ds := n.peers.DiscoveryStats()
	srv, cl := ds.PxServer, ds.PxClient
	counter(descPxPeersSent, srv.PeersSent)
	counter(descPxErrors, srv.BadRequests, "decode_rpc_failure")
	counter(descPxErrors, srv.RateLimited, "rate_limited")
	counter(descPxErrors, cl.Failures, "request_failure")
	counter(descPxErrors, cl.Rejected, "bad_enr")
	counter(descPxReceived, cl.Received)
	if ds.Discv5Running {
		s := ds.Discv5
		counter(descDiscv5Errors, s.Malformed, "ParseFailure")
		counter(descDiscv5Found, s.Filtered, "filtered")
		counter(descDiscv5Found, s.Found, "kept")
	}
	if n.peers != nil {
		p := n.PeerStats()
		counter(descPeerManager, p.Added, "added")
		counter(descPeerManager, p.Dials, "dial")
		counter(descPeerManager, p.DialFailures, "dial_failure")
		counter(descPeerManager, p.Removed, "removed_after_failures")
		counter(descPeerManager, p.MetadataPruned, "metadata_pruned")
		counter(descPeerManager, p.Colocation, "colocation_closed")
		counter(descPeerManager, p.InboundPruned, "inbound_pruned")
		counter(descPeerManager, p.StoreFull, "store_full")
		counter(descDNSDiscovery, p.DNSFailures, "tree")
		counter(descDNSDiscovery, p.DNSRejected, "record")
	}
}
