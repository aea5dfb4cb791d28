package node

import (
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/node/internal/metrics"
)

// Registry returns the node's Prometheus registry: the node's metrics,
// nwaku's (node/internal/metrics), go-libp2p's own, and the Go runtime
// and process collectors. It is the registry /metrics serves.
func (n *Node) Registry() *prometheus.Registry { return n.metrics.Registry() }

// metricSources are the snapshots of the node's parts the metrics read at
// scrape time, for the parts that run.
func (n *Node) metricSources() metrics.Sources {
	s := metrics.Sources{Version: Version, Counters: n.cfg.Counters, Peers: n.peers.Stats, Discovery: n.peers.DiscoveryStats,
		Network: func() metrics.Network { return metrics.ReadNetwork(n.host, n.shards(), n.onShard) }}
	if n.relay != nil {
		s.Relay = n.relay.Stats
	}
	if n.http.rest != nil {
		s.RESTCache = n.http.rest.Stats
	}
	if n.store.server != nil {
		s.Store = n.store.server.Stats
	}
	if n.archive != nil {
		s.Archive = n.archive.Stats
	}
	if g := n.store.gate; g != nil {
		s.ArchiveRefused = g.Refused
	}
	if n.store.sync != nil {
		s.StoreSync = n.store.sync.Stats
	}
	if n.light.filter != nil {
		s.Filter = n.light.filter.Stats
	}
	if n.light.lightpush != nil {
		s.Lightpush = n.light.lightpush.Stats
	}
	return s
}

// onShard reports whether the connected peer id is known to relay shard
// s of the node's cluster: its metadata lists it, or its discovery record
// does.
func (n *Node) onShard(id peer.ID, s uint16) bool {
	if info, ok := n.metadata.Peer(id); ok && info.ClusterID == n.cfg.ClusterID && slices.Contains(info.Shards, s) {
		return true
	}
	rs, ok := n.peers.RecordShards(id)
	return ok && rs.Contains(n.cfg.ClusterID, s)
}
