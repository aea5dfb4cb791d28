package node

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// exchange sends req on a new stream of proto from n to server and returns
// the response read back.
func exchange(t *testing.T, n, server *Node, proto protocol.ID, req []byte) []byte {
	t.Helper()
	ctx := context.Background()
	st, err := n.Host().NewStream(ctx, server.Host().ID(), proto)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := lpframe.Write(st, req); err != nil {
		t.Fatal(err)
	}
	resp, err := lpframe.Read(st, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestServiceMetricsScraped sends one store query, one lightpush v3 and
// one legacy request, and one filter subscription that then gets one push,
// and scrapes nwaku's service metrics: waku_service_network_bytes_total
// with the exact protobuf lengths nwaku counts (requests in; store
// responses and filter pushes out), both waku_store_time_seconds phases,
// one observation in each filter histogram, and the unset peers gauges at
// 0 (waku/node/waku_node.nim declares them; nothing sets them).
func TestServiceMetricsScraped(t *testing.T) {
	ctx := context.Background()
	start := func(cfg Config) *Node {
		t.Helper()
		return startTestNode(t, cfg)
	}
	server := start(Config{Relay: true, Store: true, Filter: true, Lightpush: true, DataDir: t.TempDir(),
		MetricsServer: true, MetricsAddress: "127.0.0.1"})
	client := start(Config{})
	if err := client.Host().Connect(ctx, peer.AddrInfo{ID: server.Host().ID(), Addrs: server.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	const ct = "/courier/1/service-metrics/proto"

	storeReq := (&store.Request{RequestID: "q", IncludeData: true, PubsubTopic: topic, ContentTopics: []string{ct}}).Append(nil)
	storeResp := exchange(t, client, server, store.ProtocolID, storeReq)
	wire := (&message.Message{Payload: []byte("pushed"), ContentTopic: ct, Timestamp: 1, Present: message.HasTimestamp}).Encode(nil)
	lpReq := (&lightpush.Request{RequestID: "p", PubsubTopic: topic, HasPubsubTopic: true, Message: wire}).Append(nil)
	exchange(t, client, server, lightpush.ProtocolID, lpReq)
	legacyReq := (&lightpush.LegacyRPC{RequestID: "l", Request: &lightpush.LegacyRequest{PubsubTopic: topic, Message: wire}}).Append(nil)
	exchange(t, client, server, lightpush.LegacyProtocolID, legacyReq)
	subReq := (&filter.SubscribeRequest{RequestID: "s", Type: filter.Subscribe, PubsubTopic: topic, HasPubsubTopic: true, ContentTopics: []string{ct}}).Append(nil)
	if resp, err := filter.DecodeSubscribeResponse(exchange(t, client, server, filter.SubscribeProtocolID, subReq)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("subscribe: %+v %v", resp, err)
	}
	env, err := server.Publish(ctx, topic, &message.Message{Payload: []byte("pushed"), ContentTopic: ct, Timestamp: 2, Present: message.HasTimestamp})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the filter push", func() bool { return server.light.filter.Stats().Pushed == 1 })
	push := filter.AppendPushFrame(nil, topic, env.Wire())
	_, prefix := protowire.ConsumeVarint(push)

	m := scrape(t, server)
	bytes := func(service protocol.ID, dir string) string {
		return `waku_service_network_bytes_total{direction="` + dir + `",service="` + string(service) + `"}`
	}
	for key, want := range map[string]float64{
		bytes(store.ProtocolID, "in"):                                  float64(len(storeReq)),
		bytes(store.ProtocolID, "out"):                                 float64(len(storeResp)),
		bytes(lightpush.ProtocolID, "in"):                              float64(len(lpReq)),
		bytes(lightpush.LegacyProtocolID, "in"):                        float64(len(legacyReq)),
		bytes(filter.SubscribeProtocolID, "in"):                        float64(len(subReq)),
		bytes(filter.PushProtocolID, "out"):                            float64(len(push) - prefix),
		`waku_filter_request_duration_seconds_count{type="SUBSCRIBE"}`: 1,
		`waku_filter_handle_message_duration_seconds_count`:            1,
		`waku_filter_handle_message_duration_seconds_bucket{le="30"}`:  1,
		`waku_store_peers`:                                             0,
		`waku_lightpush_peers`:                                         0,
		`waku_filter_peers`:                                            0,
	} {
		if got, ok := m[key]; !ok || got != want {
			t.Errorf("%s = %v (listed %v), want %v", key, got, ok, want)
		}
	}
	for _, phase := range []string{"query-db-time", "send-store-resp-time"} {
		key := `waku_store_time_seconds{phase="` + phase + `"}`
		if v, ok := m[key]; !ok || v < 0 || v > 60 {
			t.Errorf("%s = %v, listed %v", key, v, ok)
		}
	}
	for _, key := range []string{bytes(lightpush.ProtocolID, "out"), `waku_filter_request_duration_seconds_count{type="SUBSCRIBER_PING"}`} {
		if _, ok := m[key]; ok {
			t.Errorf("%s listed; nwaku never counts it", key)
		}
	}
}
