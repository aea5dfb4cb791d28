package store

import (
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
	"github.com/couriernet/courier/message"
)

// Field numbers of StoreQueryRequest, StoreQueryResponse and
// WakuMessageKeyValue (rfc-index 13/store.md, package waku.store.v3).
const (
	fieldReqID         protowire.Number = 1
	fieldIncludeData   protowire.Number = 2
	fieldPubsubTopic   protowire.Number = 10
	fieldContentTopics protowire.Number = 11
	fieldTimeStart     protowire.Number = 12
	fieldTimeEnd       protowire.Number = 13
	fieldMessageHashes protowire.Number = 20
	fieldCursor        protowire.Number = 51
	fieldForward       protowire.Number = 52
	fieldLimit         protowire.Number = 53
	fieldRespReqID     protowire.Number = 1
	fieldStatusCode    protowire.Number = 10
	fieldStatusDesc    protowire.Number = 11
	fieldMessages      protowire.Number = 20
	fieldRespCursor    protowire.Number = 51
	fieldKVHash        protowire.Number = 1
	fieldKVMessage     protowire.Number = 2
	fieldKVPubsubTopic protowire.Number = 3
)

const hashSize = len(message.Hash{})

// ErrMalformed is wrapped by every decoding error: DecodeRequest's, and
// Query's for a response that does not decode. The text after it names
// the failure the way nwaku's decoder does (minprotobuf's ProtoError
// names, or "MissingRequiredField <field>"), so that a server can answer
// with nwaku's status text.
var ErrMalformed = errors.New("store: malformed rpc")

// decodeError is a decode failure with nwaku's name for it.
type decodeError struct{ name string }

func (e *decodeError) Error() string { return ErrMalformed.Error() + ": " + e.name }
func (e *decodeError) Unwrap() error { return ErrMalformed }

var (
	errVarint     = &decodeError{"VarintDecode"}
	errIncomplete = &decodeError{"MessageIncomplete"}
	errWireType   = &decodeError{"BadWireType"}
)

// Request is a StoreQueryRequest. The zero value is a valid query for the
// newest DefaultPageSize hashes of the whole archive.
type Request struct {
	// RequestID is field 1. It is always written: nwaku's decoder refuses a
	// request without it.
	RequestID string
	// IncludeData is field 2: true returns each message and its pubsub
	// topic, false the hashes only.
	IncludeData bool
	// PubsubTopic is field 10, written when not "".
	PubsubTopic string
	// ContentTopics is field 11.
	ContentTopics []string
	// StartTime and EndTime are fields 12 and 13, Unix nanoseconds (sint64),
	// written when not nil. nwaku treats both as inclusive.
	StartTime, EndTime *int64
	// Hashes is field 20. A field of another length than 32 bytes is
	// truncated or padded with zero bytes, as nwaku's decoder does
	// (waku_store/rpc_codec.nim, copyFrom).
	Hashes []message.Hash
	// Cursor is field 51, written when not nil; decoded like a hash.
	Cursor *message.Hash
	// Forward is field 52: true pages from old to new. An absent field
	// reads as false (backward), proto3's default, which go-waku's and
	// js-waku's encoders rely on: they omit a false field. Here courier
	// departs from nwaku v0.38.1, whose decoder reads an absent field as
	// forward (PagingDirection.default(), waku_store/rpc_codec.nim): that
	// would turn those clients' backward queries forward. nwaku's own
	// clients always write the field, so they are not affected.
	Forward bool
	// Limit is field 53, the page size, written when not 0 (0 means the
	// server's default, 20 at nwaku).
	Limit uint64
}

// Append appends the encoding of r to dst and returns it. Fields 1, 2 and
// 52 are always written, as nwaku's encoder writes them.
func (r *Request) Append(dst []byte) []byte {
	dst = appendString(dst, fieldReqID, r.RequestID)
	dst = appendBool(dst, fieldIncludeData, r.IncludeData)
	if r.PubsubTopic != "" {
		dst = appendString(dst, fieldPubsubTopic, r.PubsubTopic)
	}
	for _, c := range r.ContentTopics {
		dst = appendString(dst, fieldContentTopics, c)
	}
	if r.StartTime != nil {
		dst = protowire.AppendTag(dst, fieldTimeStart, protowire.VarintType)
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(*r.StartTime))
	}
	if r.EndTime != nil {
		dst = protowire.AppendTag(dst, fieldTimeEnd, protowire.VarintType)
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(*r.EndTime))
	}
	for i := range r.Hashes {
		dst = protowire.AppendTag(dst, fieldMessageHashes, protowire.BytesType)
		dst = protowire.AppendBytes(dst, r.Hashes[i][:])
	}
	if r.Cursor != nil {
		dst = protowire.AppendTag(dst, fieldCursor, protowire.BytesType)
		dst = protowire.AppendBytes(dst, r.Cursor[:])
	}
	dst = appendBool(dst, fieldForward, r.Forward)
	if r.Limit != 0 {
		dst = protowire.AppendTag(dst, fieldLimit, protowire.VarintType)
		dst = protowire.AppendVarint(dst, r.Limit)
	}
	return dst
}

