package node

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// TestLibp2pMetricsScraped checks nim-libp2p's metrics that nwaku's
// dashboards read, from a publisher that dialled a receiver once and sent
// it three messages: the receiver's gossipsub has one peer, one topic
// subscribed once, and validated the three messages; the publisher made
// one successful transport dial and, to an address nothing listens on,
// one failed one; stream bytes cover the payloads both ways; and the open
// streams are counted as nim-libp2p's stream objects, one TCP socket and
// one secured connection per side.
func TestLibp2pMetricsScraped(t *testing.T) {
	payloads := [][]byte{make([]byte, 10_000), make([]byte, 20_000), make([]byte, 30_000)}
	p := newMetricsPair(t, payloads...)
	dead, err := ma.NewMultiaddr("/ip4/127.0.0.1/tcp/1")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := peer.Decode("16Uiu2HAmLpzVpxHp2ft8c7d2aGzcGenDVtKnS6tNZW9gSTZNSGh1")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.pub.Host().Connect(context.Background(), peer.AddrInfo{ID: stranger, Addrs: []ma.Multiaddr{dead}}); err == nil {
		t.Fatal("dialled a closed port")
	}
	recv, pub := scrape(t, p.recv), scrape(t, p.pub)
	for key, want := range map[string]float64{
		"libp2p_pubsub_peers":                                  1,
		"libp2p_pubsub_topics":                                 1,
		"libp2p_pubsub_subscriptions_total":                    1,
		"libp2p_pubsub_unsubscriptions_total":                  0,
		"libp2p_pubsub_validation_success_total":               3,
		"libp2p_pubsub_validation_failure_total":               0,
		"libp2p_pubsub_validation_ignore_total":                0,
		"libp2p_total_dial_attempts_total":                     0, // it was dialled
		"libp2p_successful_dials_total":                        0,
		"libp2p_failed_dials_total":                            0,
		`libp2p_open_streams{dir="In",type="ChronosStream"}`:   1,
		`libp2p_open_streams{dir="In",type="SecureConn"}`:      1,
		`waku_peers_errors_total{type="storage_failure"}`:      0,
		`waku_peers_errors_total{type="storage_load_failure"}`: 0,
	} {
		if got, ok := recv[key]; !ok || got != want {
			t.Errorf("receiver %s = %v (listed %v), want %v", key, got, ok, want)
		}
	}
	for key, want := range map[string]float64{
		"libp2p_pubsub_validation_success_total":              0, // its own publishes
		"libp2p_total_dial_attempts_total":                    2,
		"libp2p_successful_dials_total":                       1,
		"libp2p_failed_dials_total":                           1,
		`libp2p_open_streams{dir="Out",type="ChronosStream"}`: 1,
		`libp2p_open_streams{dir="Out",type="SecureConn"}`:    1,
	} {
		if got, ok := pub[key]; !ok || got != want {
			t.Errorf("publisher %s = %v (listed %v), want %v", key, got, ok, want)
		}
	}
	const sent = 60_000
	if in, out := recv[`libp2p_network_bytes_total{direction="in"}`], pub[`libp2p_network_bytes_total{direction="out"}`]; in < sent || out < sent || out < in {
		t.Errorf("stream bytes: receiver read %v, publisher wrote %v; want both over %d, the writer's at least the reader's", in, out, sent)
	}
	if recv[`libp2p_open_streams{dir="In",type="YamuxStream"}`]+recv[`libp2p_open_streams{dir="Out",type="YamuxStream"}`] < 2 {
		t.Errorf("receiver's muxed streams: %v in, %v out; want gossipsub's both ways", recv[`libp2p_open_streams{dir="In",type="YamuxStream"}`], recv[`libp2p_open_streams{dir="Out",type="YamuxStream"}`])
	}
}
