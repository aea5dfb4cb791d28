package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/health"
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
		return startTestNode(t, cfg)
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
		for _, p := range n.restAPI().Health().ProtocolsHealth {
			s += fmt.Sprintf("%s=%s ", p.Protocol, p.Health)
		}
		return s
	}
	if h := health(a); h != "Relay=READY Lightpush=READY Legacy Lightpush=READY Filter=NOT_MOUNTED Store=NOT_MOUNTED Peer Exchange=NOT_MOUNTED Rendezvous=NOT_MOUNTED Mix=NOT_MOUNTED Lightpush Client=NOT_READY Legacy Lightpush Client=NOT_READY Store Client=NOT_READY Filter Client=READY Rln Relay=NOT_MOUNTED " {
		t.Errorf("A health %s", h)
	}
	if h := health(c); h != "Relay=NOT_MOUNTED Lightpush=NOT_MOUNTED Legacy Lightpush=NOT_MOUNTED Filter=NOT_MOUNTED Store=NOT_MOUNTED Peer Exchange=NOT_MOUNTED Rendezvous=NOT_MOUNTED Mix=NOT_MOUNTED Lightpush Client=READY Legacy Lightpush Client=READY Store Client=NOT_READY Filter Client=READY Rln Relay=NOT_MOUNTED " {
		t.Errorf("C health %s", h)
	}
	// With its service nodes gone, C answers its REST calls with nwaku's
	// dial failure texts (waku/waku_lightpush/client.nim,
	// waku_lightpush_legacy/client.nim, rest_api/endpoint/filter/handlers.nim).
	a.Stop(ctx)
	b.Stop(ctx)
	push := `{"pubsubTopic":"` + topic + `","message":{"payload":"cmVzdA==","contentTopic":"/app/1/rest/proto"}}`
	if code, body := post("/lightpush/v3/message", push); code != 505 || body != `{"statusDesc":"dial_failure: `+a.Host().ID().String()+` is not accessible"}` {
		t.Errorf("lightpush v3 to a stopped node: %d %s", code, body)
	}
	if code, body := post("/lightpush/v1/message", push); code != 503 || body != "Failed to request a message push: dial_failure" {
		t.Errorf("lightpush v1 to a stopped node: %d %s", code, body)
	}
	if code, body := post("/filter/v2/subscriptions", `{"requestId":"r2","pubsubTopic":"`+topic+`","contentFilters":["/app/1/rest/proto"]}`); code != 504 || body != `{"requestId":"r2","statusDesc":"`+b.Host().ID().String()+`"}` {
		t.Errorf("filter subscribe to a stopped node: %d %s", code, body)
	}
}

