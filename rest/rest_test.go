package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/node/state"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// fakeBackend records calls. Its relay is subscribed to what RelaySubscribe
// was given; publishing elsewhere fails with ErrNotSubscribed.
type fakeBackend struct {
	auto       shard.Autosharding
	static     bool  // ContentTopicShard answers ErrAutoshardingDisabled
	noPeers    bool  // RelayTopicPeers answers 0
	publishErr error // returned by RelayPublish when set
	subErr     error // returned by RelaySubscribe when set
	block      bool  // RelayPublish waits for its context to end

	mu          sync.Mutex
	subscribed  map[string]bool
	subCalls    [][]string
	unsubCalls  [][]string
	published   []*message.Message
	publishedOn []string
}

func newFake(t *testing.T) *fakeBackend {
	a, err := shard.NewAutosharding(1, 8)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeBackend{auto: a, subscribed: map[string]bool{}}
}

func (f *fakeBackend) RelaySubscribe(topics []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subCalls = append(f.subCalls, topics)
	if f.subErr != nil {
		return f.subErr
	}
	for _, t := range topics {
		f.subscribed[t] = true
	}
	return nil
}

func (f *fakeBackend) RelayUnsubscribe(topics []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unsubCalls = append(f.unsubCalls, topics)
	for _, t := range topics {
		delete(f.subscribed, t)
	}
	return nil
}

