package lightpush

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
	"github.com/couriernet/courier/message"
)

// MaxRequestSize is the largest request read, in bytes: one maximum
// WakuMessage plus 64 KiB. nwaku reads without a limit; a bound is needed.
const MaxRequestSize = message.MaxSize + 64*1024

// MaxResponseSize is the largest response read, in bytes.
const MaxResponseSize = 64 * 1024

// Sentinel errors of the decoders. Every error they return wraps one.
var (
	ErrMalformed    = errors.New("lightpush: malformed rpc")
	ErrMissingField = errors.New("lightpush: required field absent")
)

// Field numbers of LightPushRequest and LightPushResponse (waku-org/specs
// standards/core/lightpush.md; nwaku waku_lightpush/rpc_codec.nim).
const (
	fieldRequestID      protowire.Number = 1
	fieldPubsubTopic    protowire.Number = 20
	fieldMessage        protowire.Number = 21
	fieldStatusCode     protowire.Number = 10
	fieldStatusDesc     protowire.Number = 11
	fieldRelayPeerCount protowire.Number = 12
)

// Request is a LightPushRequest (v3).
type Request struct {
	RequestID string // field 1, required
	// PubsubTopic is field 20, meaningful when HasPubsubTopic; absent means
	// the service picks it by autosharding.
	PubsubTopic    string
	HasPubsubTopic bool
	// Message is field 21, the encoded WakuMessage, required. Decoded
	// requests alias the input (capacity capped).
	Message []byte
}

// Append appends the encoding of r to dst.
func (r *Request) Append(dst []byte) []byte {
	dst = r.appendHead(dst)
	dst = protowire.AppendTag(dst, fieldMessage, protowire.BytesType)
	return protowire.AppendBytes(dst, r.Message)
}

// appendHead appends the fields before the message: request id and, when
// present, the pubsub topic.
func (r *Request) appendHead(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldRequestID, protowire.BytesType)
	dst = protowire.AppendString(dst, r.RequestID)
	if r.HasPubsubTopic {
		dst = protowire.AppendTag(dst, fieldPubsubTopic, protowire.BytesType)
		dst = protowire.AppendString(dst, r.PubsubTopic)
	}
	return dst
}

// decodeRequest parses a LightPushRequest without decoding the WakuMessage
// inside. request_id and message are required, as in nwaku. Errors wrap
// ErrMalformed or ErrMissingField.
func decodeRequest(data []byte) (Request, error) {
	var r Request
	var haveID, haveMsg bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldRequestID:
			r.RequestID, haveID = string(rd.Bytes()), true
		case fieldPubsubTopic:
			r.PubsubTopic, r.HasPubsubTopic = string(rd.Bytes()), true
		case fieldMessage:
			r.Message, haveMsg = rd.Bytes(), true
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return Request{}, malformed(err)
	case !haveID:
		return Request{}, fmt.Errorf("%w: request_id", ErrMissingField)
	case !haveMsg:
		return Request{}, fmt.Errorf("%w: message", ErrMissingField)
	}
	return r, nil
}

// Response is a LightPushResponse (v3).
type Response struct {
	RequestID  string // field 1, always written
	StatusCode uint32 // field 10, always written
	StatusDesc string // field 11, written when not empty
	// RelayPeerCount is field 12, written when HasRelayPeerCount (nwaku
	// writes it on success only).
	RelayPeerCount    uint32
	HasRelayPeerCount bool
}

// Append appends the encoding of r to dst. request_id and status_code are
// always written: nwaku's decoder requires them.
func (r *Response) append(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldRequestID, protowire.BytesType)
	dst = protowire.AppendString(dst, r.RequestID)
	dst = protowire.AppendTag(dst, fieldStatusCode, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.StatusCode))
	if r.StatusDesc != "" {
		dst = protowire.AppendTag(dst, fieldStatusDesc, protowire.BytesType)
		dst = protowire.AppendString(dst, r.StatusDesc)
	}
	if r.HasRelayPeerCount {
		dst = protowire.AppendTag(dst, fieldRelayPeerCount, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(r.RelayPeerCount))
	}
	return dst
}

// decodeResponse parses a LightPushResponse; request_id and status_code are
// required, as in nwaku. Errors wrap ErrMalformed or ErrMissingField.
func decodeResponse(data []byte) (Response, error) {
	var r Response
	var haveID, haveCode bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldRequestID:
			r.RequestID, haveID = string(rd.Bytes()), true
		case fieldStatusCode:
			r.StatusCode, haveCode = uint32(rd.Varint()), true
		case fieldStatusDesc:
			r.StatusDesc = string(rd.Bytes())
		case fieldRelayPeerCount:
			r.RelayPeerCount, r.HasRelayPeerCount = uint32(rd.Varint()), true
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return Response{}, malformed(err)
	case !haveID:
		return Response{}, fmt.Errorf("%w: request_id", ErrMissingField)
	case !haveCode:
		return Response{}, fmt.Errorf("%w: status_code", ErrMissingField)
	}
	return r, nil
}

