package rest

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/store"
)

// Errors a StoreBackend returns (wrapped with %w) so that GET
// /store/v3/messages answers nwaku's status and text.
var (
	// ErrNoLocalStore: the node does not serve store (no --store); the
	// query goes to a store peer instead.
	ErrNoLocalStore = errors.New("rest: store is not mounted")
	// ErrNoStorePeer: no peerAddr, no --storenode and no connected store
	// peer. Answered 412 "No suitable service peer & no discovery method".
	ErrNoStorePeer = errors.New("rest: no store peer")
	// ErrPeerAddr: peerAddr is not a multiaddr with /p2p/<peer id>.
	// Answered 400 "Failed parsing remote peer info: <error>".
	ErrPeerAddr = errors.New("rest: bad peer address")
)

// StoreTimeout bounds a query to a remote store node, as nwaku's REST
// futTimeout (rest_api/endpoint/store/handlers.nim).
const StoreTimeout = 5 * time.Second

// StoreResponse is the JSON of GET /store/v3/messages (nwaku
// StoreQueryResponseHex, rest_api/endpoint/store/types.nim): hashes and
// cursor as 0x-prefixed hex.
type StoreResponse struct {
	RequestID        string          `json:"requestId"`
	StatusCode       uint32          `json:"statusCode"`
	StatusDesc       string          `json:"statusDesc"`
	Messages         []StoreKeyValue `json:"messages"`
	PaginationCursor string          `json:"paginationCursor,omitempty"`
}

// StoreKeyValue is one message of a StoreResponse.
type StoreKeyValue struct {
	MessageHash string        `json:"messageHash"`
	Message     *StoreMessage `json:"message,omitempty"`
	PubsubTopic string        `json:"pubsubTopic,omitempty"`
}

// NewStoreResponse returns the JSON form of r. Messages are taken from
// KeyValue.Message, or decoded from KeyValue.Wire when Message is nil
// (a local answer); a stored message that does not decode is an error.
func NewStoreResponse(r *store.Response) (*StoreResponse, error) {
	out := &StoreResponse{RequestID: r.RequestID, StatusCode: r.StatusCode, StatusDesc: r.StatusDesc,
		Messages: make([]StoreKeyValue, len(r.Messages))}
	if r.Cursor != nil {
		out.PaginationCursor = hex0x(*r.Cursor)
	}
	for i := range r.Messages {
		kv := &r.Messages[i]
		out.Messages[i].MessageHash = hex0x(kv.Hash)
		if kv.Wire == nil {
			continue
		}
		m := kv.Message
		if m == nil {
			var err error
			if m, err = message.Decode(kv.Wire, nil); err != nil {
				return nil, fmt.Errorf("message %s: %w", kv.Hash, err)
			}
		}
		rm := StoreMessage(NewMessage(m))
		out.Messages[i].Message, out.Messages[i].PubsubTopic = &rm, kv.PubsubTopic
	}
	return out, nil
}

func hex0x(h message.Hash) string { return "0x" + hex.EncodeToString(h[:]) }

// ParseHash reads a message hash as nwaku's REST API does (hex, with or
// without 0x; rest_api/endpoint/store/types.nim parseHash) or as go-waku's
// documents it (standard or URL base64, padded or not).
func ParseHash(s string) (message.Hash, error) {
	var h message.Hash
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, herr := hex.DecodeString(t)
	if herr != nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(s); err == nil {
				b, herr = d, nil
				break
			}
		}
	}
	if herr != nil {
		return h, fmt.Errorf("Exception converting hex string to bytes: %q is neither hex nor base64", s)
	}
	if len(b) != len(h) {
		return h, fmt.Errorf("waku message hash parsing error: invalid hash length: %d", len(b))
	}
	copy(h[:], b)
	return h, nil
}

// parseStoreQuery reads the query parameters of GET /store/v3/messages as
// nwaku's createStoreQuery does (rest_api/endpoint/store/handlers.nim).
func parseStoreQuery(q url.Values) (*store.Request, error) {
	r := &store.Request{Forward: true, Limit: 20} // nwaku: ascending absent is forward
	if v := q.Get("includeData"); v != "" {
		b, ok := parseNimBool(v)
		if !ok {
			return nil, fmt.Errorf("include data parsing error: cannot interpret as a bool: %s", v)
		}
		r.IncludeData = b
	}
	r.PubsubTopic = q.Get("pubsubTopic")
	if v := q.Get("contentTopics"); v != "" {
		r.ContentTopics = strings.Split(v, ",")
	}
	var err error
	if r.StartTime, err = parseTime(q.Get("startTime")); err != nil {
		return nil, err
	}
	if r.EndTime, err = parseTime(q.Get("endTime")); err != nil {
		return nil, err
	}
	if v := q.Get("hashes"); v != "" {
		for _, s := range strings.Split(v, ",") {
			h, err := ParseHash(s)
			if err != nil {
				return nil, err
			}
			r.Hashes = append(r.Hashes, h)
		}
	}
	if v := q.Get("cursor"); v != "" {
		h, err := ParseHash(v)
		if err != nil {
			return nil, err
		}
		r.Cursor = &h
	}
	if v := q.Get("ascending"); v != "" {
		r.Forward = v == "true"
	}
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("page size parsing error: invalid integer: %s", v)
		}
		r.Limit = min(n, 100)
	}
	return r, nil
}

