package node

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/shard"
)

// nwaku v0.38.1's metrics that dashboards built for nwaku read, with its
// names, types and labels. nwaku declares some growing figures as gauges;
// they keep nwaku's type here under nwaku's name.
var (
	// waku/node/peer_manager/peer_manager.nim: per direction ("In", "Out")
	// and Waku protocol, the connections with an open stream of it, and
	// the open streams (Node.wakuStreams).
	descConnectedPeers = prometheus.NewDesc("waku_connected_peers", "Number of physical connections per direction and protocol", []string{"direction", "protocol"}, nil)
	descStreamsPeers   = prometheus.NewDesc("waku_streams_peers", "Number of streams per direction and protocol", []string{"direction", "protocol"}, nil)
	// peer_manager.nim updateMetrics: connected peers per agent string
	// (libp2p identify's AgentVersion), and per shard the node relays the
	// connected peers known to be on it, by their metadata or ENR
	// (waku_peer_store.nim getPeersByShard). nwaku sets these gauges each
	// round and keeps a label it no longer sees at its last value; courier
	// computes them at scrape time from the peers connected then.
	descConnectedPerAgent = prometheus.NewDesc("waku_connected_peers_per_agent", "Number of physical connections per agent", []string{"agent"}, nil)
	descConnectedPerShard = prometheus.NewDesc("waku_connected_peers_per_shard", "Number of physical connections per shard", []string{"shard"}, nil)
	descPeerStoreSize     = prometheus.NewDesc("waku_peer_store_size", "Number of peers managed by the peer store", nil, nil)
	// waku/node/waku_node.nim declares these gauges and nothing in nwaku
	// v0.38.1 sets them (waku_metrics.nim only reads them), so nim-metrics
	// lists them at 0, as a gauge without labels is listed from its
	// declaration; dashboards query them, so courier lists them at 0 too.
	descStorePeers     = prometheus.NewDesc("waku_store_peers", "number of store peers", nil, nil)
	descLightpushPeers = prometheus.NewDesc("waku_lightpush_peers", "number of lightpush peers", nil, nil)
	descFilterPeers    = prometheus.NewDesc("waku_filter_peers", "number of filter peers", nil, nil)
	// waku/node/waku_node.nim.
	descVersion = prometheus.NewDesc("waku_version", "Waku version info (in git describe format)", []string{"version"}, nil)
	// nim-libp2p's gauge of connected peers (libp2p/switch.nim).
	descLibp2pPeers = prometheus.NewDesc("libp2p_peers", "total connected peers", nil, nil)
	// waku/waku_relay/protocol.nim: per pubsub topic, the bytes of
	// messages (data plus the topic's length): "gross" "in", every message
	// received from peers before de-duplication and validation; "net"
	// "in", every message delivered to the node's subscription (received
	// or published here); "net" "out", every message sent, once per peer.
	// nwaku counts no other combination. relay.TopicStats says where
	// courier's counts differ from nwaku's.
	descRelayNetworkBytes = prometheus.NewDesc("waku_relay_network_bytes_total", "total traffic per topic, distinct gross/net and direction", []string{"topic", "type", "direction"}, nil)
	// waku/waku_relay/protocol.nim logMessageInfo: payload lengths of the
	// messages validated from peers and of every message sent to a peer,
	// labelled "shard" but valued with the pubsub topic, as nwaku does.
	descRelayTotalBytes = prometheus.NewDesc("waku_relay_total_msg_bytes_per_shard", "total length of messages seen per shard", []string{"shard"}, nil)
	descRelayMaxBytes   = prometheus.NewDesc("waku_relay_max_msg_bytes_per_shard", "Maximum length of messages seen per shard", []string{"shard"}, nil)
	descRelayAvgBytes   = prometheus.NewDesc("waku_relay_avg_msg_bytes_per_shard", "Average length of messages seen per shard", []string{"shard"}, nil)
)

// nwakuMetrics are nwaku's metrics that the node observes as they happen,
// rather than reading them from counters at scrape time.
type nwakuMetrics struct {
	// waku_node_errors (waku/node/waku_node.nim), by type: nwaku's
	// "subscribe_filter_failure" and "unsubscribe_filter_failure" (the REST
	// filter API's requests to --filternode), and courier's own
	// "publish_failure". nwaku's "keep_alive_failure" counts failed pings
	// of its keep-alive loop, which courier does not run.
	nodeErrors *prometheus.CounterVec
	// waku/waku_archive/archive_metrics.nim: per archived message, the time
	// its insert took (archive.Config.OnInsert), and per query the time the
	// index took to answer (archive.Config.OnQuery).
	insertDuration, queryDuration prometheus.Histogram
	// waku_archive_messages_per_shard: the messages archived per shard id
	// since start, a gauge nwaku increments after each insert.
	archivedPerShard *prometheus.GaugeVec
	// waku_histogram_message_size (waku/node/kernel_api/relay.nim): the
	// payload of every message the relay delivers, in kB of 1000 bytes.
	messageSize prometheus.Histogram
	// waku_filter_v2/protocol_metrics.nim: per subscribe request, by its
	// type, the time applying it took; per message matching a subscriber,
	// the time handing it to the subscribers took (filter.Config
	// OnRequest, OnMessage). Like nwaku, durations are in whole
	// milliseconds.
	filterRequest *prometheus.HistogramVec
	filterMessage prometheus.Histogram
}

