package filter

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
	"github.com/couriernet/courier/message"
)

// Size limits of the filter RPCs in bytes (nwaku waku_filter_v2/rpc_codec.nim):
// ten maximum messages plus 64 KiB for a request or a push, 64 KiB for a
// response.
const (
	MaxRequestSize  = 10*message.MaxSize + 64*1024
	MaxResponseSize = 64 * 1024
	MaxPushSize     = 10*message.MaxSize + 64*1024
)

// RequestType is FilterSubscribeRequest.filter_subscribe_type.
type RequestType uint32

// Request types of 12/WAKU2-FILTER.
const (
	SubscriberPing RequestType = 0
	Subscribe      RequestType = 1
	Unsubscribe    RequestType = 2
	UnsubscribeAll RequestType = 3
)

// String returns nwaku's name of t.
func (t RequestType) String() string {
	switch t {
	case SubscriberPing:
		return "SUBSCRIBER_PING"
	case Subscribe:
		return "SUBSCRIBE"
	case Unsubscribe:
		return "UNSUBSCRIBE"
	case UnsubscribeAll:
		return "UNSUBSCRIBE_ALL"
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint32(t))
}

// Field numbers of 12/WAKU2-FILTER (rfc-index 12/filter.md).
const (
	fieldRequestID     protowire.Number = 1
	fieldRequestType   protowire.Number = 2
	fieldPubsubTopic   protowire.Number = 10
	fieldContentTopics protowire.Number = 11

	fieldStatusCode protowire.Number = 10
	fieldStatusDesc protowire.Number = 11

	fieldPushMessage     protowire.Number = 1
	fieldPushPubsubTopic protowire.Number = 2
)

// Sentinel errors of the decoders. Every error they return wraps one.
var (
	// ErrMalformed: bytes that are not a valid protobuf, or a known field
	// with the wrong wire type.
	ErrMalformed = errors.New("filter: malformed rpc")
	// ErrMissingField: a field nwaku's decoder requires is absent.
	ErrMissingField = errors.New("filter: required field absent")
)

// SubscribeRequest is a FilterSubscribeRequest.
type SubscribeRequest struct {
	RequestID string      // field 1, required
	Type      RequestType // field 2; absent means SubscriberPing, as nwaku reads it
	// PubsubTopic is field 10, meaningful when HasPubsubTopic.
	PubsubTopic    string
	HasPubsubTopic bool
	ContentTopics  []string // field 11, repeated
}

// Append appends the encoding of r to dst: request id and type always, the
// pubsub topic when present, every content topic.
func (r *SubscribeRequest) Append(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldRequestID, protowire.BytesType)
	dst = protowire.AppendString(dst, r.RequestID)
	dst = protowire.AppendTag(dst, fieldRequestType, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.Type))
	if r.HasPubsubTopic {
		dst = protowire.AppendTag(dst, fieldPubsubTopic, protowire.BytesType)
		dst = protowire.AppendString(dst, r.PubsubTopic)
	}
	for _, ct := range r.ContentTopics {
		dst = protowire.AppendTag(dst, fieldContentTopics, protowire.BytesType)
		dst = protowire.AppendString(dst, ct)
	}
	return dst
}

// decodeSubscribeRequest parses a FilterSubscribeRequest. The strings are
// copies; data is not retained. A missing request id is an error, as in
// nwaku's decoder. Errors wrap ErrMalformed or ErrMissingField.
func decodeSubscribeRequest(data []byte) (SubscribeRequest, error) {
	var r SubscribeRequest
	var haveID bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldRequestID:
			r.RequestID, haveID = string(rd.Bytes()), true
		case fieldRequestType:
			r.Type = RequestType(uint32(rd.Varint()))
		case fieldPubsubTopic:
			r.PubsubTopic, r.HasPubsubTopic = string(rd.Bytes()), true
		case fieldContentTopics:
			r.ContentTopics = append(r.ContentTopics, string(rd.Bytes()))
		}
	}
	if err := rd.Err(); err != nil {
		return SubscribeRequest{}, malformed(err)
	}
	if !haveID {
		return SubscribeRequest{}, fmt.Errorf("%w: request_id", ErrMissingField)
	}
	return r, nil
}

