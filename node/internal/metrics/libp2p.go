package metrics

import (
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/mplex"
	"github.com/couriernet/courier/node/internal/peers"
)

// nim-libp2p's metrics that nwaku's dashboards read, with its names, types
// and labels, from what go-libp2p and gossipsub measure. nim-metrics lists
// a counter or gauge without labels from its declaration, at 0; these are
// listed likewise.
var (
	// libp2p/protocols/pubsub/pubsub.nim (relay.PubsubStats).
	descPubsubPeers      = prometheus.NewDesc("libp2p_pubsub_peers", "pubsub peer instances", nil, nil)
	descPubsubTopics     = prometheus.NewDesc("libp2p_pubsub_topics", "pubsub subscribed topics", nil, nil)
	descPubsubSubs       = prometheus.NewDesc("libp2p_pubsub_subscriptions_total", "pubsub subscription operations", nil, nil)
	descPubsubUnsubs     = prometheus.NewDesc("libp2p_pubsub_unsubscriptions_total", "pubsub unsubscription operations", nil, nil)
	descPubsubValSuccess = prometheus.NewDesc("libp2p_pubsub_validation_success_total", "pubsub successfully validated messages", nil, nil)
	descPubsubValFailure = prometheus.NewDesc("libp2p_pubsub_validation_failure_total", "pubsub failed validated messages", nil, nil)
	descPubsubValIgnore  = prometheus.NewDesc("libp2p_pubsub_validation_ignore_total", "pubsub ignore validated messages", nil, nil)
	// libp2p/dialer.nim and libp2p/stream/connection.nim (peers.Wire).
	descDialAttempts  = prometheus.NewDesc("libp2p_total_dial_attempts_total", "total attempted dials", nil, nil)
	descDialSuccesses = prometheus.NewDesc("libp2p_successful_dials_total", "dialed successful peers", nil, nil)
	descDialFailures  = prometheus.NewDesc("libp2p_failed_dials_total", "failed dials", nil, nil)
	descNetworkBytes  = prometheus.NewDesc("libp2p_network_bytes_total", "total traffic", []string{"direction"}, nil)
	// libp2p/stream/lpstream.nim: the open stream objects by nim type and
	// direction (ReadNetwork).
	descOpenStreams = prometheus.NewDesc("libp2p_open_streams", "open stream instances", []string{"type", "dir"}, nil)
)

var libp2pDescs = []*prometheus.Desc{descPubsubPeers, descPubsubTopics, descPubsubSubs, descPubsubUnsubs,
	descPubsubValSuccess, descPubsubValFailure, descPubsubValIgnore,
	descDialAttempts, descDialSuccesses, descDialFailures, descNetworkBytes, descOpenStreams}

func collectLibp2p(ch chan<- prometheus.Metric, src *Sources, nw *Network, wire *peers.Wire) {
	ws := wire.Stats()
	counter(ch, descDialAttempts, float64(ws.DialAttempts))
	counter(ch, descDialSuccesses, float64(ws.DialSuccesses))
	counter(ch, descDialFailures, float64(ws.DialFailures))
	counter(ch, descNetworkBytes, float64(ws.BytesIn), "in")
	counter(ch, descNetworkBytes, float64(ws.BytesOut), "out")
	if nw != nil {
		for key, n := range nw.OpenStreams {
			gauge(ch, descOpenStreams, float64(n), key.Type, key.Dir)
		}
	}
	if src.Relay == nil {
		return
	}
	ps := src.Relay().Pubsub
	gauge(ch, descPubsubPeers, float64(ps.Peers))
	gauge(ch, descPubsubTopics, float64(ps.Topics))
	counter(ch, descPubsubSubs, float64(ps.Subscriptions))
	counter(ch, descPubsubUnsubs, float64(ps.Unsubscriptions))
	counter(ch, descPubsubValSuccess, float64(ps.ValidationSuccess))
	counter(ch, descPubsubValFailure, float64(ps.ValidationFailure))
	counter(ch, descPubsubValIgnore, float64(ps.ValidationIgnore))
}

// StreamKind is a nim-libp2p stream type (its objName) and direction
// ("In", "Out").
type StreamKind struct{ Type, Dir string }

// openStreams counts h's open streams as nim-libp2p counts its stream
// objects (libp2p_open_streams): per connection, the transport's stream
// (ChronosStream for TCP, WsStream for WebSocket) and the secured one
// (SecureConn), in the connection's direction; per muxed stream, a
// YamuxStream or, on mplex, an LPChannel, in the stream's direction.
func openStreams(h host.Host) map[StreamKind]int {
	out := map[StreamKind]int{}
	for _, c := range h.Network().Conns() {
		cs := c.ConnState()
		dir := direction(c.Stat().Direction)
		raw := "ChronosStream"
		if cs.Transport == "websocket" {
			raw = "WsStream"
		}
		out[StreamKind{raw, dir}]++
		out[StreamKind{"SecureConn", dir}]++
		muxed := "YamuxStream"
		if cs.StreamMultiplexer == mplex.ID {
			muxed = "LPChannel"
		}
		for _, s := range c.GetStreams() {
			out[StreamKind{muxed, direction(s.Stat().Direction)}]++
		}
	}
	return out
}
