package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
)

// Errors a LightpushBackend or FilterBackend returns (wrapped with %w).
var (
	// ErrNoServicePeer: no service peer known for the protocol and no
	// discovery running. Answered 503 "No suitable service peer & no
	// discovery method", as nwaku without a discovery handler.
	ErrNoServicePeer = errors.New("rest: no service peer")
	// ErrNoneDiscovered: no service peer known although discovery runs.
	// Answered 503 "No suitable service peer & none discovered", as
	// nwaku when its discovery handler finds none.
	ErrNoneDiscovered = errors.New("rest: no service peer discovered")
)

// FilterSender sends one filter request to the service peer a
// FilterBackend selected and returns its response whatever the status.
// Errors are the client's transport errors.
type FilterSender func(ctx context.Context, req filter.SubscribeRequest) (filter.SubscribeResponse, error)

// LightTimeout bounds one lightpush or filter request made for the REST
// API, as nwaku's FutTimeoutForPushRequestProcessing and
// futTimeoutForSubscriptionProcessing (5 s).
const LightTimeout = 5 * time.Second

const (
	noServicePeer  = "No suitable service peer & no discovery method"
	noneDiscovered = "No suitable service peer & none discovered"
)

// noPeerText is nwaku's text for a missing service peer, "" when err is
// not one.
func noPeerText(err error) string {
	switch {
	case errors.Is(err, ErrNoServicePeer):
		return noServicePeer
	case errors.Is(err, ErrNoneDiscovered):
		return noneDiscovered
	}
	return ""
}

// lightRoutes mounts the lightpush and filter client routes for the
// backends Config gives.
func (s *Server) lightRoutes() {
	if s.cfg.Lightpush != nil {
		s.mux.HandleFunc("POST /lightpush/v3/message", s.postLightpush)
		s.mux.HandleFunc("POST /lightpush/v1/message", s.postLightpushLegacy)
	}
	if s.cfg.Filter == nil {
		return
	}
	s.mux.HandleFunc("POST /filter/v2/subscriptions", s.postFilterSubscriptions)
	s.mux.HandleFunc("PUT /filter/v2/subscriptions", s.postFilterSubscriptions)
	s.mux.HandleFunc("DELETE /filter/v2/subscriptions", s.deleteFilterSubscriptions)
	s.mux.HandleFunc("DELETE /filter/v2/subscriptions/all", s.deleteAllFilterSubscriptions)
	s.mux.HandleFunc("GET /filter/v2/subscriptions/{requestId}", s.pingFilter)
	s.mux.HandleFunc("GET /filter/v2/messages/{contentTopic}", s.getFilterMessages)
}

// DeliverFilter offers one message pushed to the node's filter client to
// the filter message cache; it is kept when its content topic was
// subscribed through POST /filter/v2/subscriptions. It never blocks.
func (s *Server) DeliverFilter(env *message.Envelope) { s.filterCache.deliver(env) }

// lightpushBody is the body of POST /lightpush/v3/message and v1 (nwaku
// rest_api/endpoint/lightpush/types.nim PushRequest).
type lightpushBody struct {
	PubsubTopic string          `json:"pubsubTopic"`
	Message     json.RawMessage `json:"message"`
}

// lightpushAnswer is nwaku's PushResponse JSON: both fields optional.
type lightpushAnswer struct {
	StatusDesc     *string `json:"statusDesc,omitempty"`
	RelayPeerCount *uint32 `json:"relayPeerCount,omitempty"`
}

func writeLightpush(w http.ResponseWriter, code int, desc string) {
	writeJSONStatus(w, code, lightpushAnswer{StatusDesc: &desc})
}

// lightpushTexts are the beginnings of a lightpush route's answers to a
// body it cannot read and to a message it cannot take.
type lightpushTexts struct{ badRequest, badMessage string }

