package node

import (
	"sort"
	"strings"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
)

// nwaku v0.38.1's metrics that dashboards built for nwaku read, with its
// names, types and labels. nwaku declares some growing figures as gauges;
// they keep nwaku's type here under nwaku's name.
var (
	// waku/node/peer_manager/peer_manager.nim: per direction ("In", "Out")
	// and Waku protocol, the connected peers that speak it.
	descConnectedPeers = prometheus.NewDesc("waku_connected_peers", "Number of physical connections per direction and protocol", []string{"direction", "protocol"}, nil)
	descPeerStoreSize  = prometheus.NewDesc("waku_peer_store_size", "Number of peers managed by the peer store", nil, nil)
	// waku/node/waku_node.nim.
	descVersion = prometheus.NewDesc("waku_version", "Waku version info (in git describe format)", []string{"version"}, nil)
	// nim-libp2p's gauge of connected peers (libp2p/switch.nim).
	descLibp2pPeers = prometheus.NewDesc("libp2p_peers", "total connected peers", nil, nil)
	// waku/waku_relay/protocol.nim: the net bytes of every validated
	// message received (WakuMessage bytes plus the pubsub topic's length).
	// courier counts type "net", direction "in"; nwaku also counts "gross"
	// in and "net" out, which go-libp2p-pubsub does not show the relay.
	descRelayNetworkBytes = prometheus.NewDesc("waku_relay_network_bytes_total", "total traffic per topic, distinct gross/net and direction", []string{"topic", "type", "direction"}, nil)
	descRelayTotalBytes   = prometheus.NewDesc("waku_relay_total_msg_bytes_per_shard", "total length of messages seen per shard", []string{"shard"}, nil)
	descRelayAvgBytes     = prometheus.NewDesc("waku_relay_avg_msg_bytes_per_shard", "Average length of messages seen per shard", []string{"shard"}, nil)
	// waku/waku_archive/archive_metrics.nim. nwaku times each insert;
	// courier commits in batches and observes each batch (see insertHistogram).
	descArchiveInsert = prometheus.NewDesc("waku_archive_insert_duration_seconds", "message insertion duration", nil, nil)
)

// nodeErrors is nwaku's waku_node_errors counter (waku/node/waku_node.nim),
// by type; the node counts "publish_failure".
func newNodeErrors() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waku_node_errors_total", Help: "number of wakunode errors"}, []string{"type"})
	c.WithLabelValues("publish_failure")
	return c
}

// insertHistogram turns the archive's batch counters into a histogram of
// commit durations at scrape time: _count and _sum are exact; the batches
// committed between two scrapes fall in the bucket of their mean.
type insertHistogram struct {
	mu          sync.Mutex
	lastBatches uint64
	lastSeconds float64
	buckets     []float64
	counts      []uint64
	count       uint64
	sum         float64
}

func newInsertHistogram() *insertHistogram {
	b := prometheus.DefBuckets // nim-metrics' default buckets are the same
	return &insertHistogram{buckets: b, counts: make([]uint64, len(b))}
}

// update folds in the archive's totals and returns the histogram's state.
func (h *insertHistogram) update(batches uint64, seconds float64) (count uint64, sum float64, buckets map[float64]uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := batches - h.lastBatches; batches > h.lastBatches {
		mean := (seconds - h.lastSeconds) / float64(d)
		i := sort.SearchFloat64s(h.buckets, mean)
		if i < len(h.counts) {
			h.counts[i] += d
		}
		h.count += d
		h.sum += seconds - h.lastSeconds
		h.lastBatches, h.lastSeconds = batches, seconds
	}
	out := make(map[float64]uint64, len(h.buckets))
	var cum uint64
	for i, b := range h.buckets {
		cum += h.counts[i]
		out[b] = cum
	}
	return h.count, h.sum, out
}

// nwakuCollector exports the figures above at scrape time.
type nwakuCollector struct{ n *Node }

func (c nwakuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnectedPeers, descPeerStoreSize, descVersion, descLibp2pPeers,
		descRelayNetworkBytes, descRelayTotalBytes, descRelayAvgBytes, descArchiveInsert} {
		ch <- d
	}
}

func (c nwakuCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descVersion, 1, Version)
	peers := n.host.Network().Peers()
	gauge(descLibp2pPeers, float64(len(peers)))
	gauge(descPeerStoreSize, float64(max(0, len(n.host.Peerstore().Peers())-1))) // less the node itself
	for key, count := range n.connectedPerProtocol() {
		gauge(descConnectedPeers, float64(count), key.dir, string(key.proto))
	}
	if n.relay != nil {
		for topic, ts := range n.relay.Stats().Topics {
			net := ts.Bytes + ts.Messages*uint64(len(topic))
			ch <- prometheus.MustNewConstMetric(descRelayNetworkBytes, prometheus.CounterValue, float64(net), topic, "net", "in")
			gauge(descRelayTotalBytes, float64(ts.Bytes), topic)
			if ts.Messages > 0 {
				gauge(descRelayAvgBytes, float64(ts.Bytes)/float64(ts.Messages), topic)
			}
		}
	}
	if n.archive != nil {
		as := n.archive.Stats()
		count, sum, buckets := n.insertHist.update(as.Batches, as.CommitTime.Seconds())
		ch <- prometheus.MustNewConstHistogram(descArchiveInsert, count, sum, buckets)
	}
}

type dirProto struct {
	dir   string
	proto protocol.ID
}

// connectedPerProtocol counts, per connection direction and Waku protocol
// (/vac/waku/...), the connected peers that speak it, as nwaku's peer
// manager does for waku_connected_peers.
func (n *Node) connectedPerProtocol() map[dirProto]int {
	out := map[dirProto]int{}
	seen := map[dirProto]map[string]bool{}
	for _, conn := range n.host.Network().Conns() {
		dir := "In"
		if conn.Stat().Direction == network.DirOutbound {
			dir = "Out"
		}
		id := conn.RemotePeer()
		protos, err := n.host.Peerstore().GetProtocols(id)
		if err != nil {
			continue
		}
		for _, p := range protos {
			if !strings.HasPrefix(string(p), "/vac/waku/") {
				continue
			}
			k := dirProto{dir, p}
			if seen[k] == nil {
				seen[k] = map[string]bool{}
			}
			if !seen[k][id.String()] {
				seen[k][id.String()] = true
				out[k]++
			}
		}
	}
	return out
}