// Field numbers of the legacy PushRPC, PushRequest and PushResponse
// (rfc-index 19/lightpush.md; nwaku waku_lightpush_legacy/rpc_codec.nim).
const (
	fieldRPCRequestID  protowire.Number = 1
	fieldRPCRequest    protowire.Number = 2
	fieldRPCResponse   protowire.Number = 3
	fieldV2PubsubTopic protowire.Number = 1
	fieldV2Message     protowire.Number = 2
	fieldV2IsSuccess   protowire.Number = 1
	fieldV2Info        protowire.Number = 2
)

// LegacyRPC is a PushRPC of lightpush v2: a request or a response.
type LegacyRPC struct {
	RequestID string // field 1, required
	// Request is field 2; nil when absent.
	Request *LegacyRequest
	// Response is field 3; nil when absent.
	Response *LegacyResponse
}

// LegacyRequest is a v2 PushRequest: both fields are required.
type LegacyRequest struct {
	PubsubTopic string
	// Message is the encoded WakuMessage; decoded requests alias the input.
	Message []byte
}

// LegacyResponse is a v2 PushResponse.
type LegacyResponse struct {
	IsSuccess bool   // field 1, always written (nwaku requires it)
	Info      string // field 2, always written
}

// Append appends the encoding of r to dst. In a response is_success is
// written even when false: nwaku's decoder requires it.
func (r *LegacyRPC) Append(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldRPCRequestID, protowire.BytesType)
	dst = protowire.AppendString(dst, r.RequestID)
	if q := r.Request; q != nil {
		var b []byte
		b = protowire.AppendTag(b, fieldV2PubsubTopic, protowire.BytesType)
		b = protowire.AppendString(b, q.PubsubTopic)
		b = protowire.AppendTag(b, fieldV2Message, protowire.BytesType)
		b = protowire.AppendBytes(b, q.Message)
		dst = protowire.AppendTag(dst, fieldRPCRequest, protowire.BytesType)
		dst = protowire.AppendBytes(dst, b)
	}
	if p := r.Response; p != nil {
		var b []byte
		b = protowire.AppendTag(b, fieldV2IsSuccess, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(p.IsSuccess))
		b = protowire.AppendTag(b, fieldV2Info, protowire.BytesType)
		b = protowire.AppendString(b, p.Info)
		dst = protowire.AppendTag(dst, fieldRPCResponse, protowire.BytesType)
		dst = protowire.AppendBytes(dst, b)
	}
	return dst
}

// decodeLegacyRPC parses a PushRPC with nwaku's required fields: request_id;
// in a request pubsub_topic and message; in a response is_success. The
// request's message is not decoded and aliases data. Errors wrap
// ErrMalformed or ErrMissingField.
func decodeLegacyRPC(data []byte) (LegacyRPC, error) {
	var r LegacyRPC
	var haveID bool
	var req, resp []byte
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldRPCRequestID:
			r.RequestID, haveID = string(rd.Bytes()), true
		case fieldRPCRequest:
			req = rd.Bytes()
			r.Request = &LegacyRequest{}
		case fieldRPCResponse:
			resp = rd.Bytes()
			r.Response = &LegacyResponse{}
		}
	}
	if err := rd.Err(); err != nil {
		return LegacyRPC{}, malformed(err)
	}
	if !haveID {
		return LegacyRPC{}, fmt.Errorf("%w: request_id", ErrMissingField)
	}
	var err error
	if r.Request != nil {
		if *r.Request, err = decodeLegacyRequest(req); err != nil {
			return LegacyRPC{}, err
		}
	}
	if r.Response != nil {
		if *r.Response, err = decodeLegacyResponse(resp); err != nil {
			return LegacyRPC{}, err
		}
	}
	return r, nil
}

func decodeLegacyRequest(data []byte) (LegacyRequest, error) {
	var q LegacyRequest
	var haveTopic, haveMsg bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldV2PubsubTopic:
			q.PubsubTopic, haveTopic = string(rd.Bytes()), true
		case fieldV2Message:
			q.Message, haveMsg = rd.Bytes(), true
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return LegacyRequest{}, malformed(err)
	case !haveTopic:
		return LegacyRequest{}, fmt.Errorf("%w: pubsub_topic", ErrMissingField)
	case !haveMsg:
		return LegacyRequest{}, fmt.Errorf("%w: message", ErrMissingField)
	}
	return q, nil
}

func decodeLegacyResponse(data []byte) (LegacyResponse, error) {
	var p LegacyResponse
	var haveSuccess bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldV2IsSuccess:
			p.IsSuccess, haveSuccess = rd.Varint() != 0, true
		case fieldV2Info:
			p.Info = string(rd.Bytes())
		}
	}
	if err := rd.Err(); err != nil {
		return LegacyResponse{}, malformed(err)
	}
	if !haveSuccess {
		return LegacyResponse{}, fmt.Errorf("%w: is_success", ErrMissingField)
	}
	return p, nil
}

// malformed wraps a protowalk error in ErrMalformed.
func malformed(err error) error { return fmt.Errorf("%w: %w", ErrMalformed, err) }
