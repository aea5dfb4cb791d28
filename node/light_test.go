package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/shard"
)

// TestLightClientThroughNodes runs a light node C (no relay) against two
// relay nodes: C pushes with lightpush through A, B relays it, and B's
// filter service pushes it to C, which subscribed there. /health reports
// the services and clients.
func TestLightClientThroughNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(cfg Config) *Node {
		t.Helper()
		cfg.ListenAddress, cfg.Logger = "127.0.0.1", slog.New(slog.DiscardHandler)
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Stop(context.Background()) })
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := start(Config{Relay: true, Lightpush: true})
	b := start(Config{Relay: true, Filter: true})
	addr := func(n *Node) string { return n.ListenAddresses()[0] }
	c := start(Config{FilterNode: addr(b), LightpushNode: addr(a), REST: true, RESTAddress: "127.0.0.1"})
	got := make(chan *message.Envelope, 4)
	toREST := c.light.onFilterPush
	c.light.onFilterPush = func(env *message.Envelope) { toREST(env); got <- env }

	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	for len(a.Relay().TopicPeers(topic)) == 0 || len(b.Relay().TopicPeers(topic)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no relay mesh")
		case <-time.After(20 * time.Millisecond):
		}
	}
	fc, fp := c.FilterClient()
	if err := fc.Subscribe(ctx, fp, topic, "/app/1/chat/proto"); err != nil {
		t.Fatal(err)
	}
	lc, lp := c.LightpushClient()
	msg := &message.Message{Payload: []byte("from a light node"), ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano()}
	resp, err := lc.Push(ctx, lp, topic, msg)
	if err != nil || resp.Err() != nil || resp.RelayPeerCount != 1 {
		t.Fatalf("lightpush: %+v %v", resp, err)
	}
	select {
	case env := <-got:
		if !bytes.Equal(env.Message().Payload, msg.Payload) || env.PubsubTopic() != topic || env.Hash() != msg.Hash(topic, nil) {
			t.Fatalf("filter push %q on %q", env.Message().Payload, env.PubsubTopic())
		}
	case <-ctx.Done():
		t.Fatal("no filter push")
	}
	// The same through C's REST API: a filter subscription, a lightpush,
	// and the message back from the filter message cache.
	base := "http://" + c.HTTPAddrs()[0]
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/filter/v2/subscriptions", `{"requestId":"r1","pubsubTopic":"`+topic+`","contentFilters":["/app/1/rest/proto"]}`); code != 200 || body != `{"requestId":"r1","statusDesc":"OK"}` {
		t.Fatalf("filter subscribe: %d %s", code, body)
	}
	if code, body := post("/lightpush/v3/message", `{"pubsubTopic":"`+topic+`","message":{"payload":"cmVzdA==","contentTopic":"/app/1/rest/proto"}}`); code != 200 || body != `{"relayPeerCount":1}` {
		t.Fatalf("lightpush: %d %s", code, body)
	}
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no filter push of the REST message")
	}
	hr, err := http.Get(base + "/filter/v2/messages/" + url.PathEscape("/app/1/rest/proto"))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	if hr.StatusCode != 200 || !strings.Contains(string(text), `"payload":"cmVzdA=="`) {
		t.Fatalf("filter messages: %d %s", hr.StatusCode, text)
	}
	// A subscription to a shard B was not configured with makes B's relay
	// follow it, as the filter's owner, until the last subscriber leaves.
	other := shard.RelayShard{ShardID: 5}.PubsubTopic()
	if err := fc.Subscribe(ctx, fp, other, "/app/1/five/proto"); err != nil {
		t.Fatal(err)
	}
	if got := b.Relay().Owners(other); len(got) != 1 || got[0] != relay.OwnerFilter {
		t.Fatalf("owners of %s: %v", other, got)
	}
	if err := fc.Unsubscribe(ctx, fp, other, "/app/1/five/proto"); err != nil {
		t.Fatal(err)
	}
	if got := b.Relay().Owners(other); got != nil {
		t.Fatalf("owners of %s after unsubscribing: %v", other, got)
	}
	health := func(n *Node) string {
		var s string
		for _, p := range (restBackend{n}).Health().ProtocolsHealth {
			s += fmt.Sprintf("%s=%s ", p.Protocol, p.Health)
		}
		return s
	}
	if h := health(a); h != "Relay=READY Lightpush=READY Legacy Lightpush=READY Filter=NOT_MOUNTED Store=NOT_MOUNTED Peer Exchange=NOT_MOUNTED Rendezvous=NOT_MOUNTED Mix=NOT_MOUNTED Lightpush Client=NOT_MOUNTED Legacy Lightpush Client=NOT_MOUNTED Store Client=NOT_READY Filter Client=NOT_MOUNTED Rln Relay=NOT_MOUNTED " {
		t.Errorf("A health %s", h)
	}
	if h := health(c); h != "Relay=NOT_MOUNTED Lightpush=NOT_MOUNTED Legacy Lightpush=NOT_MOUNTED Filter=NOT_MOUNTED Store=NOT_MOUNTED Peer Exchange=NOT_MOUNTED Rendezvous=NOT_MOUNTED Mix=NOT_MOUNTED Lightpush Client=READY Legacy Lightpush Client=READY Store Client=NOT_READY Filter Client=READY Rln Relay=NOT_MOUNTED " {
		t.Errorf("C health %s", h)
	}
}