// TestLightClientsWithoutNodeFlags runs a node C with the REST API and
// neither --filternode nor --lightpushnode. As nwaku v0.38.1, which
// always mounts the filter, lightpush and legacy lightpush clients
// (waku/factory/node_factory.nim) and always installs their REST routes
// (waku/rest_api/endpoint/builder.nim): alone, C reports the clients
// NOT_READY and answers the light routes with nwaku's no-peer texts; once
// it is connected to S, a relay node serving lightpush and filter, the
// clients are READY and the REST calls go to S, selected from the peer
// store (peer_manager.nim selectPeer).
func TestLightClientsWithoutNodeFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(cfg Config) *Node {
		t.Helper()
		return startTestNode(t, cfg)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	push := `{"pubsubTopic":"` + topic + `","message":{"payload":"bGlnaHQ=","contentTopic":"/app/1/light/proto"}}`
	sub := `{"requestId":"s1","pubsubTopic":"` + topic + `","contentFilters":["/app/1/light/proto"]}`

	c := start(Config{REST: true, RESTAddress: "127.0.0.1"})
	// Texts from waku/node/health_monitor/node_health_monitor.nim
	// (getLightpushClientHealth, getLegacyLightpushClientHealth,
	// getFilterClientHealth, getStoreClientHealth).
	wantGolden(t, getHealth(t, c), "health_light_no_service_peer.json")
	// Texts from waku/rest_api/endpoint/lightpush/handlers.nim,
	// legacy_lightpush/handlers.nim and filter/handlers.nim
	// (NoPeerNoDiscoError).
	for _, tc := range []struct{ method, path, body, want string }{
		{"POST", "/lightpush/v3/message", push, `{"statusDesc":"No suitable service peer & no discovery method"}`},
		{"POST", "/lightpush/v1/message", push, "No suitable service peer & no discovery method"},
		{"POST", "/filter/v2/subscriptions", sub, `{"requestId":"s1","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & no discovery method"}`},
		{"GET", "/filter/v2/subscriptions/p1", "", `{"requestId":"p1","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & no discovery method"}`},
	} {
		if code, body := restCall(t, c, tc.method, tc.path, tc.body); code != http.StatusServiceUnavailable || body != tc.want {
			t.Errorf("%s %s alone: %d %s, want 503 %s", tc.method, tc.path, code, body, tc.want)
		}
	}

	s := start(Config{Relay: true, Lightpush: true, Filter: true})
	r := start(Config{Relay: true})
	if err := s.Host().Connect(ctx, peer.AddrInfo{ID: r.Host().ID(), Addrs: r.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	for len(s.Relay().TopicPeers(topic)) == 0 || len(r.Relay().TopicPeers(topic)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no relay mesh")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := c.Host().Connect(ctx, peer.AddrInfo{ID: s.Host().ID(), Addrs: s.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	clients := func() string {
		var out []string
		for _, p := range c.restAPI().Health().ProtocolsHealth {
			switch p.Protocol {
			case health.LightpushClient, health.LegacyLightpushClient, health.FilterClient:
				out = append(out, p.Protocol+"="+string(p.Health)+" "+p.Desc)
			}
		}
		return strings.Join(out, ", ")
	}
	const ready = "Lightpush Client=READY , Legacy Lightpush Client=READY , Filter Client=READY "
	for clients() != ready { // identify may still be under way
		select {
		case <-ctx.Done():
			t.Fatalf("health of C's clients: %s", clients())
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, codec := range []protocol.ID{lightpush.ProtocolID, lightpush.LegacyProtocolID, filter.SubscribeProtocolID} {
		if p, ok := c.SelectServicePeer(codec); !ok || p != s.Host().ID() {
			t.Errorf("service peer for %s: %s %v, want S", codec, p, ok)
		}
	}

	if code, body := restCall(t, c, "POST", "/filter/v2/subscriptions", sub); code != 200 || body != `{"requestId":"s1","statusDesc":"OK"}` {
		t.Fatalf("filter subscribe: %d %s", code, body)
	}
	if got := s.Filter().Subscriptions(); len(got) != 1 || got[0].Peer != c.Host().ID() {
		t.Fatalf("S's filter subscriptions: %+v", got)
	}
	if code, body := restCall(t, c, "GET", "/filter/v2/subscriptions/p2", ""); code != 200 || body != `{"requestId":"p2","statusDesc":"OK"}` {
		t.Fatalf("filter ping: %d %s", code, body)
	}
	if code, body := restCall(t, c, "POST", "/lightpush/v3/message", push); code != 200 || body != `{"relayPeerCount":1}` {
		t.Fatalf("lightpush v3: %d %s", code, body)
	}
	if code, body := restCall(t, c, "POST", "/lightpush/v1/message", push); code != 200 || body != "OK" {
		t.Fatalf("lightpush v1: %d %s", code, body)
	}
	// S pushes what C lightpushed back to C's filter client, into the
	// REST filter cache.
	for {
		code, body := restCall(t, c, "GET", "/filter/v2/messages/"+url.PathEscape("/app/1/light/proto"), "")
		if code != 200 {
			t.Fatalf("filter messages: %d %s", code, body)
		}
		if strings.Contains(body, `"payload":"bGlnaHQ="`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no filter push through REST")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestServicePeerFromDiscovery: with discv5 running and no service peer
// known, the REST light routes answer nwaku's "none discovered" text
// (waku/rest_api/endpoint/lightpush/handlers.nim NoPeerNoneFoundError);
// a peer whose ENR announces lightpush or filter is then a candidate for
// lightpush v3 and filter, not for legacy lightpush, as nwaku's peer store
// takes codecs from ENR capabilities (waku/waku_enr/capabilities.nim
// capabilityToCodec).
func TestServicePeerFromDiscovery(t *testing.T) {
	n := discv5Node(t, 0)
	topic := shard.RelayShard{}.PubsubTopic()
	push := `{"pubsubTopic":"` + topic + `","message":{"payload":"bGlnaHQ=","contentTopic":"/app/1/light/proto"}}`
	if code, body := restCall(t, n, "POST", "/lightpush/v3/message", push); code != 503 || body != `{"statusDesc":"No suitable service peer & none discovered"}` {
		t.Errorf("lightpush v3: %d %s", code, body)
	}
	if code, body := restCall(t, n, "POST", "/lightpush/v1/message", push); code != 503 || body != "No suitable service peer & none discovered" {
		t.Errorf("lightpush v1: %d %s", code, body)
	}
	if code, body := restCall(t, n, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"a"}`); code != 503 || body != `{"requestId":"a","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & none discovered"}` {
		t.Errorf("filter: %d %s", code, body)
	}

	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/1")
	n.peers.Add(discovery.Peer{ID: id, Addrs: []ma.Multiaddr{addr}, Caps: discovery.Lightpush | discovery.Filter, HasCaps: true}, state.Discv5)
	for _, tc := range []struct {
		codec protocol.ID
		ok    bool
	}{{lightpush.ProtocolID, true}, {filter.SubscribeProtocolID, true}, {lightpush.LegacyProtocolID, false}} {
		if p, ok := n.SelectServicePeer(tc.codec); ok != tc.ok || (ok && p != id) {
			t.Errorf("SelectServicePeer(%s) = %s %v, want ok %v", tc.codec, p, ok, tc.ok)
		}
	}
}
