package metrics

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
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

// observed are nwaku's metrics that the node observes as they happen,
// rather than reading them from counters at scrape time.
type observed struct {
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

func newObserved() observed {
	m := observed{
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

func (m observed) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.nodeErrors, m.insertDuration, m.queryDuration, m.archivedPerShard, m.messageSize, m.filterRequest, m.filterMessage}
}

// ObserveFilter has cfg's filter service report its request and message
// durations to m. A request type's series is made on its first
// observation, as nim-metrics lists a labelled histogram once observed,
// and kept, so that later observations allocate nothing.
func (m observed) ObserveFilter(cfg *filter.Config) {
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

// ObserveRelay has the relay report each delivered message's payload size.
func (m observed) ObserveRelay(cfg *relay.Config) {
	cfg.OnDelivered = func(env *message.Envelope) { m.messageSize.Observe(float64(len(env.Message().Payload)) / 1000) }
}

// ObserveArchive has cfg's archive report its insert and query durations
// to m, and count each inserted message under its shard id as nwaku does
// (waku_archive/archive.nim handleMessage: the shard of a static-shard
// pubsub topic, shard 0 for any other topic). nwaku leaves out the
// messages store sync inserts; courier's archive does not tell them apart
// and counts them too.
func (m observed) ObserveArchive(cfg *archive.Config) {
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

// maxLabelledTopics bounds the pubsub topics ObserveArchive remembers.
const maxLabelledTopics = 1024

// NodeError counts one waku_node_errors_total of type kind
// ("publish_failure", "subscribe_filter_failure",
// "unsubscribe_filter_failure").
func (m observed) NodeError(kind string) { m.nodeErrors.WithLabelValues(kind).Inc() }

var nwakuDescs = []*prometheus.Desc{descConnectedPeers, descStreamsPeers, descConnectedPerAgent, descConnectedPerShard, descPeerStoreSize, descVersion, descLibp2pPeers,
	descStorePeers, descLightpushPeers, descFilterPeers,
	descRelayNetworkBytes, descRelayTotalBytes, descRelayMaxBytes, descRelayAvgBytes}

// Network is what the collectors read of the host's connections
// (ReadNetwork), at scrape time.
type Network struct {
	// Peers is the number of connected peers; PeerStore that of the
	// peers the peerstore knows, the node itself left out.
	Peers, PeerStore int
	// Conns and Streams count, per direction and Waku protocol, the
	// connections with an open stream of it and the open streams
	// (waku_connected_peers, waku_streams_peers).
	Conns, Streams map[DirProto]int
	// PerAgent counts the connected peers by identify's agent string.
	PerAgent map[string]int
	// Shards are the shards the node relays, PerShard the connected peers
	// known to be on each, in the same order.
	Shards   []uint16
	PerShard []int
}

func collectNwaku(ch chan<- prometheus.Metric, src *Sources) {
	gauge(ch, descVersion, 1, src.Version)
	gauge(ch, descStorePeers, 0)
	gauge(ch, descLightpushPeers, 0)
	gauge(ch, descFilterPeers, 0)
	if src.Network != nil {
		nw := src.Network()
		gauge(ch, descLibp2pPeers, float64(nw.Peers))
		gauge(ch, descPeerStoreSize, float64(nw.PeerStore))
		for key, count := range nw.Conns {
			gauge(ch, descConnectedPeers, float64(count), key.Dir, string(key.Proto))
		}
		for key, count := range nw.Streams {
			gauge(ch, descStreamsPeers, float64(count), key.Dir, string(key.Proto))
		}
		for agent, count := range nw.PerAgent {
			gauge(ch, descConnectedPerAgent, float64(count), agent)
		}
		for i, sh := range nw.Shards {
			gauge(ch, descConnectedPerShard, float64(nw.PerShard[i]), strconv.Itoa(int(sh)))
		}
	}
	if src.Relay != nil {
		for topic, ts := range src.Relay().Topics {
			counter(ch, descRelayNetworkBytes, float64(ts.Bytes+ts.Messages*uint64(len(topic))), topic, "net", "in")
			counter(ch, descRelayNetworkBytes, float64(ts.GrossInBytes), topic, "gross", "in")
			counter(ch, descRelayNetworkBytes, float64(ts.NetOutBytes), topic, "net", "out")
			if ts.Sizes > 0 { // nwaku sets the gauges at a shard's first message
				gauge(ch, descRelayTotalBytes, float64(ts.SizeSum), topic)
				gauge(ch, descRelayMaxBytes, float64(ts.SizeMax), topic)
				gauge(ch, descRelayAvgBytes, float64(ts.SizeSum)/float64(ts.Sizes), topic)
			}
		}
	}
}

// ReadNetwork reads h's connections for the collectors: shards are the
// shards the node relays now, onShard reports whether a connected peer is
// known to relay one of them (by its metadata or its ENR).
func ReadNetwork(h host.Host, shards []uint16, onShard func(id peer.ID, shard uint16) bool) Network {
	peers := h.Network().Peers()
	nw := Network{Peers: len(peers), PeerStore: max(0, len(h.Peerstore().Peers())-1), Shards: shards}
	nw.Conns, nw.Streams = wakuStreams(h)
	nw.PerAgent = connectedPerAgent(h, peers)
	for _, s := range shards {
		count := 0
		for _, id := range peers {
			if onShard(id, s) {
				count++
			}
		}
		nw.PerShard = append(nw.PerShard, count)
	}
	return nw
}

// DirProto is a direction ("In", "Out") and a Waku protocol.
type DirProto struct {
	Dir   string
	Proto protocol.ID
}

// wakuStreams counts, per direction and Waku protocol (/vac/waku/...),
// the connections that carry at least one open stream of the protocol (by
// the connection's direction) and the open streams (by the stream's), as
// nwaku's peer manager does for waku_connected_peers and
// waku_streams_peers (peer_manager.nim connectedPeers, getNumStreams).
// Every Waku protocol some peer in the peer store speaks has both
// directions, zero or not (waku_peer_store.nim getWakuProtos).
func wakuStreams(h host.Host) (conns, streams map[DirProto]int) {
	conns, streams = map[DirProto]int{}, map[DirProto]int{}
	ps := h.Peerstore()
	self := h.ID()
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
					conns[DirProto{dir, p}] = 0
					streams[DirProto{dir, p}] = 0
				}
			}
		}
	}
	for _, c := range h.Network().Conns() {
		cdir := direction(c.Stat().Direction)
		var counted []protocol.ID
		for _, st := range c.GetStreams() {
			p := st.Protocol()
			if !isWaku(p) {
				continue
			}
			streams[DirProto{direction(st.Stat().Direction), p}]++
			if !slices.Contains(counted, p) {
				counted = append(counted, p)
				conns[DirProto{cdir, p}]++
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
func connectedPerAgent(h host.Host, peers []peer.ID) map[string]int {
	out := map[string]int{}
	for _, id := range peers {
		if v, err := h.Peerstore().Get(id, "AgentVersion"); err == nil {
			if agent, ok := v.(string); ok {
				out[agent]++
			}
		}
	}
	return out
}
