package node

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// TestRESTUnsubscribeKeepsConfiguredShard: on a node relaying
// /waku/2/rs/0/0 by configuration, a REST client's POST then DELETE of a
// content topic on that shard leaves the shard relayed (and so archived).
func TestRESTUnsubscribeKeepsConfiguredShard(t *testing.T) {
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 0, Shards: []uint16{0},
		NumShardsInNetwork: 1, REST: true, RESTAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer n.Stop(ctx)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const shard0 = "/waku/2/rs/0/0"
	base := "http://" + n.HTTPAddrs()[0]
	steps := []struct{ method, path, body string }{
		{http.MethodPost, "/relay/v1/auto/subscriptions", `["/app/1/chat/proto"]`},
		{http.MethodDelete, "/relay/v1/auto/subscriptions", `["/app/1/chat/proto"]`},
		{http.MethodPost, "/relay/v1/subscriptions", `["` + shard0 + `"]`},
		{http.MethodDelete, "/relay/v1/subscriptions", `["` + shard0 + `"]`},
	}
	for _, st := range steps {
		req, err := http.NewRequestWithContext(ctx, st.method, base+st.path, strings.NewReader(st.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s", st.method, st.path, resp.Status)
		}
		if got := n.Relay().Topics(); !slices.Contains(got, shard0) {
			t.Fatalf("after %s %s %s the relay follows %v, not the configured %s", st.method, st.path, st.body, got, shard0)
		}
	}
	if got, want := n.Relay().Owners(shard0), []relay.Owner{relay.OwnerConfig}; !slices.Equal(got, want) {
		t.Fatalf("owners of %s = %v, want %v", shard0, got, want)
	}
}

// TestAutoPublishWithoutPeers: POST /relay/v1/auto/messages on a node with
// no relay peer on the shard answers nwaku's 400 "Failed to publish:
// publish failed in relay: NoPeersToPublish"; with a peer it answers OK.
// POST /relay/v1/messages answers OK in both cases, as nwaku's handler.
func TestAutoPublishWithoutPeers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(rest bool) *Node {
		return startTestNode(t, Config{Relay: true, NumShardsInNetwork: 1, Shards: []uint16{0}, REST: rest, RESTAddress: "127.0.0.1"})
	}
	a := start(true)
	base := "http://" + a.HTTPAddrs()[0]
	post := func(path, body string) (int, string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const msg = `{"payload":"AQ==","contentTopic":"/app/1/chat/proto"}`
	if code, body := post("/relay/v1/auto/messages", msg); code != 400 || body != "Failed to publish: publish failed in relay: NoPeersToPublish" {
		t.Errorf("auto, no peers: %d %q", code, body)
	}
	if code, body := post("/relay/v1/messages/%2Fwaku%2F2%2Frs%2F0%2F0", msg); code != 200 || body != "OK" {
		t.Errorf("static, no peers: %d %q", code, body)
	}
	b := start(false)
	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	for len(a.Relay().TopicPeers("/waku/2/rs/0/0")) == 0 {
		if ctx.Err() != nil {
			t.Fatal("b never joined the shard")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := post("/relay/v1/auto/messages", msg); code != 200 || body != "OK" {
		t.Errorf("auto, one peer: %d %q", code, body)
	}
}

// TestConfiguredContentTopicsCached: the REST cache follows the content
// topics of --content-topic from the start, as nwaku's pre-subscribed
// cache does (waku/rest_api/endpoint/builder.nim
// startRestServerProtocolSupport), under autosharding only: a GET answers
// 200 without a subscription first, and a relayed message on the topic
// is kept; under static sharding the content topic has no shard and no
// cache.
func TestConfiguredContentTopicsCached(t *testing.T) {
	const ct = "/app/1/cached/proto"
	get := func(n *Node, topic string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + n.HTTPAddrs()[0] + "/relay/v1/auto/messages/" + url.PathEscape(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	auto := startTestNode(t, Config{Relay: true, NumShardsInNetwork: 8, ContentTopics: []string{ct}, REST: true})
	if code, body := get(auto, ct); code != http.StatusOK || body != "[]" {
		t.Fatalf("configured content topic: %d %q, want 200 []", code, body)
	}
	a, _ := auto.Autosharding()
	topic, err := a.PubsubTopic(ct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := auto.Publish(t.Context(), topic, &message.Message{Payload: []byte("kept"), ContentTopic: ct}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the message in the cache", func() bool {
		code, body := get(auto, ct)
		return code == http.StatusOK && strings.Contains(body, `"payload":"a2VwdA=="`)
	})
	if code, _ := get(auto, "/app/1/other/proto"); code != http.StatusNotFound {
		t.Errorf("content topic not configured: %d, want 404", code)
	}
	static := startTestNode(t, Config{Relay: true, ContentTopics: []string{ct}, REST: true})
	if code, _ := get(static, ct); code != http.StatusNotFound {
		t.Errorf("static sharding: %d, want 404", code)
	}
}