var (
	// lightpush/handlers.nim (v3).
	lightpushV3Texts = lightpushTexts{"Invalid push request! ", "Invalid message! "}
	// legacy_lightpush/handlers.nim (v1): decodeRequestBody's text
	// (rest_serdes.nim), then its own.
	lightpushV1Texts = lightpushTexts{"Invalid content body, could not decode: ", "Invalid message: "}
)

// readLightpushBody reads the request and its message; on failure it has
// answered with bad(text), text beginning as texts says.
func (s *Server) readLightpushBody(w http.ResponseWriter, r *http.Request, texts lightpushTexts, bad func(string)) (string, *message.Message, bool) {
	body, ok := s.readBody(w, r)
	if !ok {
		return "", nil, false
	}
	var req lightpushBody
	if err := json.Unmarshal(body, &req); err != nil {
		bad(texts.badRequest + err.Error())
		return "", nil, false
	}
	if len(req.Message) == 0 {
		bad(texts.badRequest + "Field `message` is missing")
		return "", nil, false
	}
	msg, err := ParseMessage(req.Message)
	if err != nil {
		bad(texts.badMessage + err.Error())
		return "", nil, false
	}
	if msg.Timestamp == 0 {
		msg.Timestamp, msg.Present = now().UnixNano(), msg.Present|message.HasTimestamp
	}
	return req.PubsubTopic, msg, true
}

// postLightpush answers POST /lightpush/v3/message as nwaku's
// rest_api/endpoint/lightpush/handlers.nim: the HTTP status is the
// lightpush status code, the body {statusDesc?, relayPeerCount?}.
func (s *Server) postLightpush(w http.ResponseWriter, r *http.Request) {
	topic, msg, ok := s.readLightpushBody(w, r, lightpushV3Texts, func(text string) { writeLightpush(w, http.StatusBadRequest, text) })
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), LightTimeout)
	defer cancel()
	resp, err := s.cfg.Lightpush.Lightpush(ctx, lightpush.Request{RequestID: filter.NewRequestID(), PubsubTopic: topic, HasPubsubTopic: topic != "", Message: msg.Encode(nil)})
	var dial *lightpush.DialError
	switch {
	case noPeerText(err) != "":
		writeLightpush(w, http.StatusServiceUnavailable, noPeerText(err))
	case errors.Is(err, context.DeadlineExceeded):
		writeLightpush(w, http.StatusServiceUnavailable, "Push request timed out")
	case errors.As(err, &dial):
		// nwaku's client: NO_PEERS_TO_RELAY, "dial_failure: <peer id> is
		// not accessible" (waku/waku_lightpush/client.nim sendPushRequest).
		writeLightpush(w, lightpush.StatusNoPeersToRelay, "dial_failure: "+dial.Peer.String()+" is not accessible")
	case err != nil:
		writeLightpush(w, http.StatusInternalServerError, err.Error())
	case resp.StatusCode == lightpush.StatusOK && resp.RelayPeerCount == 0:
		// nwaku's client reads a success without relay peers as
		// NO_PEERS_TO_RELAY (waku_lightpush/common.nim toPushResult).
		ans := lightpushAnswer{}
		if resp.StatusDesc != "" {
			ans.StatusDesc = &resp.StatusDesc
		}
		writeJSONStatus(w, lightpush.StatusNoPeersToRelay, ans)
	case resp.StatusCode == lightpush.StatusOK:
		writeJSONStatus(w, http.StatusOK, lightpushAnswer{RelayPeerCount: &resp.RelayPeerCount})
	default:
		ans := lightpushAnswer{}
		if resp.StatusDesc != "" {
			ans.StatusDesc = &resp.StatusDesc
		}
		writeJSONStatus(w, httpCode(resp.StatusCode), ans)
	}
}

// httpCode is a status code as an HTTP status, 500 when it is none.
func httpCode(code uint32) int {
	if code < 100 || code > 599 {
		return http.StatusInternalServerError
	}
	return int(code)
}