// RelayPublish has the payload written into a buffer of its own, as the
// node has it written into the encoding.
func (f *fakeBackend) RelayPublish(ctx context.Context, topic string, m *message.Message, n int, fill func([]byte) error) error {
	payload := make([]byte, n)
	if err := fill(payload); err != nil {
		return err
	}
	m.Payload = payload
	if f.block {
		<-ctx.Done()
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.publishErr != nil {
		return f.publishErr
	}
	if !f.subscribed[topic] {
		return fmt.Errorf("%w: %s", ErrNotSubscribed, topic)
	}
	f.published = append(f.published, m)
	f.publishedOn = append(f.publishedOn, topic)
	return nil
}

func (f *fakeBackend) RelayTopicPeers(string) int {
	if f.noPeers {
		return 0
	}
	return 1
}

func (f *fakeBackend) RelayPeers(bool) []PeersOfShard { return nil }

func (f *fakeBackend) ShardPeers(uint16, bool) []Peer { return nil }

func (f *fakeBackend) ContentTopicShard(ct string) (string, error) {
	if f.static {
		return "", ErrAutoshardingDisabled
	}
	return f.auto.PubsubTopic(ct)
}

func (f *fakeBackend) Info() Info {
	return Info{ListenAddresses: []string{"/ip4/127.0.0.1/tcp/60000/p2p/16Uiu2HAmPLe7Mzm8TsYUubgCAW1aJoeFScxrLj8ppHFivPo97bUZ"}, ENRURI: "enr:-test"}
}

func (f *fakeBackend) Version() string { return "v0.1.0-test" }

func (f *fakeBackend) Peers() []Peer {
	score := Score(1.5)
	return []Peer{
		{Multiaddr: "/ip4/127.0.0.1/tcp/60001/p2p/16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD",
			Protocols: []string{"/vac/waku/relay/2.0.0", "/vac/waku/metadata/1.0.0"}, Shards: []uint16{0, 3},
			Connected: state.Connected, Agent: "nwaku", Origin: state.Static, Score: &score},
		{Multiaddr: "/ip4/127.0.0.1/tcp/60002/p2p/16Uiu2HAmVFXtAfSj4EiR7mL2KvL4EE2wztuQgUSBoj2Jx2KeXFLN",
			Connected: state.CanConnect, Agent: "", Origin: state.Discv5},
	}
}

func (f *fakeBackend) Health() Health {
	return Health{NodeHealth: state.Ready, ConnectionStatus: state.StatusPartiallyConnected, ProtocolsHealth: []ProtocolHealth{
		{Protocol: "Relay", Health: state.Ready},
		{Protocol: "Store", Health: state.NotMounted},
		{Protocol: "Rln Relay", Health: state.NotReady, Desc: "no membership"},
	}}
}

// The admin routes that change the node accept everything.
func (f *fakeBackend) ParsePeer(string) error                    { return nil }
func (f *fakeBackend) ConnectPeer(context.Context, string) error { return nil }
func (f *fakeBackend) SetLogLevel(string) error                  { return nil }

// newServer returns a Server with f as its node and relay backends, and
// cfg's other backends and limits.
func newServer(t *testing.T, f *fakeBackend, cfg Config) *Server {
	t.Helper()
	cfg.Node, cfg.Relay = f, f
	return mustNew(t, cfg)
}

func mustNew(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// do sends one request, a body as application/json, and returns status,
// content type and body.
func do(t *testing.T, h http.Handler, method, path, body string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
}

func expect(t *testing.T, h http.Handler, method, path, body string, code int, want string) {
	t.Helper()
	gotCode, _, got := do(t, h, method, path, body)
	if gotCode != code || got != want {
		t.Fatalf("%s %s: %d %q, want %d %q", method, path, gotCode, got, code, want)
	}
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func env(t *testing.T, topic string, m *message.Message) *message.Envelope {
	t.Helper()
	return message.NewEnvelope(m, topic, m.Encode(nil), nil)
}

func msgsPath(topic string) string { return "/relay/v1/messages/" + url.PathEscape(topic) }

func TestSubscribeDeliverDrain(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0","/waku/2/rs/0/1","/waku/2/rs/0/0"]`, 200, "OK")
	if want := [][]string{{"/waku/2/rs/0/0", "/waku/2/rs/0/1"}}; !reflect.DeepEqual(f.subCalls, want) {
		t.Fatalf("subscribe calls %v, want %v", f.subCalls, want)
	}
	s.Deliver(env(t, "/waku/2/rs/0/0", &message.Message{Payload: []byte("TEST-1"), ContentTopic: "content-topic-x",
		Version: 2, Timestamp: 1700000000000000001, Meta: []byte("test-meta"), Ephemeral: true}))
	s.Deliver(env(t, "/waku/2/rs/0/9", &message.Message{Payload: []byte("elsewhere"), ContentTopic: "content-topic-y"}))
	s.Deliver(env(t, "/waku/2/rs/0/0", &message.Message{Payload: []byte{0xff, 0x00}, ContentTopic: "/app/1/chat/proto",
		Timestamp: 1700000000000000002, RateLimitProof: []byte{1, 2, 3}}))

	code, ctype, body := do(t, s, "GET", msgsPath("/waku/2/rs/0/0"), "")
	if code != 200 || ctype != "application/json" || body != golden(t, "relay_messages.json") {
		t.Fatalf("GET: %d %s\n%s", code, ctype, body)
	}
	expect(t, s, "GET", msgsPath("/waku/2/rs/0/0"), "", 200, "[]")
	expect(t, s, "GET", msgsPath("/waku/2/rs/0/1"), "", 200, "[]")
	// Not subscribed through the API: 404 with an empty body (nwaku).
	expect(t, s, "GET", msgsPath("/waku/2/rs/0/9"), "", 404, "")

	expect(t, s, "DELETE", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	if want := [][]string{{"/waku/2/rs/0/0"}}; !reflect.DeepEqual(f.unsubCalls, want) {
		t.Fatalf("unsubscribe calls %v, want %v", f.unsubCalls, want)
	}
	expect(t, s, "GET", msgsPath("/waku/2/rs/0/0"), "", 404, "")
	if st := s.Stats(); st != (Stats{Cached: 2, Drained: 2}) {
		t.Fatalf("stats %+v", st)
	}
}

func TestCacheBound(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	for i := range DefaultCacheSize + 2 {
		s.Deliver(env(t, "/waku/2/rs/0/0", &message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Timestamp: int64(i)}))
	}
	envs, ok := s.cache.drainPubsub("/waku/2/rs/0/0", math.MaxInt64)
	if !ok || len(envs) != DefaultCacheSize {
		t.Fatalf("drained %d, %v", len(envs), ok)
	}
	for i, e := range envs {
		if e.Message().Timestamp != int64(i+2) {
			t.Fatalf("message %d has timestamp %d: the two oldest must be dropped", i, e.Message().Timestamp)
		}
	}
	if st := s.Stats(); st != (Stats{Cached: 52, DroppedOldest: 2, Drained: 50}) {
		t.Fatalf("stats %+v", st)
	}
}

// refusal is a backend's error that matches ErrSubscriptionRefused with
// its own text.
type refusal struct{ text string }

func (r refusal) Error() string        { return r.text }
func (r refusal) Is(target error) bool { return target == ErrSubscriptionRefused }

// TestSubscriptionRefused: a subscription the backend refuses as the
// client's fault (ErrSubscriptionRefused) is answered 400 with its text,
// by pubsub topic and by content topic; another error of the backend is
// 500; neither caches the topics.
func TestSubscriptionRefused(t *testing.T) {
	const text = "node: too many shards for the metadata protocol: relaying 700 shards of cluster 0"
	for _, tc := range []struct {
		err  error
		code int
	}{
		{refusal{text}, 400},
		{fmt.Errorf("relay: join: %w", refusal{text}), 400},
		{errors.New(text), 500},
	} {
		f := newFake(t)
		f.subErr = tc.err
		s := newServer(t, f, Config{})
		expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/1/0"]`, tc.code, "Failed to subscribe: "+tc.err.Error())
		expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["/toychat/2/huilong/proto"]`, tc.code, "Failed to subscribe: "+tc.err.Error())
		expect(t, s, "GET", "/relay/v1/messages/"+url.PathEscape("/waku/2/rs/1/0"), ``, 404, "")
	}
}

func TestSubscriptionErrors(t *testing.T) {
	s := newServer(t, newFake(t), Config{})
	expect(t, s, "POST", "/relay/v1/subscriptions",
		`["/waku/2/rs/0/0","/waku/2/rs/0/1","/test/2/this/is/a/content/topic/1"]`,
		400, `Invalid pubsub topic(s): @["/test/2/this/is/a/content/topic/1"]`)
	expect(t, s, "DELETE", "/relay/v1/subscriptions", `["/waku/2/rs/0/0","/waku/2/default-waku/proto"]`,
		400, `Invalid pubsub topic(s): @["/waku/2/default-waku/proto"]`)
	expect(t, s, "POST", "/relay/v1/subscriptions", `{"topics":[]}`,
		400, "Invalid content body, could not decode: Unable to deserialize data: body(want a JSON array of strings)")
	expect(t, s, "POST", "/relay/v1/subscriptions", `null`,
		400, "Invalid content body, could not decode: Unable to deserialize data: body(want a JSON array of strings)")
	// nwaku answers an empty 400 when relay/handlers.nim finds no body.
	expect(t, s, "POST", "/relay/v1/subscriptions", ``, 400, "")
	expect(t, s, "POST", "/relay/v1/subscriptions", `[]`, 200, "OK")
	// nwaku's texts (waku/node/kernel_api/relay.nim, content_topic.nim).
	expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["/toychat/2/huilong/proto","invalid","/1/a/b/c/d"]`,
		500, `Subscribe failed:Failed to decode subscription event: Autosharding error: invalid format: content-topic 'invalid' must start with slash`)
	expect(t, s, "DELETE", "/relay/v1/auto/subscriptions", `["/a//c/d"]`,
		500, `Unsubscribe failed:Failed to decode unsubscribe event: Autosharding error: missing part: version`)
	expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["/1/a/b/c/d"]`,
		500, `Subscribe failed:Failed to decode subscription event: Autosharding error: Generation > 0 are not supported yet`)
	static := newFake(t)
	static.static = true
	s = newServer(t, static, Config{})
	expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["/toychat/2/huilong/proto"]`,
		500, `Subscribe failed:Failed to decode subscription event: Static sharding is used, relay subscriptions must specify a pubsub topic`)
	// A method not served answers as an unknown path in nwaku
	// (waku/rest_api/endpoint/builder.nim requestErrorHandler).
	expect(t, s, "GET", "/relay/v1/subscriptions", ``, 400, "Bad request initiated. Invalid path or method used.")
}

func TestAutoSubscriptions(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	// /myapp/1 content topics are on shard 0 of 8, /toychat/2 on shard 3.
	expect(t, s, "POST", "/relay/v1/auto/subscriptions",
		`["/myapp/1/chat/proto","/myapp/1/presence/proto","/toychat/2/huilong/proto"]`, 200, "OK")
	if want := [][]string{{"/waku/2/rs/1/0", "/waku/2/rs/1/3"}}; !reflect.DeepEqual(f.subCalls, want) {
		t.Fatalf("subscribe calls %v, want %v", f.subCalls, want)
	}
	s.Deliver(env(t, "/waku/2/rs/1/0", &message.Message{Payload: []byte("p"), ContentTopic: "/myapp/1/presence/proto", Timestamp: 7}))
	expect(t, s, "GET", "/relay/v1/auto/messages/"+url.PathEscape("/myapp/1/presence/proto"), "", 200,
		`[{"payload":"cA==","contentTopic":"/myapp/1/presence/proto","version":0,"timestamp":7,"ephemeral":false,"proof":""}]`)
	expect(t, s, "GET", "/relay/v1/auto/messages/"+url.PathEscape("/myapp/1/chat/proto"), "", 200, `[]`)
	// Not subscribed: 404 with the content topic as body (nwaku).
	expect(t, s, "GET", "/relay/v1/auto/messages/"+url.PathEscape("/other/1/x/proto"), "", 404, "/other/1/x/proto")

	// Leaving one content topic keeps the shard the other still needs.
	expect(t, s, "DELETE", "/relay/v1/auto/subscriptions", `["/myapp/1/chat/proto"]`, 200, "OK")
	if len(f.unsubCalls) != 0 {
		t.Fatalf("unsubscribed %v while /myapp/1/presence/proto needs shard 0", f.unsubCalls)
	}
	expect(t, s, "DELETE", "/relay/v1/auto/subscriptions", `["/myapp/1/presence/proto"]`, 200, "OK")
	if want := [][]string{{"/waku/2/rs/1/0"}}; !reflect.DeepEqual(f.unsubCalls, want) {
		t.Fatalf("unsubscribe calls %v, want %v", f.unsubCalls, want)
	}
	// A static subscription keeps its shard when a content topic on it goes.
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/1/3"]`, 200, "OK")
	expect(t, s, "DELETE", "/relay/v1/auto/subscriptions", `["/toychat/2/huilong/proto"]`, 200, "OK")
	if len(f.unsubCalls) != 1 {
		t.Fatalf("unsubscribe calls %v: shard 3 is still subscribed statically", f.unsubCalls)
	}
}

// TestPublish runs the publish handler's cases: the base64 payload is
// decoded straight into the place the backend gives it.
func TestPublish(t *testing.T) {
	f := newFake(t)
	testPublish(t, f, newServer(t, f, Config{}))
}

func testPublish(t *testing.T, f *fakeBackend, s *Server) {
	now = func() time.Time { return time.Unix(1700000000, 5) }
	t.Cleanup(func() { now = time.Now })
	topic := "/waku/2/rs/0/0"
	body := `{"payload":"VEVTVC1QQVlMT0FE","contentTopic":"/waku/2/default-content/proto"}`
	expect(t, s, "POST", msgsPath(topic), body, 400, "Failed to publish: Node not subscribed to topic: /waku/2/rs/0/0")

	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	expect(t, s, "POST", msgsPath(topic), body, 200, "OK")
	expect(t, s, "POST", msgsPath(topic), `{"payload":"AQ==","contentTopic":"/a/1/b/c","timestamp":42,"version":1,"ephemeral":true}`, 200, "OK")
	want := []*message.Message{
		{Payload: []byte("TEST-PAYLOAD"), ContentTopic: "/waku/2/default-content/proto", Timestamp: 1700000000000000005, Present: message.HasTimestamp},
		{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Timestamp: 42, Version: 1, Ephemeral: true,
			Present: message.HasTimestamp | message.HasVersion | message.HasEphemeral},
	}
	if len(f.published) != 2 || !f.published[0].Equal(want[0]) || !f.published[1].Equal(want[1]) {
		t.Fatalf("published %+v %+v", f.published[0], f.published[1])
	}

	expect(t, s, "POST", msgsPath(topic), `{"payload":"Hello World!","contentTopic":"/a/1/b/c"}`, 400, "Incorrect base64 string")
	expect(t, s, "POST", msgsPath(topic), `{"contentTopic":"/a/1/b/c"}`, 400,
		"Invalid content body, could not decode: Unable to deserialize data: body(Field `payload` is missing or empty)")
	big := fmt.Sprintf(`{"payload":"%s","contentTopic":"/a/1/b/c"}`, b64(message.MaxSize))
	expect(t, s, "POST", msgsPath(topic), big, 400, "Failed to publish: Message size exceeded maximum of 153600 bytes")

	f.publishErr = fmt.Errorf("%w: timestamp too far in the future", ErrInvalidMessage)
	expect(t, s, "POST", msgsPath(topic), body, 400, "Failed to publish: rest: invalid message: timestamp too far in the future")
	f.publishErr = errors.New("relay closed")
	expect(t, s, "POST", msgsPath(topic), body, 500, "Failed to publish: relay closed")
}

func TestPublishTimeout(t *testing.T) {
	f := newFake(t)
	f.block = true
	s := newServer(t, f, Config{PublishTimeout: time.Millisecond})
	expect(t, s, "POST", msgsPath("/waku/2/rs/0/0"), `{"payload":"AQ==","contentTopic":"/a/1/b/c"}`, 500, "Failed to publish: timedout")
}

func TestPublishAuto(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["/toychat/2/huilong/proto"]`, 200, "OK")
	expect(t, s, "POST", "/relay/v1/auto/messages", `{"payload":"AQ==","contentTopic":"/toychat/2/huilong/proto","timestamp":1}`, 200, "OK")
	if want := []string{"/waku/2/rs/1/3"}; !reflect.DeepEqual(f.publishedOn, want) {
		t.Fatalf("published on %v, want %v", f.publishedOn, want)
	}
	expect(t, s, "POST", "/relay/v1/auto/messages", `{"payload":"AQ==","contentTopic":"invalidContentTopic"}`, 400,
		`Failed to publish. Autosharding error: invalid format: content-topic 'invalidContentTopic' must start with slash`) // tests/wakunode_rest/test_rest_relay.nim
	expect(t, s, "POST", "/relay/v1/auto/messages", `{"payload":"AQ==","contentTopic":"/1/toychat/2/huilong/proto"}`, 400,
		`Failed to publish. Autosharding error: Generation > 0 are not supported yet`)
}

func TestBodyLimit(t *testing.T) {
	s := newServer(t, newFake(t), Config{MaxBodyBytes: 64})
	body := `["/waku/2/rs/0/0","/waku/2/rs/0/1","/waku/2/rs/0/2","/waku/2/rs/0/3"]`
	expect(t, s, "POST", "/relay/v1/subscriptions", body, 413, "Request body too large: over 64 bytes")
	expect(t, s, "POST", msgsPath("/waku/2/rs/0/0"), `{"payload":"`+b64(100)+`","contentTopic":"/a/1/b/c"}`, 413, "Request body too large: over 64 bytes")
}

func TestNodeEndpoints(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{Admin: f})
	for _, c := range []struct{ path, golden, ctype string }{
		{"/health", "health.json", "application/json"},
		{"/info", "info.json", "application/json"},
		{"/debug/v1/info", "info.json", "application/json"},
		{"/admin/v1/peers", "peers.json", "application/json"},
	} {
		code, ctype, body := do(t, s, "GET", c.path, "")
		if code != 200 || ctype != c.ctype || body != golden(t, c.golden) {
			t.Fatalf("GET %s: %d %s\n%s", c.path, code, ctype, body)
		}
	}
	for _, p := range []string{"/version", "/debug/v1/version"} {
		code, ctype, body := do(t, s, "GET", p, "")
		if code != 200 || ctype != "text/plain; charset=utf-8" || body != "v0.1.0-test" {
			t.Fatalf("GET %s: %d %s %q", p, code, ctype, body)
		}
	}
}

// TestNotServed checks the answers of paths and route groups not served,
// with nwaku's texts (waku/rest_api/endpoint/builder.nim:
// restServerNotInstalledTab and requestErrorHandler).
func TestNotServed(t *testing.T) {
	s := newServer(t, newFake(t), Config{})
	expect(t, s, "GET", "/admin/v1/peers", "", 404,
		"/admin endpoints are not available. Please check your configuration: --rest-admin=true")
	expect(t, s, "POST", "/admin/v1/peers", `[]`, 404,
		"/admin endpoints are not available. Please check your configuration: --rest-admin=true")
	expect(t, s, "GET", "/no/such/path", "", 400, "Bad request initiated. Invalid path or method used.")
	expect(t, s, "GET", "/", "", 400, "Bad request initiated. Invalid path or method used.")
	expect(t, s, "PUT", "/health", "", 400, "Bad request initiated. Invalid path or method used.")
	off := mustNew(t, Config{Node: newFake(t)})
	for _, path := range []string{"/relay/v1/messages/%2Fwaku%2F2%2Frs%2F0%2F0", "/relay/v1/auto/messages/%2Fa%2F1%2Fb%2Fc"} {
		expect(t, off, "GET", path, "", 404, "/relay endpoints are not available. Please check your configuration: --relay")
	}
	expect(t, off, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 404, "/relay endpoints are not available. Please check your configuration: --relay")
	// Without light-client backends, as nwaku without the clients.
	expect(t, off, "POST", "/lightpush/v3/message", `{}`, 404, "/lightpush endpoints are not available.")
	expect(t, off, "POST", "/lightpush/v1/message", `{}`, 404, "/lightpush endpoints are not available.")
	expect(t, off, "GET", "/filter/v2/messages/%2Fa%2F1%2Fb%2Fc", "", 404, "/filter endpoints are not available.")
	expect(t, off, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"1"}`, 404, "/filter endpoints are not available.")
	// The admin routes without a filter service (nwaku without --filter).
	g := newFake(t)
	expect(t, mustNew(t, Config{Node: g, Admin: g}), "GET", "/admin/v1/filter/subscriptions", "", 400, "Error: Filter Protocol is not mounted to the node")
	// Store is served without a backend, as by every nwaku node.
	expect(t, off, "GET", "/store/v3/messages", "", 412, "No suitable service peer & no discovery method")
}

// TestAdminPeer checks GET /admin/v1/peer/{peerId} and
// /admin/v1/peers/connected with nwaku's answers
// (waku/rest_api/endpoint/admin/handlers.nim; the invalid peer id text from
// tests/wakunode_rest/test_rest_admin.nim "get peers by id").
func TestAdminPeer(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{Admin: f})
	const known = "16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD"
	const unknown = "16Uiu2HAmVFXtAfSj4EiR7mL2KvL4EE2wztuQgUSBoj2Jx2KeXFLM"
	expect(t, s, "GET", "/admin/v1/peer/"+known, "", 200,
		`{"multiaddr":"/ip4/127.0.0.1/tcp/60001/p2p/`+known+`","protocols":["/vac/waku/relay/2.0.0","/vac/waku/metadata/1.0.0"],"shards":[0,3],"connected":"Connected","agent":"nwaku","origin":"Static","score":1.5}`)
	expect(t, s, "GET", "/admin/v1/peer/"+unknown, "", 404, "Peer with ID "+unknown+" not found")
	expect(t, s, "GET", "/admin/v1/peer/incorrect", "", 400, "Invalid argument:peerid: incorrect PeerId string")
	expect(t, s, "GET", "/admin/v1/peers/connected", "", 200,
		`[{"multiaddr":"/ip4/127.0.0.1/tcp/60001/p2p/`+known+`","protocols":["/vac/waku/relay/2.0.0","/vac/waku/metadata/1.0.0"],"shards":[0,3],"connected":"Connected","agent":"nwaku","origin":"Static","score":1.5}]`)
	expect(t, s, "GET", "/admin/v1/peers/connected/on/3", "", 200,
		`[{"multiaddr":"/ip4/127.0.0.1/tcp/60001/p2p/`+known+`","protocols":["/vac/waku/relay/2.0.0","/vac/waku/metadata/1.0.0"],"shards":[0,3],"connected":"Connected","agent":"nwaku","origin":"Static","score":1.5}]`)
	expect(t, s, "GET", "/admin/v1/peers/connected/on/5", "", 200, `[]`)
}