// nimMetricsBuckets are nim-metrics' default histogram buckets
// (metrics.nim defaultHistogramBuckets), which nwaku's histograms without
// buckets of their own use; the +Inf bucket is implicit here.
var nimMetricsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

func newNwakuMetrics() nwakuMetrics {
	m := nwakuMetrics{
		nodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waku_node_errors_total", Help: "number of wakunode errors"}, []string{"type"}),
		insertDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waku_archive_insert_duration_seconds",
			Help: "message insertion duration", Buckets: nimMetricsBuckets}),
		queryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waku_archive_query_duration_seconds",
			Help: "history query duration", Buckets: nimMetricsBuckets}),
		archivedPerShard: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waku_archive_messages_per_shard",
			Help: "number of historical messages per shard "}, []string{"shard"}),
		messageSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waku_histogram_message_size",
			Help: "message size histogram in kB", Buckets: []float64{0, 1, 3, 5, 15, 50, 75, 100, 125, 150, 500, 700, 1000}}),
		filterRequest: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "waku_filter_request_duration_seconds",
			Help: "duration of filter subscribe requests", Buckets: nimMetricsBuckets}, []string{"type"}),
		filterMessage: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "waku_filter_handle_message_duration_seconds",
			Help: "duration to push message to filter subscribers", Buckets: append(slices.Clone(nimMetricsBuckets), 15, 20, 30)}),
	}
	m.nodeErrors.WithLabelValues("publish_failure")
	return m
}

func (m nwakuMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.nodeErrors, m.insertDuration, m.queryDuration, m.archivedPerShard, m.messageSize, m.filterRequest, m.filterMessage}
}

// observeFilter has cfg's filter service report its request and message
// durations to m. A request type's series is made on its first
// observation, as nim-metrics lists a labelled histogram once observed,
// and kept, so that later observations allocate nothing.
func (m nwakuMetrics) observeFilter(cfg *filter.Config) {
	var once [4]sync.Once
	var byType [4]prometheus.Observer
	vec, msg := m.filterRequest, m.filterMessage
	cfg.OnRequest = func(t filter.RequestType, d time.Duration) {
		if int(t) >= len(byType) {
			return
		}
		once[t].Do(func() { byType[t] = vec.WithLabelValues(t.String()) })
		byType[t].Observe(wholeMillis(d))
	}
	cfg.OnMessage = func(d time.Duration) { msg.Observe(wholeMillis(d)) }
}

// wholeMillis is d in seconds, truncated to the millisecond as nwaku
// measures its filter durations.
func wholeMillis(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// observeRelay has the relay report each delivered message's payload size.
func (m nwakuMetrics) observeRelay(cfg *relay.Config) {
	cfg.OnDelivered = func(env *message.Envelope) { m.messageSize.Observe(float64(len(env.Message().Payload)) / 1000) }
}

// observeArchive has cfg's archive report its insert and query durations
// to m, and count each inserted message under its shard id as nwaku does
// (waku_archive/archive.nim handleMessage: the shard of a static-shard
// pubsub topic, shard 0 for any other topic). nwaku leaves out the
// messages store sync inserts; courier's archive does not tell them apart
// and counts them too.
func (m nwakuMetrics) observeArchive(cfg *archive.Config) {
	perTopic := map[string]prometheus.Gauge{} // the writer calls OnInsert one at a time
	cfg.OnInsert = func(env *message.Envelope, d time.Duration) {
		m.insertDuration.Observe(d.Seconds())
		g := perTopic[env.PubsubTopic()]
		if g == nil {
			rs, _ := shard.ParsePubsubTopic(env.PubsubTopic()) // the zero shard on error, as nwaku's DefaultRelayShard
			g = m.archivedPerShard.WithLabelValues(strconv.Itoa(int(rs.ShardID)))
			if len(perTopic) < maxLabelledTopics {
				perTopic[env.PubsubTopic()] = g
			}
		}
		g.Inc()
	}
	cfg.OnQuery = func(d time.Duration) { m.queryDuration.Observe(d.Seconds()) }
}

// maxLabelledTopics bounds the pubsub topics observeArchive remembers.
const maxLabelledTopics = 1024

// nwakuCollector exports the figures above at scrape time.
type nwakuCollector struct{ n *Node }

func (c nwakuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnectedPeers, descStreamsPeers, descConnectedPerAgent, descConnectedPerShard, descPeerStoreSize, descVersion, descLibp2pPeers,
		descStorePeers, descLightpushPeers, descFilterPeers,
		descRelayNetworkBytes, descRelayTotalBytes, descRelayMaxBytes, descRelayAvgBytes} {
		ch <- d
	}
}

