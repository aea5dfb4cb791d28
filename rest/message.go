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
// /relay/v1/messages returns, "proof" always written ("" when the message
// has none) as nwaku's toRelayWakuMessage does. Store answers use
// StoreMessage, the filter message cache FilterMessage.
type Message struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Version      uint32 `json:"version"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
	Ephemeral    bool   `json:"ephemeral"`
	Proof        []byte `json:"proof"`
}

// StoreMessage is a message of a store answer: Message with "proof" only
// when the message has one (nwaku rest_api/endpoint/store/types.nim).
type StoreMessage struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Version      uint32 `json:"version"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
	Ephemeral    bool   `json:"ephemeral"`
	Proof        []byte `json:"proof,omitempty"`
}

// FilterMessage is a message of GET /filter/v2/messages: Message without
// "proof" (nwaku rest_api/endpoint/filter/types.nim FilterWakuMessage).
type FilterMessage struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Version      uint32 `json:"version"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
	Ephemeral    bool   `json:"ephemeral"`
}

// NewMessage returns the REST form of m. Its byte slices alias m's, which
// must not change while the result is in use.
func NewMessage(m *message.Message) Message {
	return Message{
		Payload: nonNil(m.Payload), ContentTopic: m.ContentTopic, Version: m.Version,
		Timestamp: m.Timestamp, Meta: m.Meta, Ephemeral: m.Ephemeral, Proof: nonNil(m.RateLimitProof),
	}
}

// nonNil returns b, or an empty slice for nil, so that JSON writes ""
// rather than null.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
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
	return checkPublishable(m, nil)
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
	m, _, err := decodeMessage(data, false)
	return m, err
}

// decodeMessage is DecodeMessage; with deferPayload it leaves m.Payload nil
// and returns the payload's base64 text, checked, for decoding straight
// into its final place (payloadText.decodeInto).
func decodeMessage(data []byte, deferPayload bool) (*message.Message, *payloadText, error) {
	var text *payloadText
	if deferPayload {
		text = new(payloadText)
	}
	var m *message.Message
	var err error
	if fields, ok := scanFlat(data); ok {
		m, err = messageFromFields(fields, text)
	} else {
		m, err = parseGeneral(data, text)
	}
	if err != nil {
		return nil, nil, err
	}
	return m, text, nil
}

// parseGeneral is DecodeMessage over encoding/json, for any JSON text.
// Text that is not JSON is refused by a scan that allocates nothing
// (json.Valid), never read through json.Decoder: the decoder copies what
// it reads into a buffer grown by doubling, about four times the body in
// garbage for an unterminated string of megabytes.
func parseGeneral(data []byte, text *payloadText) (*message.Message, error) {
	if !json.Valid(data) {
		// Unmarshal scans before it decodes: on invalid text it returns
		// the syntax error alone.
		return nil, fmt.Errorf("%w: %v", ErrInvalidBody, json.Unmarshal(data, new(struct{})))
	}
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
		if err := setField(m, key, raw, text); err != nil {
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
func messageFromFields(fields []field, text *payloadText) (*message.Message, error) {
	m := new(message.Message)
	seen := make(map[string]bool, 7)
	for _, f := range fields {
		if seen[f.key] {
			return nil, fmt.Errorf("%w: Multiple `%s` fields found", ErrInvalidBody, f.key)
		}
		seen[f.key] = true
		if err := setField(m, f.key, f.raw, text); err != nil {
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

// checkPublishable applies nwaku's rules for a message to publish (payload
// not empty, rest_api/endpoint/relay/types.nim) and the content topic rule
// every way into the node shares (message.CheckContentTopic: not empty or
// white space, nwaku's REST rule, and at most 1024 bytes). The payload is
// m.Payload, or text when it is not nil.
func checkPublishable(m *message.Message, text *payloadText) (*message.Message, error) {
	if n := len(m.Payload); n == 0 && (text == nil || text.n == 0) {
		return nil, fmt.Errorf("%w: Field `payload` is missing or empty", ErrInvalidBody)
	}
	switch err := message.CheckContentTopic(m.ContentTopic); {
	case errors.Is(err, message.ErrContentTopicTooLong):
		return nil, fmt.Errorf("%w: Field `contentTopic` is over %d bytes", ErrInvalidBody, message.MaxContentTopicSize)
	case err != nil:
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

// setField parses the raw JSON value of one field into m; the payload into
// text instead when text is not nil.
func setField(m *message.Message, key string, raw json.RawMessage, text *payloadText) error {
	if key == "payload" && text != nil {
		var err error
		*text, err = payloadTextField(key, raw)
		return err
	}
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

// payloadText is a payload still in its base64 text (standard alphabet,
// padded), with the length it decodes to: it is decoded once, straight into
// its final place.
type payloadText struct {
	b64 []byte // aliases the request body
	n   int    // decoded bytes
}

// payloadTextField takes the payload's base64 text without decoding it and
// computes its decoded length; a text that does not decode fails later, in
// decodeInto, with the same ErrBase64.
func payloadTextField(key string, raw json.RawMessage) (payloadText, error) {
	s, end, ok := plainString(raw, 0)
	if !ok || end != len(raw) {
		str, err := stringField(key, raw)
		if err != nil {
			return payloadText{}, err
		}
		s = []byte(str)
	}
	if len(bytes.TrimSpace(s)) == 0 {
		return payloadText{}, nil // empty; publishing refuses it
	}
	n, ok := base64Len(s)
	if !ok {
		return payloadText{}, fmt.Errorf("%w: Field `%s`: illegal base64 data", ErrBase64, key)
	}
	return payloadText{b64: s, n: n}, nil
}

// base64Len returns the length s decodes to with base64.StdEncoding if it
// decodes at all, from its length and padding alone, and false when that
// length is not a multiple of 4. A byte outside the alphabet is found by
// the decoder itself (decodeInto): a second pass over the text to find it
// first would cost as much as decoding.
func base64Len(s []byte) (int, bool) {
	if len(s)%4 != 0 {
		return 0, false
	}
	n := len(s) / 4 * 3
	for i := len(s) - 1; i >= 0 && i >= len(s)-2 && s[i] == '='; i-- {
		n--
	}
	return n, true
}

// decodeInto decodes the payload into dst, which must be p.n bytes.
func (p payloadText) decodeInto(dst []byte) error {
	n, err := base64.StdEncoding.Decode(dst, p.b64)
	if err != nil || n != len(dst) {
		return fmt.Errorf("%w: Field `payload`: decoded %d of %d bytes: %v", ErrBase64, n, len(dst), err)
	}
	return nil
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
