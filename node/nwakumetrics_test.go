package node

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
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
	base := Config{ListenAddress: "127.0.0.1", Relay: true, MetricsServer: true, MetricsAddress: "127.0.0.1"}
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
// and waku_archive_query_duration_seconds one per query.
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
