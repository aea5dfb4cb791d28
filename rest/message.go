package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/couriernet/courier/message"
)

// Sentinel errors of ParseMessage.
var (
	// ErrInvalidBody: the JSON is not a valid REST message (syntax, a missing
	// or empty payload or content topic, a wrong type, a repeated field, an
	// integer out of range, meta over 64 bytes).
	ErrInvalidBody = errors.New("rest: invalid content body")
	// ErrBase64: payload, meta or proof is not standard padded base64.
	ErrBase64 = errors.New("rest: incorrect base64 string")
)

// Message is the REST JSON form of a WakuMessage (nwaku
// rest_api/endpoint/relay/types.nim RelayWakuMessage):
//
//	{"payload": base64, "contentTopic": string, "version": uint32,
//	 "timestamp": int64 Unix ns, "meta"?: base64, "ephemeral": bool, "proof"?: base64}
//
// Byte fields are standard base64 with padding. This is the shape GET
// /relay/v1/messages returns; nwaku writes "proof" always (empty when
// absent), this package only when the message has one, as go-waku.
type Message struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Version      uint32 `json:"version"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
	Ephemeral    bool   `json:"ephemeral"`
	Proof        []byte `json:"proof,omitempty"`
}

// NewMessage returns the REST form of m. Its byte slices alias m's, which
// must not change while the result is in use.
func NewMessage(m *message.Message) Message {
	payload := m.Payload
	if payload == nil {
		payload = []byte{} // "payload": "" rather than null
	}
	return Message{
		Payload: payload, ContentTopic: m.ContentTopic, Version: m.Version,
		Timestamp: m.Timestamp, Meta: m.Meta, Ephemeral: m.Ephemeral, Proof: m.RateLimitProof,
	}
}

// ParseMessage parses one REST message JSON object into a new Message that
// owns all its bytes, with the rules of nwaku's RelayWakuMessage reader for
// publishing: DecodeMessage, then payload and contentTopic must not be
// empty or white space. Errors wrap ErrInvalidBody or ErrBase64.
func ParseMessage(data []byte) (*message.Message, error) {
	m, err := DecodeMessage(data)
	if err != nil {
		return nil, err
	}
	return checkPublishable(m)
}

// DecodeMessage decodes one REST message JSON object into a new Message
// that owns all its bytes, without the rules of publishing: any message the
// JSON shape can carry decodes, an empty payload or content topic included
// (the deterministic hash is defined for them; 14/WAKU2-MESSAGE's own test
// vectors have an empty payload). The shape:
//   - payload and contentTopic are required fields (a payload of "" is an
//     empty payload);
//   - version is an integer 0..4294967295 and timestamp an integer that fits
//     int64 (Unix ns); both are parsed from the JSON literal, never through
//     float64, so 1.7e18, "17" and null are errors;
//   - meta (at most 64 bytes decoded) and proof are base64 strings,
//     ephemeral a bool;
//   - a repeated field is an error; unknown fields are skipped.
//
// The optional fields given are marked in Message.Present. An absent
// timestamp stays 0: DecodeMessage never fills in the current time (the
// publish handlers do), so the hash of a decoded message is the hash of the
// message as written. The Message's slices are fresh, with len == cap.
// Errors wrap ErrInvalidBody or ErrBase64.
func DecodeMessage(data []byte) (*message.Message, error) {
	if fields, ok := scanFlat(data); ok {
		return messageFromFields(fields)
	}
	return parseGeneral(data)
}

// parseGeneral is DecodeMessage over encoding/json, for any JSON text.
func parseGeneral(data []byte) (*message.Message, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	m := new(message.Message)
	seen := make(map[string]bool, 7)
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("%w: Multiple `%s` fields found", ErrInvalidBody, key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: field `%s`: %v", ErrInvalidBody, key, err)
		}
		if err := setField(m, key, raw); err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrInvalidBody)
	}
	return checkRequired(m, seen["payload"], seen["contentTopic"])
}

// messageFromFields applies the members scanFlat found, as the general
// parser does.
func messageFromFields(fields []field) (*message.Message, error) {
	m := new(message.Message)
	seen := make(map[string]bool, 7)
	for _, f := range fields {
		if seen[f.key] {
			return nil, fmt.Errorf("%w: Multiple `%s` fields found", ErrInvalidBody, f.key)
		}
		seen[f.key] = true
		if err := setField(m, f.key, f.raw); err != nil {
			return nil, err
		}
	}
	return checkRequired(m, seen["payload"], seen["contentTopic"])
}

// checkRequired checks that the payload and contentTopic fields were given
// (nwaku's text covers both a missing and an empty field).
func checkRequired(m *message.Message, havePayload, haveTopic bool) (*message.Message, error) {
	if !havePayload {
		return nil, fmt.Errorf("%w: Field `payload` is missing or empty", ErrInvalidBody)
	}
	if !haveTopic {
		return nil, fmt.Errorf("%w: Field `contentTopic` is missing or empty", ErrInvalidBody)
	}
	return m, nil
}

// checkPublishable applies nwaku's rules for a message to publish: payload
// and content topic not empty, the content topic not white space.
func checkPublishable(m *message.Message) (*message.Message, error) {
	if len(m.Payload) == 0 {
		return nil, fmt.Errorf("%w: Field `payload` is missing or empty", ErrInvalidBody)
	}
	if strings.TrimSpace(m.ContentTopic) == "" {
		return nil, fmt.Errorf("%w: Field `contentTopic` is missing or empty", ErrInvalidBody)
	}
	return m, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: want %q, got %v", ErrInvalidBody, want, tok)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidBody, err)
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%w: want a field name, got %v", ErrInvalidBody, tok)
	}
	return key, nil
}

// setField parses the raw JSON value of one field into m.
func setField(m *message.Message, key string, raw json.RawMessage) error {
	var err error
	switch key {
	case "payload":
		m.Payload, err = payloadField(key, raw)
	case "contentTopic":
		m.ContentTopic, err = stringField(key, raw)
	case "version":
		var v uint64
		v, err = uintField(key, raw, 32)
		m.Version, m.Present = uint32(v), m.Present|message.HasVersion
	case "timestamp":
		m.Timestamp, err = intField(key, raw)
		m.Present |= message.HasTimestamp
	case "meta":
		m.Meta, err = base64Field(key, raw)
		if err == nil && len(m.Meta) > message.MaxMetaSize {
			err = fmt.Errorf("%w: Field `meta` is %d bytes, over %d", ErrInvalidBody, len(m.Meta), message.MaxMetaSize)
		}
		m.Present |= message.HasMeta
	case "ephemeral":
		err = json.Unmarshal(raw, &m.Ephemeral)
		if err != nil || raw[0] != 't' && raw[0] != 'f' {
			err = fmt.Errorf("%w: Field `%s` is not a bool", ErrInvalidBody, key)
		}
		m.Present |= message.HasEphemeral
	case "proof":
		m.RateLimitProof, err = base64Field(key, raw)
		m.Present |= message.HasRateLimitProof
	}
	return err
}

func stringField(key string, raw json.RawMessage) (string, error) {
	if s, end, ok := plainString(raw, 0); ok && end == len(raw) {
		return string(s), nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%w: Field `%s` is not a string", ErrInvalidBody, key)
	}
	return s, nil
}

// payloadField decodes the payload's base64 straight from the JSON text
// when it has no escapes (the usual case), without a string copy.
func payloadField(key string, raw json.RawMessage) ([]byte, error) {
	s, end, ok := plainString(raw, 0)
	if !ok || end != len(raw) {
		str, err := stringField(key, raw)
		if err != nil {
			return nil, err
		}
		s = []byte(str)
	}
	if len(bytes.TrimSpace(s)) == 0 {
		return []byte{}, nil // empty; publishing refuses it (checkPublishable)
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, fmt.Errorf("%w: Field `%s`: %v", ErrBase64, key, err)
	}
	return out[:n:n], nil
}

func base64Field(key string, raw json.RawMessage) ([]byte, error) {
	s, err := stringField(key, raw)
	if err != nil {
		return nil, err
	}
	return decodeBase64(key, s)
}

func decodeBase64(key, s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: Field `%s`: %v", ErrBase64, key, err)
	}
	return slices.Clip(b), nil // DecodeString leaves room for padding
}

// uintField parses an unsigned integer literal of at most bits bits.
func uintField(key string, raw json.RawMessage, bits int) (uint64, error) {
	v, err := strconv.ParseUint(string(raw), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: Field `%s` is not an integer in range: %s", ErrInvalidBody, key, raw)
	}
	return v, nil
}

// intField parses an int64 integer literal.
func intField(key string, raw json.RawMessage) (int64, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: Field `%s` is not an int64 integer: %s", ErrInvalidBody, key, raw)
	}
	return v, nil
}