// legacyTooManyRequests is the info of a lightpush v2 service refusing a
// request over its rate limit (nwaku waku_lightpush_legacy/common.nim
// TooManyRequestsMessage).
const legacyTooManyRequests = "TOO_MANY_REQUESTS"

// postLightpushLegacy answers POST /lightpush/v1/message as nwaku's
// rest_api/endpoint/legacy_lightpush/handlers.nim: plain text, 200 "OK",
// 429 when the service peer rate-limits, else 503 "Failed to request a
// message push: <info>".
func (s *Server) postLightpushLegacy(w http.ResponseWriter, r *http.Request) {
	topic, msg, ok := s.readLightpushBody(w, r, lightpushV1Texts, func(text string) { writeText(w, http.StatusBadRequest, text) })
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), LightTimeout)
	defer cancel()
	err := s.cfg.Lightpush.LightpushLegacy(ctx, topic, msg)
	var se *lightpush.StatusError
	switch {
	case err == nil:
		writeOK(w)
	case noPeerText(err) != "":
		writeText(w, http.StatusServiceUnavailable, noPeerText(err))
	case errors.Is(err, context.DeadlineExceeded):
		writeText(w, http.StatusServiceUnavailable, "Push request timed out")
	case errors.Is(err, lightpush.ErrDial):
		// nwaku's legacy client answers dial_failure alone
		// (waku/waku_lightpush_legacy/client.nim sendPushRequest).
		writeText(w, http.StatusServiceUnavailable, "Failed to request a message push: dial_failure")
	case errors.As(err, &se) && se.Desc == legacyTooManyRequests:
		writeText(w, http.StatusTooManyRequests, "Request rate limmit reached") // sic, nwaku's text
	case errors.As(err, &se):
		writeText(w, http.StatusServiceUnavailable, "Failed to request a message push: "+se.Desc)
	default:
		writeText(w, http.StatusServiceUnavailable, "Failed to request a message push: "+err.Error())
	}
}

// filterBody is the body of the filter subscription routes (nwaku
// rest_api/endpoint/filter/types.nim FilterSubscribeRequest and
// FilterUnsubscribeRequest; UNSUBSCRIBE_ALL has requestId only).
type filterBody struct {
	RequestID      *string  `json:"requestId"`
	PubsubTopic    string   `json:"pubsubTopic"`
	ContentFilters []string `json:"contentFilters"`
}

// filterAnswer is nwaku's FilterSubscriptionResponse JSON.
type filterAnswer struct {
	RequestID  string `json:"requestId"`
	StatusDesc string `json:"statusDesc"`
}

// readFilterBody decodes a subscription body as nwaku's readers: requestId
// always required, contentFilters required and not empty unless all.
func (s *Server) readFilterBody(w http.ResponseWriter, r *http.Request, all bool) (filterBody, bool) {
	body, ok := s.readBody(w, r)
	if !ok {
		return filterBody{}, false
	}
	var fb filterBody
	err := json.Unmarshal(body, &fb)
	switch {
	case err != nil:
	case fb.RequestID == nil:
		err = errors.New("Field `requestId` is missing")
	case all:
	case fb.ContentFilters == nil:
		err = errors.New("Field `contentFilters` is missing")
	case len(fb.ContentFilters) == 0:
		err = errors.New("Field `contentFilters` is empty")
	}
	if err != nil {
		filterBadBody(w, err.Error())
		return filterBody{}, false
	}
	return fb, true
}

// filterBadBody answers a filter route's body that cannot be read as
// nwaku's handlers do: 400, request id "unknown", the reason behind
// "BAD_REQUEST: Failed to decode request: " (filter/handlers.nim:
// decodeRequestBody's failures wrapped in FilterSubscribeError.badRequest).
// Missing and wrongly typed bodies are answered here too (readBody).
func filterBadBody(w http.ResponseWriter, reason string) {
	writeJSONStatus(w, http.StatusBadRequest, filterAnswer{RequestID: "unknown", StatusDesc: "BAD_REQUEST: Failed to decode request: " + reason})
}