// SubscribeResponse is a FilterSubscribeResponse.
type SubscribeResponse struct {
	RequestID  string // field 1, required
	StatusCode uint32 // field 10, required
	StatusDesc string // field 11
}

// Append appends the encoding of r to dst. All three fields are written,
// zero values included: nwaku's decoder requires request_id and status_code.
func (r *SubscribeResponse) append(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldRequestID, protowire.BytesType)
	dst = protowire.AppendString(dst, r.RequestID)
	dst = protowire.AppendTag(dst, fieldStatusCode, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.StatusCode))
	dst = protowire.AppendTag(dst, fieldStatusDesc, protowire.BytesType)
	return protowire.AppendString(dst, r.StatusDesc)
}

// DecodeSubscribeResponse parses a FilterSubscribeResponse. Request id and
// status code are required, as in nwaku. Errors wrap ErrMalformed or
// ErrMissingField.
func DecodeSubscribeResponse(data []byte) (SubscribeResponse, error) {
	var r SubscribeResponse
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
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return SubscribeResponse{}, malformed(err)
	case !haveID:
		return SubscribeResponse{}, fmt.Errorf("%w: request_id", ErrMissingField)
	case !haveCode:
		return SubscribeResponse{}, fmt.Errorf("%w: status_code", ErrMissingField)
	}
	return r, nil
}

// pushFrameSize returns the length of the frame AppendPushFrame writes.
func pushFrameSize(pubsubTopic string, wire []byte) int {
	n := pushSize(pubsubTopic, wire)
	return protowire.SizeVarint(uint64(n)) + n
}

func pushSize(pubsubTopic string, wire []byte) int {
	return protowire.SizeTag(fieldPushMessage) + protowire.SizeBytes(len(wire)) +
		protowire.SizeTag(fieldPushPubsubTopic) + protowire.SizeBytes(len(pubsubTopic))
}

// AppendPushFrame appends a MessagePush around wire, an encoded WakuMessage
// taken as it is (never decoded or encoded again), behind the unsigned-varint
// length prefix of the stream framing: the bytes a push stream carries for
// one message. pubsub_topic is always written, because nwaku's decoder
// requires it (waku_filter_v2/rpc_codec.nim). wire is copied into dst.
func AppendPushFrame(dst []byte, pubsubTopic string, wire []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(pushSize(pubsubTopic, wire)))
	dst = protowire.AppendTag(dst, fieldPushMessage, protowire.BytesType)
	dst = protowire.AppendBytes(dst, wire)
	dst = protowire.AppendTag(dst, fieldPushPubsubTopic, protowire.BytesType)
	return protowire.AppendString(dst, pubsubTopic)
}

// Push is a decoded MessagePush: the pubsub topic and the encoded
// WakuMessage, not yet decoded.
type Push struct {
	PubsubTopic string // a copy
	// Wire is the encoded WakuMessage, a sub-slice of the decoded input
	// (capacity capped): whoever holds it must not modify it.
	Wire []byte
}

// DecodePush parses a MessagePush without decoding the WakuMessage inside,
// so that the receiver decodes it once with message.Decode. Both fields are
// required, as in nwaku. Errors wrap ErrMalformed or ErrMissingField.
func DecodePush(data []byte) (Push, error) {
	var p Push
	var haveMsg, haveTopic bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldPushMessage:
			p.Wire, haveMsg = rd.Bytes(), true
		case fieldPushPubsubTopic:
			p.PubsubTopic, haveTopic = string(rd.Bytes()), true
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return Push{}, malformed(err)
	case !haveMsg:
		return Push{}, fmt.Errorf("%w: message", ErrMissingField)
	case !haveTopic:
		return Push{}, fmt.Errorf("%w: pubsub_topic", ErrMissingField)
	}
	return p, nil
}

// malformed wraps a protowalk error in ErrMalformed.
func malformed(err error) error { return fmt.Errorf("%w: %w", ErrMalformed, err) }