// TestCORS runs nwaku's origin cases (tests/wakunode_rest/test_rest_cors.nim)
// through the server: the same allowed origins, the same requests on
// /debug/v1/info, the same answers.
func TestCORS(t *testing.T) {
	s := newServer(t, newFake(t), Config{AllowOrigin: []string{"test.net:1234,https://localhost:*,http://127.0.0.1:?8,?waku*.net:*80*"}})
	for _, origin := range []string{"http://test.net:1234", "https://test.net:1234", "https://localhost:8080", "https://localhost:80",
		"http://127.0.0.1:78", "http://wakuTHE.net:8078", "http://nwaku.main.net:1980", "http://nwaku.main.net:80"} {
		rec := originRequest(s, origin)
		if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != origin ||
			rec.Header().Get("Access-Control-Allow-Headers") != "Content-Type" || rec.Header().Get("Vary") != "Origin" {
			t.Errorf("Origin %s: %d %v", origin, rec.Code, rec.Header())
		}
	}
	for _, origin := range []string{"http://test.net:12334", "http://test.net:12345", "xhttp://test.net:1234", "https://xtest.net:1234",
		"http://localhost:8080", "https://127.0.0.1:78", "http://127.0.0.1:89", "http://the.waku.net:8078", "http://nwaku.main.net:1900"} {
		rec := originRequest(s, origin)
		if rec.Code != 403 || rec.Body.String() != "Origin not allowed" || rec.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("Origin %s: %d %q %v, want 403", origin, rec.Code, rec.Body, rec.Header())
		}
	}
	if rec := originRequest(s, ""); rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no Origin: %d %v", rec.Code, rec.Header())
	}
	all := newServer(t, newFake(t), Config{AllowOrigin: []string{"*"}})
	for _, origin := range []string{"http://test.net:1234", "https://localhost:8080", "xhttp://anything"} {
		if rec := originRequest(all, origin); rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("*: Origin %s: %d %v", origin, rec.Code, rec.Header())
		}
	}
	// OPTIONS on the relay routes answers 200 "OK" (relay/handlers.nim).
	expect(t, s, "OPTIONS", "/relay/v1/subscriptions", "", 200, "OK")
	expect(t, s, "OPTIONS", "/relay/v1/messages/%2Fwaku%2F2%2Frs%2F0%2F0", "", 200, "OK")
	expect(t, s, "OPTIONS", "/relay/v1/auto/messages", "", 200, "OK")
}