// parseTime keeps only a positive time, as nwaku's parseTime.
func parseTime(v string) (*int64, error) {
	if v == "" {
		return nil, nil
	}
	t, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("time parsing error: invalid integer: %s", v)
	}
	if t <= 0 {
		return nil, nil
	}
	return &t, nil
}

// parseNimBool reads a bool as Nim's strutils.parseBool: y, yes, true, 1,
// on or n, no, false, 0, off, in any case.
func parseNimBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "y", "yes", "true", "1", "on":
		return true, true
	case "n", "no", "false", "0", "off":
		return false, true
	}
	return false, false
}

// getStoreMessages serves GET /store/v3/messages: from the node's own
// archive when there is no peerAddr and the node serves store, else from a
// store node, as nwaku's handler.
func (s *Server) getStoreMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req, err := parseStoreQuery(q)
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	sb := s.cfg.Store
	if sb == nil {
		writeText(w, http.StatusPreconditionFailed, "No suitable service peer & no discovery method")
		return
	}
	n := min(storeAnswerBytes(req), s.cfg.MaxBufferedBytes)
	if !s.bodies.reserveAs(w, r, n, textAnswersBusy, "") {
		return
	}
	defer s.bodies.release(n)
	peerAddr := q.Get("peerAddr")
	if peerAddr == "" {
		resp, err := sb.StoreLocal(r.Context(), req)
		switch {
		case err == nil:
			s.writeStore(w, resp)
			return
		case !errors.Is(err, ErrNoLocalStore):
			writeText(w, http.StatusInternalServerError, "error in handleSelfStoreRequest: "+err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), StoreTimeout)
	defer cancel()
	resp, err := sb.StoreRemote(ctx, peerAddr, req)
	var se *store.StatusError
	switch {
	case err == nil:
		s.writeStore(w, resp)
	case errors.Is(err, ErrPeerAddr):
		writeText(w, http.StatusBadRequest, "Failed parsing remote peer info: "+err.Error())
	case errors.Is(err, ErrNoStorePeer):
		writeText(w, http.StatusPreconditionFailed, "No suitable service peer & no discovery method")
	case errors.As(err, &se) && se.Code == store.StatusTooManyRequests:
		writeText(w, http.StatusTooManyRequests, "Request rate limit reached")
	case errors.As(err, &se):
		s.writeStore(w, storeErrorResponse(se.Code, se.Desc))
	case errors.Is(err, store.ErrDial):
		addr := peerAddr
		if addr == "" {
			addr = "store peer"
		}
		s.writeStore(w, storeErrorResponse(store.StatusPeerDialFailure, addr))
	case ctx.Err() != nil:
		writeText(w, http.StatusInternalServerError, "No history response received (timeout)")
	default:
		writeText(w, http.StatusInternalServerError, "Error occurred in queryFut.read() ["+err.Error()+"]")
	}
}

// storeAnswerBytes bounds what answering req holds at once: for each
// message of its page, the encoded message (at most message.MaxSize), its
// payload and meta in base64 and the JSON written, with room for its
// other fields; a hash's JSON without data.
func storeAnswerBytes(req *store.Request) int64 {
	perMessage := int64(160)
	if req.IncludeData {
		perMessage = 4*message.MaxSize + 1024
	}
	n := int64(req.Limit)
	if n == 0 {
		n = archive.DefaultPageSize
	}
	return n*perMessage + 4096
}

// storeErrorResponse is the response nwaku's node.query builds from a
// store client error: the code of a known kind (else 0) and the
// StoreError's text, "<KIND>: <cause>" (waku_store/common.nim).
func storeErrorResponse(code uint32, desc string) *store.Response {
	switch code {
	case store.StatusBadResponse:
		return &store.Response{StatusCode: code, StatusDesc: "BAD_RESPONSE: " + desc}
	case store.StatusBadRequest:
		return &store.Response{StatusCode: code, StatusDesc: "BAD_REQUEST: " + desc}
	case store.StatusServiceUnavailable:
		return &store.Response{StatusCode: code, StatusDesc: "SERVICE_UNAVAILABLE"}
	case store.StatusPeerDialFailure:
		return &store.Response{StatusCode: code, StatusDesc: "PEER_DIAL_FAILURE: " + desc}
	}
	return &store.Response{StatusCode: 0, StatusDesc: "UNKNOWN"}
}

func (s *Server) writeStore(w http.ResponseWriter, resp *store.Response) {
	out, err := NewStoreResponse(resp)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "Error building the json respose ["+err.Error()+"]")
		return
	}
	writeJSON(w, out)
}
