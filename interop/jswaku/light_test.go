//go:build unix

package jswaku

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/shard"
)

type lightFilterResult struct {
	Subscribed   bool     `json:"subscribed"`
	Pushed       int      `json:"pushed"`
	PushFailures []string `json:"pushFailures"`
	Received     struct {
		Payload      string `json:"payload"`
		ContentTopic string `json:"contentTopic"`
		PubsubTopic  string `json:"pubsubTopic"`
		Timestamp    string `json:"timestamp"`
		Hash         string `json:"hash"`
	} `json:"received"`
	PingSubscribed string `json:"pingSubscribed"`
	Unsubscribed   bool   `json:"unsubscribed"`
	PingAfter      string `json:"pingAfter"`
}

// TestLightpushToFilter: a @waku/sdk light node sends with lightpush
// through courier node A, which relays to courier node B, and a second
// light node subscribed with filter at B receives it; payload and hash are
// compared. Then js-waku's filter ping answers OK, its unsubscribe works,
// and a ping after it is refused (404).
func TestLightpushToFilter(t *testing.T) {
	Require(t)
	a := StartNode(t, node.Config{Relay: true, Lightpush: true})
	b := StartNode(t, node.Config{Relay: true, Filter: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	for len(a.Relay().TopicPeers(topic)) == 0 || len(b.Relay().TopicPeers(topic)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no relay mesh between A and B")
		case <-time.After(20 * time.Millisecond):
		}
	}
	const contentTopic, payload = "/courier/1/light-interop/proto", "from a js-waku light node"
	var res lightFilterResult
	Run(t, "lightfilter.js", map[string]any{
		"pushAddr": WebSocketAddr(t, a), "filterAddr": WebSocketAddr(t, b),
		"contentTopic": contentTopic, "shard": 0, "payload": payload,
	}, &res)
	t.Logf("js-waku: %+v", res)
	if !res.Subscribed || res.Pushed != 1 || len(res.PushFailures) != 0 {
		t.Fatalf("subscribed %v, pushed to %d peers, failures %v", res.Subscribed, res.Pushed, res.PushFailures)
	}
	r := res.Received
	ts, err := strconv.ParseInt(r.Timestamp, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := (&message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: ts}).Hash(topic, nil)
	if r.Payload != payload || r.ContentTopic != contentTopic || r.PubsubTopic != topic || r.Hash != want.String() {
		t.Fatalf("received %+v; want hash %s", r, want)
	}
	if res.PingSubscribed != "ok" || !res.Unsubscribed || res.PingAfter != "Remote peer rejected" {
		t.Fatalf("ping %q, unsubscribe %v, ping after %q", res.PingSubscribed, res.Unsubscribed, res.PingAfter)
	}
	if st := a.Lightpush().Stats(); st.Answers["v3"][200] != 1 || st.PublishedAsArrived != 1 {
		t.Errorf("A's lightpush: %+v", st)
	}
	st := b.Filter().Stats()
	if st.Pushed != 1 || st.Subscribers != 0 || st.Requests["SUBSCRIBER_PING"] != 2 || st.Requests["UNSUBSCRIBE"] != 1 {
		t.Errorf("B's filter: %+v", st)
	}
}

// TestLightpushWithoutRelayPeers: a node with no relay peer answers 505
// NO_PEERS_TO_RELAY, which js-waku reports as a rejection, and its metrics
// count the 505 (nwaku's waku_lightpush_v3_errors_total).
func TestLightpushWithoutRelayPeers(t *testing.T) {
	Require(t)
	n := StartNode(t, node.Config{Relay: true, Lightpush: true})
	var res struct {
		Successes int      `json:"successes"`
		Failures  []string `json:"failures"`
	}
	Run(t, "lightpush.js", map[string]any{"addr": WebSocketAddr(t, n), "contentTopic": "/courier/1/alone/proto", "shard": 0, "payload": "nobody hears"}, &res)
	if res.Successes != 0 || len(res.Failures) != 1 || res.Failures[0] != "Remote peer rejected" {
		t.Fatalf("js-waku: %+v", res)
	}
	if got := metric(t, n, "waku_lightpush_v3_errors_total", "505"); got != 1 {
		t.Fatalf("waku_lightpush_v3_errors_total{type=\"505\"} = %v, want 1 (answers %v)", got, n.Lightpush().Stats().Answers)
	}
}

// metric returns the value of the counter name whose type label is typ in
// n's metrics registry, -1 when there is none.
func metric(t *testing.T, n *node.Node, name, typ string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "type" && l.GetValue() == typ {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