// TestContentType checks nwaku's Content-Type rules for request bodies:
// a missing or unreadable header is refused before the handler runs
// (nim-presto serverprivate.nim getContentBody, nwaku's text from
// waku/rest_api/endpoint/builder.nim requestErrorHandler), a media type
// other than JSON or text by waku/rest_api/endpoint/rest_serdes.nim
// decodeRequestBody.
func TestContentType(t *testing.T) {
	s := lightServer(t, &lightFake{fakeBackend: newFake(t)}, Config{})
	const wrong = "Wrong Content-Type, expected application/json or text/plain"
	for _, c := range []struct {
		ct   string
		code int
		body string
	}{
		{"application/json", 200, "OK"},
		{"application/json; charset=utf-8", 200, "OK"},
		{"text/plain", 200, "OK"},
		{"", 400, "Invalid content type"},
		{"json", 400, "Invalid content type"},
		{"application/x-www-form-urlencoded", 400, wrong},
		{"application/octet-stream", 400, wrong},
	} {
		for _, path := range []string{"/relay/v1/subscriptions", msgsPath("/waku/2/rs/0/0"), "/lightpush/v3/message"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(`["/waku/2/rs/0/0"]`))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if c.code == 400 && (rec.Code != 400 || rec.Body.String() != c.body) || c.code == 200 && rec.Body.String() == "Invalid content type" {
				t.Errorf("POST %s, Content-Type %q: %d %q, want %d %q", path, c.ct, rec.Code, rec.Body, c.code, c.body)
			}
		}
	}
	// Without a body the header is not needed: the handler answers as
	// nwaku's for its path (see missingBody).
	for path, want := range map[string]string{
		"/relay/v1/subscriptions":      "",
		msgsPath("/waku/2/rs/0/0"):     "",
		"/relay/v1/auto/messages":      "",
		"/relay/v1/auto/subscriptions": "Missing content body",
		"/filter/v2/subscriptions":     `{"requestId":"unknown","statusDesc":"BAD_REQUEST: Failed to decode request: Missing content body"}`,
		"/lightpush/v3/message":        `{"statusDesc":"Invalid push request! Missing content body"}`,
	} {
		expect(t, s, "POST", path, "", 400, want)
	}
	// The filter handlers take JSON only (filter/handlers.nim decodeRequestBody).
	req := httptest.NewRequest("POST", "/filter/v2/subscriptions", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 400 || rec.Body.String() != `{"requestId":"unknown","statusDesc":"BAD_REQUEST: Failed to decode request: Wrong Content-Type, expected application/json"}` {
		t.Errorf("filter with text/plain: %d %q", rec.Code, rec.Body)
	}
}