func (c nwakuCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descVersion, 1, Version)
	gauge(descStorePeers, 0)
	gauge(descLightpushPeers, 0)
	gauge(descFilterPeers, 0)
	peers := n.host.Network().Peers()
	gauge(descLibp2pPeers, float64(len(peers)))
	gauge(descPeerStoreSize, float64(max(0, len(n.host.Peerstore().Peers())-1))) // less the node itself
	conns, streams := n.wakuStreams()
	for key, count := range conns {
		gauge(descConnectedPeers, float64(count), key.dir, string(key.proto))
	}
	for key, count := range streams {
		gauge(descStreamsPeers, float64(count), key.dir, string(key.proto))
	}
	for agent, count := range n.connectedPerAgent(peers) {
		gauge(descConnectedPerAgent, float64(count), agent)
	}
	for _, sh := range n.shards() {
		gauge(descConnectedPerShard, float64(n.connectedOnShard(peers, sh)), strconv.Itoa(int(sh)))
	}
	if n.relay != nil {
		for topic, ts := range n.relay.Stats().Topics {
			counter := func(v uint64, typ, dir string) {
				ch <- prometheus.MustNewConstMetric(descRelayNetworkBytes, prometheus.CounterValue, float64(v), topic, typ, dir)
			}
			counter(ts.Bytes+ts.Messages*uint64(len(topic)), "net", "in")
			counter(ts.GrossInBytes, "gross", "in")
			counter(ts.NetOutBytes, "net", "out")
			if ts.Sizes > 0 { // nwaku sets the gauges at a shard's first message
				gauge(descRelayTotalBytes, float64(ts.SizeSum), topic)
				gauge(descRelayMaxBytes, float64(ts.SizeMax), topic)
				gauge(descRelayAvgBytes, float64(ts.SizeSum)/float64(ts.Sizes), topic)
			}
		}
	}
}

type dirProto struct {
	dir   string
	proto protocol.ID
}

// wakuStreams counts, per direction and Waku protocol (/vac/waku/...),
// the connections that carry at least one open stream of the protocol (by
// the connection's direction) and the open streams (by the stream's), as
// nwaku's peer manager does for waku_connected_peers and
// waku_streams_peers (peer_manager.nim connectedPeers, getNumStreams).
// Every Waku protocol some peer in the peer store speaks has both
// directions, zero or not (waku_peer_store.nim getWakuProtos).
func (n *Node) wakuStreams() (conns, streams map[dirProto]int) {
	conns, streams = map[dirProto]int{}, map[dirProto]int{}
	ps := n.host.Peerstore()
	self := n.host.ID()
	for _, id := range ps.Peers() {
		if id == self {
			continue
		}
		protos, err := ps.GetProtocols(id)
		if err != nil {
			continue
		}
		for _, p := range protos {
			if isWaku(p) {
				for _, dir := range []string{"In", "Out"} {
					conns[dirProto{dir, p}] = 0
					streams[dirProto{dir, p}] = 0
				}
			}
		}
	}
	for _, c := range n.host.Network().Conns() {
		cdir := direction(c.Stat().Direction)
		var counted []protocol.ID
		for _, st := range c.GetStreams() {
			p := st.Protocol()
			if !isWaku(p) {
				continue
			}
			streams[dirProto{direction(st.Stat().Direction), p}]++
			if !slices.Contains(counted, p) {
				counted = append(counted, p)
				conns[dirProto{cdir, p}]++
			}
		}
	}
	return conns, streams
}

func isWaku(p protocol.ID) bool { return strings.HasPrefix(string(p), "/vac/waku") }

// direction is nim-libp2p's name of a direction, as nwaku writes it.
func direction(d network.Direction) string {
	if d == network.DirOutbound {
		return "Out"
	}
	return "In"
}

// connectedPerAgent counts the connected peers by the agent string they
// announced in identify; peers without one are left out, as nwaku leaves
// out peers missing from its AgentBook.
func (n *Node) connectedPerAgent(peers []peer.ID) map[string]int {
	out := map[string]int{}
	for _, id := range peers {
		if v, err := n.host.Peerstore().Get(id, "AgentVersion"); err == nil {
			if agent, ok := v.(string); ok {
				out[agent]++
			}
		}
	}
	return out
}

// connectedOnShard counts the connected peers known to relay shard s of
// the node's cluster: those whose metadata lists it, or whose discovery
// record does.
func (n *Node) connectedOnShard(peers []peer.ID, s uint16) int {
	count := 0
	for _, id := range peers {
		if n.metadata != nil {
			if info, ok := n.metadata.Peer(id); ok && info.ClusterID == n.cfg.ClusterID && slices.Contains(info.Shards, s) {
				count++
				continue
			}
		}
		if rs, ok := n.peers.RecordShards(id); ok && rs.Contains(n.cfg.ClusterID, s) {
			count++
		}
	}
	return count
}