// DecodeRequest parses an encoded StoreQueryRequest. It copies what it
// keeps, so data may be reused afterwards. Field 1 must be present (it may
// be empty), as nwaku requires; unknown fields are skipped and a repeated
// singular field takes the last value. Errors wrap ErrMalformed.
func DecodeRequest(data []byte) (*Request, error) {
	r := new(Request)
	haveID := false
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldReqID:
			r.RequestID, haveID = string(rd.Bytes()), true
		case fieldIncludeData:
			r.IncludeData = rd.Varint() != 0
		case fieldPubsubTopic:
			r.PubsubTopic = string(rd.Bytes())
		case fieldContentTopics:
			r.ContentTopics = append(r.ContentTopics, string(rd.Bytes()))
		case fieldTimeStart:
			t := protowire.DecodeZigZag(rd.Varint())
			r.StartTime = &t
		case fieldTimeEnd:
			t := protowire.DecodeZigZag(rd.Varint())
			r.EndTime = &t
		case fieldMessageHashes:
			var h message.Hash
			copy(h[:], rd.Bytes())
			r.Hashes = append(r.Hashes, h)
		case fieldCursor:
			c := new(message.Hash)
			copy(c[:], rd.Bytes())
			r.Cursor = c
		case fieldForward:
			r.Forward = rd.Varint() != 0
		case fieldLimit:
			r.Limit = rd.Varint()
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nwakuErr(err)
	}
	if !haveID {
		return nil, &decodeError{"MissingRequiredField request_id"}
	}
	return r, nil
}

// KeyValue is a WakuMessageKeyValue: a message hash and, when the query
// included data, the message and its pubsub topic.
type KeyValue struct {
	// Hash is field 1.
	Hash message.Hash
	// Wire is field 2, the encoded WakuMessage, nil when absent. Encoding
	// writes it as it is (no re-encode). Decoded, it aliases the response's
	// input bytes.
	Wire []byte
	// Message is Wire decoded by Query (it aliases Wire); encoding
	// ignores it.
	Message *message.Message
	// PubsubTopic is field 3, written together with Wire.
	PubsubTopic string
}

// size returns the length of the encoding of kv.
func (kv *KeyValue) size() int {
	n := protowire.SizeTag(fieldKVHash) + protowire.SizeBytes(hashSize)
	if kv.Wire != nil {
		n += protowire.SizeTag(fieldKVMessage) + protowire.SizeBytes(len(kv.Wire))
		n += protowire.SizeTag(fieldKVPubsubTopic) + protowire.SizeBytes(len(kv.PubsubTopic))
	}
	return n
}

func (kv *KeyValue) append(dst []byte) []byte {
	dst = protowire.AppendTag(dst, fieldKVHash, protowire.BytesType)
	dst = protowire.AppendBytes(dst, kv.Hash[:])
	if kv.Wire != nil {
		dst = protowire.AppendTag(dst, fieldKVMessage, protowire.BytesType)
		dst = protowire.AppendBytes(dst, kv.Wire)
		dst = appendString(dst, fieldKVPubsubTopic, kv.PubsubTopic)
	}
	return dst
}

// Response is a StoreQueryResponse.
type Response struct {
	// RequestID is field 1: the request's on success, "" on an error and
	// "N/A" when rate limited (nwaku waku_store/protocol.nim).
	RequestID string
	// StatusCode and StatusDesc are fields 10 and 11 (see the Status
	// constants).
	StatusCode uint32
	StatusDesc string
	// Messages is field 20, in forward order (timestamp, then hash).
	Messages []KeyValue
	// Cursor is field 51: pass it as Request.Cursor for the next page in the
	// same direction. nil means there are no more pages.
	Cursor *message.Hash
}