// filterDo sends the requests of one REST call to one selected service
// peer and answers as nwaku's makeRestResponse: the service's status code
// as the HTTP status, its description as statusDesc, "OK" on success.
// reached is false when no service peer was selected or the call timed
// out (timedOut is then nwaku's text): nwaku then leaves its message
// cache as it was; a dial failure or a bad response counts as reached, as
// in nwaku.
func (s *Server) filterDo(w http.ResponseWriter, r *http.Request, requestID string, reqs []filter.SubscribeRequest, timedOut string) (reached bool) {
	send, err := s.cfg.Filter.FilterService()
	if err != nil {
		text := noPeerText(err)
		if text == "" {
			text = err.Error()
		}
		writeJSONStatus(w, http.StatusServiceUnavailable, filterAnswer{requestID, "SERVICE_UNAVAILABLE: " + text})
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), LightTimeout)
	defer cancel()
	code, desc := uint32(filter.StatusOK), "OK"
	var dial *filter.DialError
	for _, req := range reqs {
		req.RequestID = requestID
		resp, err := send(ctx, req)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			writeJSONStatus(w, http.StatusServiceUnavailable, filterAnswer{requestID, "SERVICE_UNAVAILABLE: " + timedOut})
			return false
		case errors.As(err, &dial):
			// nwaku's PEER_DIAL_FAILURE: 504, the peer as statusDesc
			// (filter/handlers.nim getStatusDesc; the address is
			// $servicePeer, its peer id, waku/waku_filter_v2/client.nim).
			writeJSONStatus(w, http.StatusGatewayTimeout, filterAnswer{requestID, dial.Peer.String()})
			return true
		case err != nil:
			// nwaku's BAD_RESPONSE: 500, the cause as statusDesc.
			writeJSONStatus(w, http.StatusInternalServerError, filterAnswer{requestID, err.Error()})
			return true
		case resp.StatusCode != filter.StatusOK:
			code, desc = resp.StatusCode, resp.StatusDesc
		}
	}
	status := http.StatusOK
	switch code {
	case filter.StatusOK:
	case filter.StatusBadRequest, filter.StatusNotFound, filter.StatusTooManyRequests, filter.StatusServiceUnavailable:
		status = int(code)
	case filter.StatusBadResponse:
		status = http.StatusInternalServerError
	default:
		desc = "UNKNOWN" // nwaku parses any other code as UNKNOWN, answered 200
	}
	writeJSONStatus(w, status, filterAnswer{requestID, desc})
	return true
}

// filterRequests builds the requests of a (un)subscription: one per shard
// under autosharding when no pubsub topic is given, else one.
func (s *Server) filterRequests(t filter.RequestType, fb filterBody) ([]filter.SubscribeRequest, []string) {
	shards := make([]string, len(fb.ContentFilters))
	if fb.PubsubTopic != "" {
		for i := range shards {
			shards[i] = fb.PubsubTopic
		}
		return []filter.SubscribeRequest{{Type: t, PubsubTopic: fb.PubsubTopic, HasPubsubTopic: true, ContentTopics: fb.ContentFilters}}, shards
	}
	byShard := map[string]int{}
	var reqs []filter.SubscribeRequest
	for i, ct := range fb.ContentFilters {
		topic, err := s.cfg.Node.ContentTopicShard(ct)
		if err != nil { // static sharding: the service answers 400
			return []filter.SubscribeRequest{{Type: t, ContentTopics: fb.ContentFilters}}, shards
		}
		shards[i] = topic
		j, ok := byShard[topic]
		if !ok {
			j = len(reqs)
			byShard[topic] = j
			reqs = append(reqs, filter.SubscribeRequest{Type: t, PubsubTopic: topic, HasPubsubTopic: true})
		}
		reqs[j].ContentTopics = append(reqs[j].ContentTopics, ct)
	}
	return reqs, shards
}

