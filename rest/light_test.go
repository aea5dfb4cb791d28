package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
)

// lightFake adds scripted light-client answers to fakeBackend.
type lightFake struct {
	*fakeBackend
	push     lightpush.Response
	pushErr  error
	legacy   error
	filter   map[filter.RequestType]filter.SubscribeResponse
	filterE  error
	noPeer   error // FilterService's error
	requests []filter.SubscribeRequest
	pushed   []lightpush.Request
}

func (l *lightFake) Lightpush(_ context.Context, req lightpush.Request) (lightpush.Response, error) {
	l.pushed = append(l.pushed, req)
	resp := l.push
	resp.RequestID = req.RequestID
	return resp, l.pushErr
}

func (l *lightFake) LightpushLegacy(context.Context, string, *message.Message) error { return l.legacy }

func (l *lightFake) FilterService() (FilterSender, error) {
	if l.noPeer != nil {
		return nil, l.noPeer
	}
	return func(_ context.Context, req filter.SubscribeRequest) (filter.SubscribeResponse, error) {
		l.requests = append(l.requests, req)
		resp := l.filter[req.Type]
		resp.RequestID = req.RequestID
		return resp, l.filterE
	}, nil
}

func (l *lightFake) FilterSubscriptions() []filter.PeerSubscriptions {
	return []filter.PeerSubscriptions{{Peer: peer.ID("x"), Criteria: []filter.Criterion{{PubsubTopic: "/waku/2/rs/1/0", ContentTopic: "/a/1/b/proto"}}}}
}

// lightServer serves l as every backend but store and admin (cfg's).
func lightServer(t *testing.T, l *lightFake, cfg Config) *Server {
	t.Helper()
	cfg.Lightpush, cfg.Filter, cfg.FilterService = l, l, l
	return newServer(t, l.fakeBackend, cfg)
}

const pushBody = `{"pubsubTopic":"/waku/2/rs/1/0","message":{"payload":"aGk=","contentTopic":"/a/1/b/proto","timestamp":5}}`