// size returns the length in bytes of the encoding Append produces.
func (r *Response) size() int {
	n := protowire.SizeTag(fieldRespReqID) + protowire.SizeBytes(len(r.RequestID))
	n += protowire.SizeTag(fieldStatusCode) + protowire.SizeVarint(uint64(r.StatusCode))
	n += protowire.SizeTag(fieldStatusDesc) + protowire.SizeBytes(len(r.StatusDesc))
	for i := range r.Messages {
		n += protowire.SizeTag(fieldMessages) + protowire.SizeBytes(r.Messages[i].size())
	}
	if r.Cursor != nil {
		n += protowire.SizeTag(fieldRespCursor) + protowire.SizeBytes(hashSize)
	}
	return n
}

// Append appends the encoding of r to dst and returns it. Fields 1, 10 and
// 11 are always written, zero values included: nwaku's decoder requires
// them. Each message's Wire is copied in as it is.
func (r *Response) Append(dst []byte) []byte {
	dst = appendString(dst, fieldRespReqID, r.RequestID)
	dst = protowire.AppendTag(dst, fieldStatusCode, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(r.StatusCode))
	dst = appendString(dst, fieldStatusDesc, r.StatusDesc)
	for i := range r.Messages {
		dst = protowire.AppendTag(dst, fieldMessages, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(r.Messages[i].size()))
		dst = r.Messages[i].append(dst)
	}
	if r.Cursor != nil {
		dst = protowire.AppendTag(dst, fieldRespCursor, protowire.BytesType)
		dst = protowire.AppendBytes(dst, r.Cursor[:])
	}
	return dst
}

// decodeResponse parses an encoded StoreQueryResponse and decodes each
// included message once (counting in c; nil means not counted). The
// result aliases data: the caller gives up data and must not modify it.
// Absent fields 1, 10 and 11 read as zero values (go-waku and courier
// accept what nwaku writes and more). A key-value's message and pubsub
// topic are kept only when both are present, as nwaku reads them. Errors
// wrap ErrMalformed, or a message decode error of package message.
func decodeResponse(data []byte, c *message.Counters) (*Response, error) {
	r := new(Response)
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldRespReqID:
			r.RequestID = string(rd.Bytes())
		case fieldStatusCode:
			r.StatusCode = uint32(rd.Varint())
		case fieldStatusDesc:
			r.StatusDesc = string(rd.Bytes())
		case fieldMessages:
			v := rd.Bytes()
			if v == nil {
				break // the reader's error
			}
			kv, err := decodeKeyValue(v, c)
			if err != nil {
				return nil, err
			}
			r.Messages = append(r.Messages, kv)
		case fieldRespCursor:
			h := new(message.Hash)
			copy(h[:], rd.Bytes())
			r.Cursor = h
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nwakuErr(err)
	}
	return r, nil
}

func decodeKeyValue(data []byte, c *message.Counters) (KeyValue, error) {
	var kv KeyValue
	var haveHash, haveTopic bool
	rd := protowalk.NewReader(data)
	for rd.Next() {
		switch rd.Num() {
		case fieldKVHash:
			copy(kv.Hash[:], rd.Bytes())
			haveHash = true
		case fieldKVMessage:
			kv.Wire = rd.Bytes()
		case fieldKVPubsubTopic:
			kv.PubsubTopic, haveTopic = string(rd.Bytes()), true
		}
	}
	switch err := rd.Err(); {
	case err != nil:
		return KeyValue{}, nwakuErr(err)
	case !haveHash:
		return KeyValue{}, &decodeError{"MissingRequiredField message_hash"}
	case kv.Wire == nil || !haveTopic:
		kv.Wire, kv.PubsubTopic = nil, ""
		return kv, nil
	}
	var err error
	if kv.Message, err = message.Decode(kv.Wire, c); err != nil {
		return KeyValue{}, fmt.Errorf("store: message %s: %w", kv.Hash, err)
	}
	return kv, nil
}

// nwakuErr names a protowalk error as minprotobuf would: a tag that does
// not parse is VarintDecode, a value cut short MessageIncomplete.
func nwakuErr(err error) error {
	e := err.(*protowalk.Error)
	switch {
	case e.Kind == protowalk.WrongType:
		return errWireType
	case e.Kind == protowalk.BadValue && errors.Is(e.Err, io.ErrUnexpectedEOF):
		return errIncomplete
	}
	return errVarint
}

func appendString(dst []byte, num protowire.Number, s string) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

func appendBool(dst []byte, num protowire.Number, b bool) []byte {
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, protowire.EncodeBool(b))
}