// postFilterSubscriptions answers POST and PUT /filter/v2/subscriptions;
// the content topics join the filter message cache once the service peer
// answered, whatever the answer (nwaku filter/handlers.nim
// filterPostPutSubscriptionRequestHandler). The timeout texts below are
// nwaku's, one per route.
func (s *Server) postFilterSubscriptions(w http.ResponseWriter, r *http.Request) {
	fb, ok := s.readFilterBody(w, r, false)
	if !ok {
		return
	}
	reqs, shards := s.filterRequests(filter.Subscribe, fb)
	if s.filterDo(w, r, *fb.RequestID, reqs, "Subscription request timed out") {
		s.filterCache.addContent(fb.ContentFilters, shards)
	}
}

func (s *Server) deleteFilterSubscriptions(w http.ResponseWriter, r *http.Request) {
	fb, ok := s.readFilterBody(w, r, false)
	if !ok {
		return
	}
	reqs, shards := s.filterRequests(filter.Unsubscribe, fb)
	if s.filterDo(w, r, *fb.RequestID, reqs, "Failed to unsubscribe from contentFilters due to timeout!") {
		s.filterCache.removeContent(fb.ContentFilters, shards)
	}
}

func (s *Server) deleteAllFilterSubscriptions(w http.ResponseWriter, r *http.Request) {
	fb, ok := s.readFilterBody(w, r, true)
	if !ok {
		return
	}
	if s.filterDo(w, r, *fb.RequestID, []filter.SubscribeRequest{{Type: filter.UnsubscribeAll}}, "Failed to unsubscribe from all contentFilters due to timeout!") {
		s.filterCache.reset()
	}
}

func (s *Server) pingFilter(w http.ResponseWriter, r *http.Request) {
	s.filterDo(w, r, r.PathValue("requestId"), []filter.SubscribeRequest{{Type: filter.SubscriberPing}}, "Ping timed out")
}

func (s *Server) getFilterMessages(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("contentTopic")
	envs, ok := s.filterCache.drainContent(topic)
	if !ok {
		writeText(w, http.StatusBadRequest, "Not subscribed to topic: "+topic)
		return
	}
	out := make([]FilterMessage, len(envs))
	for i, e := range envs {
		m := NewMessage(e.Message())
		out[i] = FilterMessage{Payload: m.Payload, ContentTopic: m.ContentTopic, Version: m.Version,
			Timestamp: m.Timestamp, Meta: m.Meta, Ephemeral: m.Ephemeral}
	}
	writeJSON(w, out)
}

// FilterTopic and FilterSubscription are the JSON of GET
// /admin/v1/filter/subscriptions (nwaku rest_api/endpoint/admin/types.nim).
type FilterTopic struct {
	PubsubTopic  string `json:"pubsubTopic"`
	ContentTopic string `json:"contentTopic"`
}

// FilterSubscription is one subscribed peer and its criteria.
type FilterSubscription struct {
	PeerID         string        `json:"peerId"`
	FilterCriteria []FilterTopic `json:"filterCriteria"`
}

func (s *Server) getFilterAdmin(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.FilterService == nil {
		writeText(w, http.StatusBadRequest, "Error: Filter Protocol is not mounted to the node")
		return
	}
	subs := s.cfg.FilterService.FilterSubscriptions()
	out := make([]FilterSubscription, len(subs))
	for i, ps := range subs {
		out[i] = FilterSubscription{PeerID: ps.Peer.String(), FilterCriteria: make([]FilterTopic, len(ps.Criteria))}
		for j, c := range ps.Criteria {
			out[i].FilterCriteria[j] = FilterTopic{c.PubsubTopic, c.ContentTopic}
		}
	}
	writeJSON(w, out)
}

// writeJSONStatus answers code with v as JSON, "&" and "<" as they are
// (nwaku's writer does not escape them).
func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeText(w, http.StatusInternalServerError, "An error occurred while building the json response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(bytes.TrimSuffix(body.Bytes(), []byte("\n")))
}
