// Package legacy writes and reads lib-net's augData JSON envelope, the data
// of the plain lane and of header version 1 (lib-net src/types.ts
// AugmentedData, src/index.ts).
//
// Writing follows lib-types safeStringify (src/utils/functions/stringify.ts):
// object keys sorted by UTF-16 code unit, a Buffer written as
// {"value":base64,"dataType":"bb"} with value first. A tell or ask carries
// shardus-core's binary route envelope {"payload":Buffer,"route":r}
// (shardus-core src/network/index.ts tellBinary, askBinary); a reply carries
// the Buffer itself as data, which is what shardus-core's askBinary reads
// (src/p2p/Comms.ts registerInternalBinary respondWrapped, askBinary).
//
// Reading accepts every shape lib-net and shardus-core send: a Buffer as
// {"value":b64,"dataType":"bb"|"u8ab"} (lib-types typeReviver) or as Node's
// own Buffer.toJSON form {"type":"Buffer","data":[bytes]} in either key
// order (lib-net src/util/Encoding.ts falls back to JSON.stringify;
// shardus-core _extractPayloadBinary accepts it), either inside the route
// envelope or as the whole data.
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
	Timeout           float64 // ms (JavaScript numbers may be fractional); written only when HasTimeout
	HasTimeout        bool    // replies carry no timeout key (index.ts respond)
	MsgDir            string
	Route             string
	// Reply writes Payload as the whole data, as shardus-core's binary ask
	// expects a reply; otherwise data is the route envelope.
	Reply bool
	// Payload is the binary payload. On parse it is freshly allocated, or
	// nil when data is not a binary value (then Data holds the raw JSON of
	// data, which may alias the parsed input). Both have capacity equal to
	// their length.
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
		dst = AppendString(dst, a.Address)
		dst = append(dst, `,"PORT":`...)
	} else {
		dst = append(dst, `{"PORT":`...)
	}
	dst = strconv.AppendInt(dst, int64(a.Port), 10)
	dst = append(dst, `,"UUID":`...)
	dst = AppendString(dst, a.UUID)
	if a.Reply {
		dst = append(dst, `,"data":{"value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, a.Payload)
		dst = append(dst, `","dataType":"bb"},"msgDir":`...)
	} else {
		dst = append(dst, `,"data":{"payload":{"value":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, a.Payload)
		dst = append(dst, `","dataType":"bb"},"route":`...)
		dst = AppendString(dst, a.Route)
		dst = append(dst, `},"msgDir":`...)
	}
	dst = AppendString(dst, a.MsgDir)
	dst = appendInt(dst, `,"receivedTime":`, a.ReceivedTime)
	dst = appendInt(dst, `,"replyReceivedTime":`, a.ReplyReceivedTime)
	dst = appendInt(dst, `,"replyTime":`, a.ReplyTime)
	dst = appendInt(dst, `,"sendTime":`, a.SendTime)
	if a.HasTimeout {
		dst = strconv.AppendFloat(append(dst, `,"timeout":`...), a.Timeout, 'f', -1, 64)
	}
	return append(dst, '}'), Ops{JSON: 1, Base64: 1}
}

func appendInt(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// AppendString appends s as JavaScript's JSON.stringify writes it.
func AppendString(dst []byte, s string) []byte {
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

// wireAug reads augData. Numbers are read as JavaScript numbers (float64):
// Date.now() values are whole, but a timeout may be fractional.
type wireAug struct {
	UUID              string          `json:"UUID"`
	Port              float64         `json:"PORT"`
	Address           string          `json:"ADDRESS"`
	SendTime          float64         `json:"sendTime"`
	ReceivedTime      float64         `json:"receivedTime"`
	ReplyTime         float64         `json:"replyTime"`
	ReplyReceivedTime float64         `json:"replyReceivedTime"`
	Timeout           *float64        `json:"timeout"`
	MsgDir            string          `json:"msgDir"`
	Data              json.RawMessage `json:"data"`
}

// binValue is a Buffer or Uint8Array in any of its JSON forms.
type binValue struct {
	Value    *string         `json:"value"`    // lib-types: base64
	DataType string          `json:"dataType"` // lib-types: "bb" or "u8ab"
	Type     string          `json:"type"`     // Buffer.toJSON: "Buffer"
	Data     json.RawMessage `json:"data"`     // Buffer.toJSON: the bytes as an array of numbers
	b64      []byte          // value, when read by the fast reader
}

// dataShape reads data as the route envelope or as a binary value itself.
type dataShape struct {
	binValue
	Payload *binValue `json:"payload"`
	Route   *string   `json:"route"`
}

// bytes returns v's bytes, or ok false if v is not a binary value. A
// lib-types value whose base64 does not decode is an error.
func (v *binValue) bytes() (b []byte, ok bool, err error) {
	switch {
	case (v.Value != nil || v.b64 != nil) && (v.DataType == "bb" || v.DataType == "u8ab"):
		if v.b64 != nil {
			b = make([]byte, base64.StdEncoding.DecodedLen(len(v.b64)))
			var n int
			n, err = base64.StdEncoding.Decode(b, v.b64)
			b = b[:n]
		} else {
			b, err = base64.StdEncoding.DecodeString(*v.Value)
		}
		if err != nil {
			return nil, false, fmt.Errorf("%w: payload: %w", ErrBadEnvelope, err)
		}
		return slices.Clip(b), true, nil
	case v.Type == "Buffer" && len(v.Data) > 0 && v.Data[0] == '[':
		// An array of numbers decodes into []byte one byte per element;
		// one outside 0-255 fails, and the value is then not binary.
		if json.Unmarshal(v.Data, &b) != nil {
			return nil, false, nil
		}
		return slices.Clip(b), true, nil
	}
	return nil, false, nil
}

// Parse reads augData JSON. A data field holding a binary value inside the
// route envelope ({"payload":Buffer,"route":r}) or as the whole data (a
// binary reply) yields Payload and Route; any other data is left in Data.
// Buffer forms are listed in the package comment.
func Parse(b []byte) (Aug, Ops, error) {
	var w wireAug
	var d dataShape
	if scanAug(b, &w, &d) {
		return fromWire(&w, &d, Ops{JSON: 1})
	}
	return parseSlow(b)
}

// parseSlow is Parse with encoding/json.
func parseSlow(b []byte) (Aug, Ops, error) {
	var w wireAug
	ops := Ops{JSON: 1}
	if err := json.Unmarshal(b, &w); err != nil {
		return Aug{}, ops, fmt.Errorf("%w: %w", ErrBadEnvelope, err)
	}
	var d dataShape
	if len(w.Data) > 0 && w.Data[0] == '{' {
		ops.JSON++
		if json.Unmarshal(w.Data, &d) != nil { // not one of the binary shapes
			d = dataShape{}
		}
	}
	return fromWire(&w, &d, ops)
}

// fromWire builds the Aug of w and its data's shape d.
func fromWire(w *wireAug, d *dataShape, ops Ops) (Aug, Ops, error) {
	a := Aug{UUID: w.UUID, Port: int(w.Port), Address: w.Address, SendTime: int64(w.SendTime),
		ReceivedTime: int64(w.ReceivedTime), ReplyTime: int64(w.ReplyTime), ReplyReceivedTime: int64(w.ReplyReceivedTime),
		MsgDir: w.MsgDir, Data: slices.Clip(w.Data)}
	if w.Timeout != nil {
		a.Timeout, a.HasTimeout = *w.Timeout, true
	}
	v, route := &d.binValue, ""
	if d.Payload != nil {
		v = d.Payload
		if d.Route != nil {
			route = *d.Route
		}
	}
	p, ok, err := v.bytes()
	if err != nil {
		return Aug{}, ops, err
	}
	if !ok {
		return a, ops, nil
	}
	if v.Value != nil || v.b64 != nil {
		ops.Base64++
	} else {
		ops.JSON++ // the array of numbers
	}
	a.Payload, a.Binary, a.Route, a.Data = p, true, route, nil
	return a, ops, nil
}