// TestLightpushRoutes checks nwaku's answers of POST /lightpush/v3/message
// and /lightpush/v1/message: the lightpush code as the HTTP status.
func TestLightpushRoutes(t *testing.T) {
	lf := &lightFake{fakeBackend: newFake(t)}
	s := newServer(t, lf.fakeBackend, Config{})
	expect(t, s, "POST", "/lightpush/v3/message", pushBody, http.StatusNotFound, "/lightpush endpoints are not available.")
	ls := lightServer(t, lf, Config{})
	for _, tc := range []struct {
		name string
		resp lightpush.Response
		err  error
		body string
		code int
		want string
	}{
		{"published", lightpush.Response{StatusCode: 200, RelayPeerCount: 3, HasRelayPeerCount: true}, nil, pushBody, 200, `{"relayPeerCount":3}`},
		{"no relay peers", lightpush.Response{StatusCode: 505, StatusDesc: "No peers for topic, skipping publish"}, nil, pushBody, 505, `{"statusDesc":"No peers for topic, skipping publish"}`},
		{"200 without peers", lightpush.Response{StatusCode: 200, HasRelayPeerCount: true}, nil, pushBody, 505, `{}`},
		{"invalid", lightpush.Response{StatusCode: 420, StatusDesc: "Message size exceeded maximum of 153600 bytes"}, nil, pushBody, 420, `{"statusDesc":"Message size exceeded maximum of 153600 bytes"}`},
		{"timeout", lightpush.Response{}, context.DeadlineExceeded, pushBody, 503, `{"statusDesc":"Push request timed out"}`},
		{"no message", lightpush.Response{}, nil, `{"pubsubTopic":"x"}`, 400, `{"statusDesc":"Invalid push request! Field ` + "`message`" + ` is missing"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lf.push, lf.pushErr = tc.resp, tc.err
			expect(t, ls, "POST", "/lightpush/v3/message", tc.body, tc.code, tc.want)
		})
	}
	last := lf.pushed[len(lf.pushed)-1]
	m, err := message.Decode(last.Message, nil)
	if err != nil || last.PubsubTopic != "/waku/2/rs/1/0" || string(m.Payload) != "hi" || m.Timestamp != 5 {
		t.Fatalf("pushed %+v %v", last, err)
	}
	expect(t, ls, "POST", "/lightpush/v1/message", pushBody, 200, "OK")
	lf.legacy = &lightpush.StatusError{Desc: "not_published_to_any_peer"}
	expect(t, ls, "POST", "/lightpush/v1/message", pushBody, 503, "Failed to request a message push: not_published_to_any_peer")
	// nwaku legacy_lightpush/handlers.nim: TooManyRequestsMessage.
	lf.legacy = &lightpush.StatusError{Desc: "TOO_MANY_REQUESTS"}
	expect(t, ls, "POST", "/lightpush/v1/message", pushBody, 429, "Request rate limmit reached")
	// Bodies v1 cannot read, with nwaku's beginnings (rest_serdes.nim
	// decodeRequestBody, legacy_lightpush/handlers.nim).
	expect(t, ls, "POST", "/lightpush/v1/message", `{"pubsubTopic":"/waku/2/rs/1/0"}`, 400,
		"Invalid content body, could not decode: Field `message` is missing")
	expect(t, ls, "POST", "/lightpush/v1/message", `{"message":{"contentTopic":"/a/1/b/proto"}}`, 400,
		"Invalid message: "+badMessageText(t, `{"contentTopic":"/a/1/b/proto"}`))
	expect(t, ls, "POST", "/lightpush/v1/message", ``, 400, "Missing content body")
	lf.legacy = ErrNoServicePeer
	expect(t, ls, "POST", "/lightpush/v1/message", pushBody, 503, "No suitable service peer & no discovery method")
	// nwaku's texts without a service peer
	// (waku/rest_api/endpoint/lightpush/handlers.nim and
	// legacy_lightpush/handlers.nim NoPeerNoDiscoError, NoPeerNoneFoundError).
	lf.legacy = fmt.Errorf("wrapped: %w", ErrNoneDiscovered)
	expect(t, ls, "POST", "/lightpush/v1/message", pushBody, 503, "No suitable service peer & none discovered")
	lf.pushErr = ErrNoServicePeer
	expect(t, ls, "POST", "/lightpush/v3/message", pushBody, 503, `{"statusDesc":"No suitable service peer & no discovery method"}`)
	lf.pushErr = ErrNoneDiscovered
	expect(t, ls, "POST", "/lightpush/v3/message", pushBody, 503, `{"statusDesc":"No suitable service peer & none discovered"}`)
}

// servicePeerID is the service peer of the dial failures below.
const servicePeerID = "16Uiu2HAm4v86W3bmT1BiH6oSPzcsSr24iDQpSN5Qa992BCjjwgrD"

func dialFailure(t *testing.T) (peer.ID, error) {
	t.Helper()
	p, err := peer.Decode(servicePeerID)
	if err != nil {
		t.Fatal(err)
	}
	return p, errors.New("failed to dial: all dials failed: dial backoff")
}

// TestLightDialFailure: a service peer that cannot be reached is answered
// with nwaku's texts, not the go-libp2p error: v3 505 NO_PEERS_TO_RELAY
// "dial_failure: <peer id> is not accessible" (waku/waku_lightpush/client.nim
// sendPushRequest; lightpush/handlers.nim makeRestResponse), v1 503 with
// dial_failure alone (waku/waku_lightpush_legacy/client.nim,
// legacy_lightpush/handlers.nim), filter 504 with the peer id as statusDesc
// (filter/handlers.nim getStatusDesc and convertErrorKindToHttpStatus for
// PEER_DIAL_FAILURE).
func TestLightDialFailure(t *testing.T) {
	p, reason := dialFailure(t)
	lf := &lightFake{fakeBackend: newFake(t),
		pushErr: fmt.Errorf("wrapped: %w", &lightpush.DialError{Peer: p, Err: reason}),
		legacy:  &lightpush.DialError{Peer: p, Err: reason},
		filterE: &filter.DialError{Peer: p, Err: reason}}
	s := lightServer(t, lf, Config{})
	expect(t, s, "POST", "/lightpush/v3/message", pushBody, 505, `{"statusDesc":"dial_failure: `+servicePeerID+` is not accessible"}`)
	expect(t, s, "POST", "/lightpush/v1/message", pushBody, 503, "Failed to request a message push: dial_failure")
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"1","contentFilters":["/a/1/b/proto"]}`, 504, `{"requestId":"1","statusDesc":"`+servicePeerID+`"}`)
	expect(t, s, "GET", "/filter/v2/subscriptions/2", "", 504, `{"requestId":"2","statusDesc":"`+servicePeerID+`"}`)
	expect(t, s, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"3"}`, 504, `{"requestId":"3","statusDesc":"`+servicePeerID+`"}`)
	// A failure after the stream opened is nwaku's BAD_RESPONSE: 500, the
	// cause as statusDesc.
	lf.filterE = errors.New("filter: read response: EOF")
	expect(t, s, "GET", "/filter/v2/subscriptions/4", "", 500, `{"requestId":"4","statusDesc":"filter: read response: EOF"}`)
}

// TestFilterBadBody: a filter route's missing or non-JSON body is answered
// in JSON as nwaku's filter handlers: decodeRequestBody's text behind
// "BAD_REQUEST: Failed to decode request: " (filter/handlers.nim
// decodeRequestBody, wrapped in FilterSubscribeError.badRequest with
// request id "unknown"; tests/wakunode_rest/test_rest_filter.nim checks the
// beginning).
func TestFilterBadBody(t *testing.T) {
	lf := &lightFake{fakeBackend: newFake(t)}
	s := lightServer(t, lf, Config{})
	const missing = `{"requestId":"unknown","statusDesc":"BAD_REQUEST: Failed to decode request: Missing content body"}`
	const wrongType = `{"requestId":"unknown","statusDesc":"BAD_REQUEST: Failed to decode request: Wrong Content-Type, expected application/json"}`
	for _, route := range []struct{ method, path string }{
		{"POST", "/filter/v2/subscriptions"},
		{"PUT", "/filter/v2/subscriptions"},
		{"DELETE", "/filter/v2/subscriptions"},
		{"DELETE", "/filter/v2/subscriptions/all"},
	} {
		expect(t, s, route.method, route.path, "", 400, missing)
		req := httptest.NewRequest(route.method, route.path, strings.NewReader(`{"requestId":"1","contentFilters":["/a/1/b/proto"]}`))
		req.Header.Set("Content-Type", "text/plain")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 400 || rec.Body.String() != wrongType || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s with text/plain: %d %q %q", route.method, route.path, rec.Code, rec.Body, rec.Header().Get("Content-Type"))
		}
	}
	if len(lf.requests) != 0 {
		t.Fatalf("requests sent: %+v", lf.requests)
	}
}

// TestFilterRoutes checks the filter client API: the service's status as
// the HTTP status, autosharding per shard, the message cache fed by pushes.
func TestFilterRoutes(t *testing.T) {
	lf := &lightFake{fakeBackend: newFake(t), filter: map[filter.RequestType]filter.SubscribeResponse{
		filter.Subscribe:      {StatusCode: 200, StatusDesc: "OK"},
		filter.Unsubscribe:    {StatusCode: 404, StatusDesc: "NOT_FOUND: peer has no subscriptions"},
		filter.SubscriberPing: {StatusCode: 200, StatusDesc: "OK"},
		filter.UnsubscribeAll: {StatusCode: 503, StatusDesc: "SERVICE_UNAVAILABLE: x"},
	}}
	s := lightServer(t, lf, Config{Admin: lf.fakeBackend})
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"1","contentFilters":["/a/1/b/proto","/c/1/d/proto"]}`, 200, `{"requestId":"1","statusDesc":"OK"}`)
	shardA, _ := lf.ContentTopicShard("/a/1/b/proto")
	shardC, _ := lf.ContentTopicShard("/c/1/d/proto")
	if want := 1 + boolToInt(shardA != shardC); len(lf.requests) != want || lf.requests[0].PubsubTopic != shardA || lf.requests[0].RequestID != "1" {
		t.Fatalf("requests %+v", lf.requests)
	}
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"2"}`, 400, "{\"requestId\":\"unknown\",\"statusDesc\":\"BAD_REQUEST: Failed to decode request: Field `contentFilters` is missing\"}")
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"contentFilters":["x"]}`, 400, "{\"requestId\":\"unknown\",\"statusDesc\":\"BAD_REQUEST: Failed to decode request: Field `requestId` is missing\"}")
	expect(t, s, "GET", "/filter/v2/subscriptions/7", "", 200, `{"requestId":"7","statusDesc":"OK"}`)

	wire := (&message.Message{Payload: []byte("hi"), ContentTopic: "/a/1/b/proto", Timestamp: 9}).Encode(nil)
	m, _ := message.Decode(wire, nil)
	s.DeliverFilter(message.NewEnvelope(m, shardA, wire, nil))
	expect(t, s, "GET", "/filter/v2/messages/%2Fa%2F1%2Fb%2Fproto", "", 200, `[{"payload":"aGk=","contentTopic":"/a/1/b/proto","version":0,"timestamp":9,"ephemeral":false}]`)
	expect(t, s, "GET", "/filter/v2/messages/%2Fz%2F1%2Fz%2Fproto", "", 400, "Not subscribed to topic: /z/1/z/proto")

	expect(t, s, "DELETE", "/filter/v2/subscriptions", `{"requestId":"3","pubsubTopic":"/waku/2/rs/1/0","contentFilters":["/a/1/b/proto"]}`, 404, `{"requestId":"3","statusDesc":"NOT_FOUND: peer has no subscriptions"}`)
	expect(t, s, "GET", "/filter/v2/messages/%2Fa%2F1%2Fb%2Fproto", "", 400, "Not subscribed to topic: /a/1/b/proto")
	expect(t, s, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"4"}`, 503, `{"requestId":"4","statusDesc":"SERVICE_UNAVAILABLE: x"}`)
	// Timeouts: one text per route (nwaku filter/handlers.nim).
	lf.filterE = context.DeadlineExceeded
	expect(t, s, "GET", "/filter/v2/subscriptions/10", "", 503, `{"requestId":"10","statusDesc":"SERVICE_UNAVAILABLE: Ping timed out"}`)
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"11","contentFilters":["/t/1/t/proto"]}`, 503, `{"requestId":"11","statusDesc":"SERVICE_UNAVAILABLE: Subscription request timed out"}`)
	expect(t, s, "DELETE", "/filter/v2/subscriptions", `{"requestId":"12","contentFilters":["/t/1/t/proto"]}`, 503, `{"requestId":"12","statusDesc":"SERVICE_UNAVAILABLE: Failed to unsubscribe from contentFilters due to timeout!"}`)
	expect(t, s, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"13"}`, 503, `{"requestId":"13","statusDesc":"SERVICE_UNAVAILABLE: Failed to unsubscribe from all contentFilters due to timeout!"}`)
	// A subscription that timed out leaves the message cache alone.
	expect(t, s, "GET", "/filter/v2/messages/%2Ft%2F1%2Ft%2Fproto", "", 400, "Not subscribed to topic: /t/1/t/proto")
	lf.filterE = nil

	// No service peer: nwaku's NoPeerNoDiscoError and NoPeerNoneFoundError,
	// and the cache is left alone.
	lf.noPeer = ErrNoServicePeer
	expect(t, s, "GET", "/filter/v2/subscriptions/9", "", 503, `{"requestId":"9","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & no discovery method"}`)
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"14","contentFilters":["/t/1/t/proto"]}`, 503, `{"requestId":"14","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & no discovery method"}`)
	expect(t, s, "GET", "/filter/v2/messages/%2Ft%2F1%2Ft%2Fproto", "", 400, "Not subscribed to topic: /t/1/t/proto")
	lf.noPeer = ErrNoneDiscovered
	expect(t, s, "DELETE", "/filter/v2/subscriptions/all", `{"requestId":"15"}`, 503, `{"requestId":"15","statusDesc":"SERVICE_UNAVAILABLE: No suitable service peer & none discovered"}`)
	expect(t, s, "GET", "/admin/v1/filter/subscriptions", "", 200, `[{"peerId":"`+peer.ID("x").String()+`","filterCriteria":[{"pubsubTopic":"/waku/2/rs/1/0","contentTopic":"/a/1/b/proto"}]}]`)
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// badMessageText is ParseMessage's error text for body.
func badMessageText(t *testing.T, body string) string {
	t.Helper()
	_, err := ParseMessage([]byte(body))
	if err == nil {
		t.Fatalf("%s parses", body)
	}
	return err.Error()
}