func originRequest(h http.Handler, origin string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/debug/v1/info", nil)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestConfig(t *testing.T) {
	for _, c := range []Config{{MaxBodyBytes: -1}, {MaxBufferedBytes: 1 << 20}, {CacheSize: -1}, {PublishTimeout: -1}} {
		c.Node = newFake(t)
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Fatalf("New(%+v) error = %v", c, err)
		}
	}
	if _, err := New(Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("nil backend: %v", err)
	}
	c := Config{}
	c.setDefaults()
	if err := c.validate(); err != nil || !reflect.DeepEqual(c, Config{MaxBodyBytes: 16 << 20, MaxBufferedBytes: 64 << 20, CacheSize: 50, PublishTimeout: 5 * time.Second, Logger: slog.Default()}) {
		t.Fatalf("defaults %+v, %v", c, err)
	}
}

// TestRoutingAsNwaku: nwaku's router (nim-presto) has no HEAD routes and
// cleans no paths, so these are unknown paths there (builder.nim
// requestErrorHandler) and must not reach a handler here: a HEAD run as a
// GET would drain a message cache.
func TestRoutingAsNwaku(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	s.Deliver(env(t, "/waku/2/rs/0/0", &message.Message{Payload: []byte("kept"), ContentTopic: "/a/1/b/c", Timestamp: 1}))
	const invalid = "Bad request initiated. Invalid path or method used."
	req := httptest.NewRequest("HEAD", msgsPath("/waku/2/rs/0/0"), nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 400 {
		t.Errorf("HEAD: %d", rec.Code)
	}
	for _, p := range []string{"/relay/v1/messages//waku/2/rs/0/0", "/relay/v1/subscriptions/", "/relay/v1/../v1/subscriptions", "/health/"} {
		expect(t, s, "GET", p, "", 400, invalid)
	}
	if envs, ok := s.cache.drainPubsub("/waku/2/rs/0/0", math.MaxInt64); !ok || len(envs) != 1 {
		t.Fatalf("cache holds %d messages after HEAD, want the 1 delivered", len(envs))
	}
}

// TestPublishWithoutPeers: nwaku's POST /relay/v1/messages answers OK
// whatever the relay's outcome, POST /relay/v1/auto/messages reports
// NoPeersToPublish (relay/handlers.nim).
func TestPublishWithoutPeers(t *testing.T) {
	f := newFake(t)
	s := newServer(t, f, Config{})
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/1/3"]`, 200, "OK")
	f.noPeers = true
	expect(t, s, "POST", msgsPath("/waku/2/rs/1/3"), `{"payload":"AQ==","contentTopic":"/toychat/2/huilong/proto"}`, 200, "OK")
	expect(t, s, "POST", "/relay/v1/auto/messages", `{"payload":"AQ==","contentTopic":"/toychat/2/huilong/proto"}`, 400,
		"Failed to publish: publish failed in relay: NoPeersToPublish")
}

// TestWhitespaceBody: only an empty body is a missing one (nim-presto
// passes any other to the handler, whose decoder refuses it).
func TestWhitespaceBody(t *testing.T) {
	s := newServer(t, newFake(t), Config{})
	code, _, body := do(t, s, "POST", "/relay/v1/subscriptions", "   ")
	if code != 400 || !strings.HasPrefix(body, "Invalid content body, could not decode: ") {
		t.Fatalf("whitespace body: %d %q", code, body)
	}
}
