// Package legacy writes and reads lib-net's augData JSON envelope, the data
// of the plain lane and of header version 1 (specs/libnet.md sections 4-5).
//
// Writing follows lib-types safeStringify (src/utils/functions/stringify.ts):
// object keys sorted by UTF-16 code unit, a Buffer written as
// {"value":base64,"dataType":"bb"} with value first. A binary payload
// travels as shardus-core's binary route envelope {payload, route}
// (specs/libnet.md section 6).
package legacy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// ErrBadEnvelope reports augData JSON that cannot be read.
var ErrBadEnvelope = errors.New("libnet: bad legacy envelope")

// Aug is lib-net's augData (src/types.ts AugmentedData). Times are Unix
// milliseconds, as Date.now() gives them.
type Aug struct {
	UUID              string // 36-char UUID text, the header uuid
	Port              int    // the sender's listen port; replies go there
	Address           string // omitted when empty (undefined in JS)
	SendTime          int64
	ReceivedTime      int64
	ReplyTime         int64
	ReplyReceivedTime int64
	Timeout           int64 // ms; written only when HasTimeout
	HasTimeout        bool  // replies carry no timeout key (index.ts respond)
	MsgDir            string
	Route             string
	// Payload is the binary payload. On parse it is freshly allocated, or
	// nil when data is not a binary route envelope (then Data holds a copy
	// of the raw JSON of data). Both have capacity equal to their length.
	Payload []byte
	Binary  bool
	Data    []byte
}

// Ops counts the encoding work a call did, for the base64/JSON counters.
type Ops struct{ JSON, Base64 int }

// Append appends a's JSON to dst with its payload as a "bb" binary value.
func Append(dst []byte, a *Aug) ([]byte, Ops) {
	if a.Address != "" {
		dst = append(dst, `{"ADDRESS":`...)
		dst = appendString(dst, a.Address)
		dst = append(dst, `,"PORT":`...)
	} else {
		dst = append(dst, `{"PORT":`...)
	}
	dst = strconv.AppendInt(dst, int64(a.Port), 10)
	dst = append(dst, `,"UUID":`...)
	dst = appendString(dst, a.UUID)
	dst = append(dst, `,"data":{"payload":{"value":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, a.Payload)
	dst = append(dst, `","dataType":"bb"},"route":`...)
	dst = appendString(dst, a.Route)
	dst = append(dst, `},"msgDir":`...)
	dst = appendString(dst, a.MsgDir)
	dst = appendInt(dst, `,"receivedTime":`, a.ReceivedTime)
	dst = appendInt(dst, `,"replyReceivedTime":`, a.ReplyReceivedTime)
	dst = appendInt(dst, `,"replyTime":`, a.ReplyTime)
	dst = appendInt(dst, `,"sendTime":`, a.SendTime)
	if a.HasTimeout {
		dst = appendInt(dst, `,"timeout":`, a.Timeout)
	}
	return append(dst, '}'), Ops{JSON: 1, Base64: 1}
}

func appendInt(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// appendString writes s as JavaScript's JSON.stringify does.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

type wireAug struct {
	UUID              string          `json:"UUID"`
	Port              int             `json:"PORT"`
	Address           string          `json:"ADDRESS"`
	SendTime          int64           `json:"sendTime"`
	ReceivedTime      int64           `json:"receivedTime"`
	ReplyTime         int64           `json:"replyTime"`
	ReplyReceivedTime int64           `json:"replyReceivedTime"`
	Timeout           *int64          `json:"timeout"`
	MsgDir            string          `json:"msgDir"`
	Data              json.RawMessage `json:"data"`
}

type binValue struct {
	Value    *string `json:"value"`
	DataType string  `json:"dataType"`
}

type routeEnvelope struct {
	Payload *binValue `json:"payload"`
	Route   string    `json:"route"`
}

// Parse reads augData JSON. A data field of the form
// {"payload":{"value":b64,"dataType":"bb"|"u8ab"},"route":r} yields Payload
// and Route (lib-types typeReviver); any other data is left in Data.
func Parse(b []byte) (Aug, Ops, error) {
	var w wireAug
	ops := Ops{JSON: 1}
	if err := json.Unmarshal(b, &w); err != nil {
		return Aug{}, ops, fmt.Errorf("%w: %w", ErrBadEnvelope, err)
	}
	a := Aug{UUID: w.UUID, Port: w.Port, Address: w.Address, SendTime: w.SendTime,
		ReceivedTime: w.ReceivedTime, ReplyTime: w.ReplyTime, ReplyReceivedTime: w.ReplyReceivedTime,
		MsgDir: w.MsgDir, Data: slices.Clip(w.Data)}
	if w.Timeout != nil {
		a.Timeout, a.HasTimeout = *w.Timeout, true
	}
	if len(w.Data) == 0 || w.Data[0] != '{' {
		return a, ops, nil
	}
	var env routeEnvelope
	ops.JSON++
	if json.Unmarshal(w.Data, &env) != nil || env.Payload == nil || env.Payload.Value == nil ||
		(env.Payload.DataType != "bb" && env.Payload.DataType != "u8ab") {
		return a, ops, nil
	}
	ops.Base64++
	p, err := base64.StdEncoding.DecodeString(*env.Payload.Value)
	if err != nil {
		return Aug{}, ops, fmt.Errorf("%w: payload: %w", ErrBadEnvelope, err)
	}
	a.Payload, a.Binary, a.Route, a.Data = slices.Clip(p), true, env.Route, nil
	return a, ops, nil
}
