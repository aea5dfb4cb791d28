package node

import (
	"bufio"
	"context"
	"io"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// scrape GETs n's /metrics and returns every sample by its line's key, the
// metric name with its labels as the exposition writes them (sorted by
// label name), e.g. `waku_version{version="courier v0.1.0"}`.
func scrape(t *testing.T, n *Node) map[string]float64 {
	t.Helper()
	addrs := n.HTTPAddrs()
	if len(addrs) == 0 {
		t.Fatal("no metrics server")
	}
	resp, err := http.Get("http://" + addrs[len(addrs)-1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s %s", resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// metricsPair is a relaying publisher and a relaying, archiving receiver,
// both serving /metrics, after the publisher has sent msgs and the
// receiver has archived them all.
type metricsPair struct {
	pub, recv *Node
	envs      []*message.Envelope
}

func newMetricsPair(t *testing.T, payloads ...[]byte) *metricsPair {
	t.Helper()
	ctx := context.Background()
	base := Config{ListenAddress: "127.0.0.1", Relay: true, MetricsServer: true, MetricsAddress: "127.0.0.1", AgentString: "courier-metrics-test"}
	pub, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Stop(ctx) })
	archived := make(chan error, len(payloads))
	rcfg := base
	rcfg.Store, rcfg.DataDir = true, t.TempDir()
	rcfg.OnArchived = func(_ *message.Envelope, err error) { archived <- err }
	recv, err := New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Stop(ctx) })
	for _, n := range []*Node{pub, recv} {
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Host().Connect(ctx, peer.AddrInfo{ID: recv.Host().ID(), Addrs: recv.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	testwait.Until(t, "a relay peer", func() bool { return len(pub.Relay().TopicPeers(topic)) > 0 })
	testwait.Until(t, "the metadata exchange", func() bool {
		_, a := pub.Metadata().Peer(recv.Host().ID())
		_, b := recv.Metadata().Peer(pub.Host().ID())
		return a && b
	})
	p := &metricsPair{pub: pub, recv: recv}
	for _, pl := range payloads {
		env, err := pub.Publish(ctx, topic, &message.Message{Payload: pl, ContentTopic: "/courier/1/metrics/proto"})
		if err != nil {
			t.Fatal(err)
		}
		p.envs = append(p.envs, env)
	}
	for range payloads {
		if err := testwait.Recv(t, archived, "an archived message"); err != nil {
			t.Fatalf("archived with %v", err)
		}
	}
	return p
}

// TestArchiveDurationsScraped checks that waku_archive_insert_duration_seconds
// counts one sample per archived message, as nwaku observes each insert,
// waku_archive_query_duration_seconds one per query, and the archive's
// per-shard and error counts.
func TestArchiveDurationsScraped(t *testing.T) {
	p := newMetricsPair(t, []byte("one"), make([]byte, 2000), make([]byte, 70_000))
	if _, err := p.recv.Archive().Query(context.Background(), archive.Query{Forward: true}); err != nil {
		t.Fatal(err)
	}
	m := scrape(t, p.recv)
	st := p.recv.Archive().Stats()
	if st.Inserts != 3 {
		t.Fatalf("archive stats %+v, want 3 inserts", st)
	}
	for key, want := range map[string]float64{
		"waku_archive_insert_duration_seconds_count":             3,
		`waku_archive_insert_duration_seconds_bucket{le="+Inf"}`: 3,
		"waku_archive_query_duration_seconds_count":              float64(st.Queries),
		`waku_archive_messages_per_shard{shard="0"}`:             3,
		`waku_archive_errors_total{type="insert_failure"}`:       0,
		`waku_archive_errors_total{type="retpolicy_failure"}`:    0,
	} {
		if got, ok := m[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	if m["waku_archive_insert_duration_seconds_sum"] <= 0 {
		t.Errorf("insert duration sum %v", m["waku_archive_insert_duration_seconds_sum"])
	}
	// nim-metrics' default buckets, cumulative.
	prev := 0.0
	for _, le := range []string{"0.005", "0.01", "0.025", "0.05", "0.075", "0.1", "0.25", "0.5", "0.75", "1", "2.5", "5", "7.5", "10", "+Inf"} {
		key := `waku_archive_insert_duration_seconds_bucket{le="` + le + `"}`
		got, ok := m[key]
		if !ok || got < prev {
			t.Errorf("%s = %v (present %v), after %v", key, got, ok, prev)
		}
		prev = got
	}
}

// TestRelayTrafficScraped checks nwaku's relay traffic figures on both
// ends of a known exchange: the publisher sends three messages to its one
// peer, which receives each once and forwards none; and the connected
// peers by agent and by shard.
func TestRelayTrafficScraped(t *testing.T) {
	payloads := [][]byte{[]byte("one"), make([]byte, 2000), make([]byte, 70_000)}
	p := newMetricsPair(t, payloads...)
	topic := shard.RelayShard{}.PubsubTopic()
	var topicBytes float64 // data plus the topic's length, per message
	for _, env := range p.envs {
		topicBytes += float64(len(env.Wire()) + len(topic))
	}
	bytesKey := func(typ, dir string) string {
		return `waku_relay_network_bytes_total{direction="` + dir + `",topic="` + topic + `",type="` + typ + `"}`
	}
	shardKey := func(name string) string { return "waku_relay_" + name + `_msg_bytes_per_shard{shard="` + topic + `"}` }
	// Both ends fold in three payloads: the publisher's three sends, the
	// receiver's three validated messages.
	sizes := map[string]float64{shardKey("total"): 72_003, shardKey("max"): 70_000, shardKey("avg"): 24_001}
	for _, c := range []struct {
		name string
		n    *Node
		want map[string]float64
	}{
		{"publisher", p.pub, map[string]float64{bytesKey("net", "in"): topicBytes, bytesKey("gross", "in"): 0, bytesKey("net", "out"): topicBytes}},
		{"receiver", p.recv, map[string]float64{bytesKey("net", "in"): topicBytes, bytesKey("gross", "in"): topicBytes, bytesKey("net", "out"): 0}},
	} {
		m := scrape(t, c.n)
		maps.Copy(c.want, sizes)
		// waku_histogram_message_size: payloads of 0.003, 2 and 70 kB.
		for le, n := range map[string]float64{"0": 0, "1": 1, "3": 2, "50": 2, "75": 3, "1000": 3, "+Inf": 3} {
			c.want[`waku_histogram_message_size_bucket{le="`+le+`"}`] = n
		}
		c.want["waku_histogram_message_size_count"] = 3
		// The one peer, courier by its agent string, relays shard 0 as
		// its metadata says.
		c.want[`waku_connected_peers_per_agent{agent="courier-metrics-test"}`] = 1
		c.want[`waku_connected_peers_per_shard{shard="0"}`] = 1
		// One connection, dialled by the publisher, carries the relay's
		// two long-lived streams, one opened by each end.
		relayKey := func(name, dir string) string {
			return name + `{direction="` + dir + `",protocol="/vac/waku/relay/2.0.0"}`
		}
		c.want[relayKey("waku_streams_peers", "In")] = 1
		c.want[relayKey("waku_streams_peers", "Out")] = 1
		connDir, otherDir := "Out", "In"
		if c.n == p.recv {
			connDir, otherDir = "In", "Out"
		}
		c.want[relayKey("waku_connected_peers", connDir)] = 1
		c.want[relayKey("waku_connected_peers", otherDir)] = 0
		for key, want := range c.want {
			if got, ok := m[key]; !ok || got != want {
				t.Errorf("%s: %s = %v (present %v), want %v", c.name, key, got, ok, want)
			}
		}
		if got := m["waku_histogram_message_size_sum"]; math.Abs(got-72.003) > 1e-9 {
			t.Errorf("%s: waku_histogram_message_size_sum = %v, want 72.003", c.name, got)
		}
	}
}

// TestCountersExposedWithTotal checks that every counter a node with its
// services on serves, go-libp2p's aside, is named <name>_total: nim-metrics exposes nwaku's
// counters so (waku_store_queries as waku_store_queries_total), and that
// is the name nwaku's dashboards read.
func TestCountersExposedWithTotal(t *testing.T) {
	ctx := context.Background()
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, StoreSync: true, Filter: true, Lightpush: true, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
		own := !strings.HasPrefix(mf.GetName(), "libp2p_") // go-libp2p names its own
		if own && mf.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(mf.GetName(), "_total") {
			t.Errorf("counter %s is not named <name>_total", mf.GetName())
		}
	}
	for _, name := range []string{"waku_store_queries_total", "waku_filter_requests_total", "waku_lightpush_v3_messages_total",
		"waku_px_peers_sent_total", "total_bytes_exchanged_total", "waku_archive_errors_total", "waku_node_errors_total"} {
		if !seen[name] {
			t.Errorf("%s not served", name)
		}
	}
}

// TestFilterFailuresCounted checks waku_node_errors_total's filter types:
// subscribe and unsubscribe requests to --filternode that the filter node
// refuses count, as in nwaku's filter API; accepted ones and pings do not.
func TestFilterFailuresCounted(t *testing.T) {
	ctx := context.Background()
	start := func(cfg Config) *Node {
		t.Helper()
		return startTestNode(t, cfg)
	}
	server := start(Config{Relay: true, Filter: true})
	client := start(Config{FilterNode: server.ListenAddresses()[0]})
	topic := shard.RelayShard{}.PubsubTopic()
	send, err := client.restAPI().FilterService()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		req    filter.SubscribeRequest
		status uint32
	}{
		{filter.SubscribeRequest{Type: filter.Subscribe, ContentTopics: []string{"/app/1/t/proto"}}, 400}, // no pubsub topic
		{filter.SubscribeRequest{Type: filter.Unsubscribe, PubsubTopic: topic, HasPubsubTopic: true, ContentTopics: []string{"/app/1/t/proto"}}, 404},
		{filter.SubscribeRequest{Type: filter.UnsubscribeAll}, 404},
		{filter.SubscribeRequest{Type: filter.SubscriberPing}, 404},
		{filter.SubscribeRequest{Type: filter.Subscribe, PubsubTopic: topic, HasPubsubTopic: true, ContentTopics: []string{"/app/1/t/proto"}}, 200},
	} {
		c.req.RequestID = strconv.Itoa(i)
		resp, err := send(ctx, c.req)
		if err != nil || resp.StatusCode != c.status {
			t.Fatalf("request %d: %+v %v, want status %d", i, resp, err, c.status)
		}
	}
	for typ, want := range map[string]float64{"subscribe_filter_failure": 1, "unsubscribe_filter_failure": 2, "publish_failure": 0} {
		if got := metricValue(t, client, "waku_node_errors_total", "type", typ); got != want {
			t.Errorf("waku_node_errors_total{type=%q} = %v, want %v", typ, got, want)
		}
	}
}
