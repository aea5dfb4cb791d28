package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"runtime"
	"testing"

	"github.com/couriernet/courier/message"
)

// TestParseMessageHashVector parses the spec's first hash vector
// (14/message.md) written as REST JSON and checks its deterministic hash.
func TestParseMessageHashVector(t *testing.T) {
	body := `{"payload":"AQIDBFRFU1QFBgcI","contentTopic":"/waku/2/default-content/proto",
		"timestamp":1681964442000000000,"meta":"c3VwZXItc2VjcmV0"}`
	m, err := ParseMessage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Hash("/waku/2/default-waku/proto", new(message.Counters))
	if got, want := h.String(), "64cce733fed134e83da02b02c6f689814872b1a0ac97ea56b76095c3c72bfe05"; got != want {
		t.Fatalf("hash = %s, want %s", got, want)
	}
}

func TestParseMessageFields(t *testing.T) {
	m, err := ParseMessage([]byte(`{"payload":"AQID","contentTopic":"/a/1/b/c","version":4294967295,
		"timestamp":-9223372036854775808,"meta":"","ephemeral":true,"proof":"BAU=","extra":{"x":[1,2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &message.Message{
		Payload: []byte{1, 2, 3}, ContentTopic: "/a/1/b/c", Version: 4294967295,
		Timestamp: -9223372036854775808, Meta: []byte{}, Ephemeral: true, RateLimitProof: []byte{4, 5},
		Present: message.HasVersion | message.HasTimestamp | message.HasMeta | message.HasEphemeral | message.HasRateLimitProof,
	}
	if !m.Equal(want) {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	// An absent timestamp stays 0: the parser never fills in the time.
	m, err = ParseMessage([]byte(`{"payload":"AQID","contentTopic":"/a/1/b/c"}`))
	if err != nil || m.Timestamp != 0 || m.Present != 0 {
		t.Fatalf("minimal message: %+v, %v", m, err)
	}
}

// TestParseMessageErrors holds the bodies nwaku's test_rest_relay.nim
// rejects ("Post a message with an invalid body") and a few more.
func TestParseMessageErrors(t *testing.T) {
	const p = `"payload":"VEVTVC1QQVlMT0FE"`
	const ct = `"contentTopic":"/waku/2/default-content/proto"`
	invalid := []string{
		`{` + ct + `}`,
		`{"payload":"",` + ct + `}`,
		`{"payload":"  ",` + ct + `}`,
		`{"payload":{"key":"YWFh"},` + ct + `}`,
		`{"payload":1234567890,` + ct + `}`,
		`{"payload":["YWFh"],` + ct + `}`,
		`{"payload":true,` + ct + `}`,
		`{` + p + `,` + ct + `,` + p + `}`,
		`{` + p + `}`,
		`{` + p + `,"contentTopic":""}`,
		`{` + p + `,"contentTopic":" "}`,
		`{` + p + `,"contentTopic":1234567890}`,
		`{` + p + `,` + ct + `,"timestamp":"1700000000000000000"}`,
		`{` + p + `,` + ct + `,"timestamp":1.7e18}`,
		`{` + p + `,` + ct + `,"timestamp":[1700000000000000000]}`,
		`{` + p + `,` + ct + `,"timestamp":{"time":1700000000000000000}}`,
		`{` + p + `,` + ct + `,"timestamp":null}`,
		`{` + p + `,` + ct + `,"timestamp":9223372036854775808}`,
		`{` + p + `,` + ct + `,"version":2.1}`,
		`{` + p + `,` + ct + `,"version":-1}`,
		`{` + p + `,` + ct + `,"version":4294967296}`,
		`{` + p + `,` + ct + `,"ephemeral":"true"}`,
		`{` + p + `,` + ct + `,"ephemeral":null}`,
		`{` + p + `,` + ct + `,"meta":"` + b64(65) + `"}`,
		`{` + p + `,` + ct + `} {}`,
		`[` + p + `]`,
		`{` + p + `,` + ct,
		``,
		`null`,
	}
	for _, body := range invalid {
		if _, err := ParseMessage([]byte(body)); !errors.Is(err, ErrInvalidBody) {
			t.Fatalf("ParseMessage(%s) error = %v, want ErrInvalidBody", body, err)
		}
	}
	for _, body := range []string{
		`{"payload":"Hello World!",` + ct + `}`,
		`{` + p + `,` + ct + `,"meta":"Hello World!"}`,
		`{` + p + `,` + ct + `,"proof":"AQI"}`,
	} {
		if _, err := ParseMessage([]byte(body)); !errors.Is(err, ErrBase64) {
			t.Fatalf("ParseMessage(%s) error = %v, want ErrBase64", body, err)
		}
	}
}

// TestInvalidBodyNotBuffered: an 8 MiB body that is not JSON (an
// unterminated payload string) is refused with ErrInvalidBody without
// copying it: under 1 MiB allocated, where reading it through
// json.Decoder allocated 32 MiB.
func TestInvalidBodyNotBuffered(t *testing.T) {
	body := bytes.Repeat([]byte("a"), 8<<20)
	copy(body, `{"payload":"`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := decodeMessage(body, true)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrInvalidBody) {
		t.Fatalf("error %v, want ErrInvalidBody", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("refusing an 8 MiB body allocated %d bytes, want under 1 MiB", n)
	}
}

func b64(n int) string {
	b, _ := json.Marshal(make([]byte, n))
	return string(b[1 : len(b)-1])
}

func TestNewMessageJSON(t *testing.T) {
	payload, _ := hex.DecodeString("010203045445535405060708")
	m := &message.Message{Payload: payload, ContentTopic: "/waku/2/default-content/proto", Version: 1, Timestamp: 1681964442000000000, Meta: []byte("super-secret")}
	b, err := json.Marshal(NewMessage(m))
	if err != nil {
		t.Fatal(err)
	}
	// The relay shape writes "proof" always (nwaku relay/types.nim
	// toRelayWakuMessage), the store shape only when set (store/types.nim).
	want := `{"payload":"AQIDBFRFU1QFBgcI","contentTopic":"/waku/2/default-content/proto","version":1,"timestamp":1681964442000000000,"meta":"c3VwZXItc2VjcmV0","ephemeral":false,"proof":""}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(StoreMessage(NewMessage(m)))
	if want := `{"payload":"AQIDBFRFU1QFBgcI","contentTopic":"/waku/2/default-content/proto","version":1,"timestamp":1681964442000000000,"meta":"c3VwZXItc2VjcmV0","ephemeral":false}`; string(b) != want {
		t.Fatalf("store shape: %s", b)
	}
	b, _ = json.Marshal(NewMessage(&message.Message{ContentTopic: "/a/1/b/c"}))
	if want := `{"payload":"","contentTopic":"/a/1/b/c","version":0,"timestamp":0,"ephemeral":false,"proof":""}`; string(b) != want {
		t.Fatalf("empty payload: %s", b)
	}
}

func FuzzParseMessage(f *testing.F) {
	f.Add([]byte(`{"payload":"AQID","contentTopic":"/a/1/b/c","version":1,"timestamp":5,"meta":"AQ==","ephemeral":true,"proof":"AQ=="}`))
	f.Add([]byte(`{"payload":"AQID","contentTopic":"/a/1/b/c","timestamp":1.5}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMessage(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) && !errors.Is(err, ErrBase64) {
				t.Fatalf("unwrapped error %v", err)
			}
			return
		}
		if len(m.Payload) == 0 || len(m.Meta) > message.MaxMetaSize {
			t.Fatalf("accepted %+v", m)
		}
		checkCapped(t, m)
		// The REST form parses back to the same field values.
		b, err := json.Marshal(NewMessage(m))
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseMessage(b)
		if err != nil {
			t.Fatalf("re-parse %s: %v", b, err)
		}
		again.Present = m.Present
		if !again.Equal(m) {
			t.Fatalf("re-parse %+v, want %+v", again, m)
		}
	})
}

// TestParseMessageSlicesCapped: every slice ParseMessage hands out has len
// == cap (base64 decoding leaves room for padding otherwise), on the flat
// fast path and the general parser alike.
func TestParseMessageSlicesCapped(t *testing.T) {
	for _, body := range []string{
		`{"payload":"AQI=","contentTopic":"/a/1/b/c","meta":"AQ==","proof":"AQ=="}`,
		`{"payload":"AQI=","contentTopic":"/a/1/b/c","meta":"AQ==","proof":"AQ==","unknown":{"nested":[1]}}`,
	} {
		m, err := ParseMessage([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		checkCapped(t, m)
	}
}

func checkCapped(t testing.TB, m *message.Message) {
	t.Helper()
	for name, b := range map[string][]byte{"payload": m.Payload, "meta": m.Meta, "proof": m.RateLimitProof} {
		if len(b) != cap(b) {
			t.Fatalf("%s: len %d, cap %d", name, len(b), cap(b))
		}
	}
}

// TestDecodeMessageWithoutPublishRules: DecodeMessage decodes an empty
// payload or content topic (the hash is defined for them); ParseMessage,
// for publishing, refuses them as nwaku's REST reader does.
func TestDecodeMessageWithoutPublishRules(t *testing.T) {
	for _, body := range []string{
		`{"payload":"","contentTopic":"/a/1/b/c"}`,
		`{"payload":"AQI=","contentTopic":""}`,
		`{"payload":"","contentTopic":"  ","unknown":[1]}`,
	} {
		m, err := DecodeMessage([]byte(body))
		if err != nil {
			t.Fatalf("DecodeMessage(%s): %v", body, err)
		}
		if _, err := ParseMessage([]byte(body)); !errors.Is(err, ErrInvalidBody) {
			t.Fatalf("ParseMessage(%s) = %v, want ErrInvalidBody", body, err)
		}
		checkCapped(t, m)
	}
	for _, body := range []string{`{"contentTopic":"/a/1/b/c"}`, `{"payload":""}`} {
		if _, err := DecodeMessage([]byte(body)); !errors.Is(err, ErrInvalidBody) {
			t.Fatalf("DecodeMessage(%s) without a required field = %v, want ErrInvalidBody", body, err)
		}
	}
}

// FuzzBase64Len: every text without line breaks that base64.StdEncoding
// decodes has the length base64Len gives, and decodeInto decodes exactly the
// texts the decoder does, to the same bytes.
func FuzzBase64Len(f *testing.F) {
	for _, s := range []string{"", "AQ==", "AQI=", "AQID", "A===", "AB=C", "====", "AQ", "Hello World!", "+/+/"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if bytes.ContainsAny(s, "\r\n") {
			return // the standard decoder skips line breaks; a JSON string cannot hold them raw
		}
		b, err := base64.StdEncoding.DecodeString(string(s))
		n, ok := base64Len(s)
		if err == nil && (!ok || n != len(b)) {
			t.Fatalf("base64Len(%q) = %d, %v; the decoder gives %d bytes", s, n, ok, len(b))
		}
		if !ok {
			return
		}
		dst := make([]byte, n)
		derr := (payloadText{b64: s, n: n}).decodeInto(dst)
		if (derr == nil) != (err == nil) || (derr == nil && !bytes.Equal(dst, b)) {
			t.Fatalf("decodeInto(%q) = %x, %v; the decoder gives %x, %v", s, dst, derr, b, err)
		}
		if derr != nil && !errors.Is(derr, ErrBase64) {
			t.Fatalf("decodeInto(%q) error %v does not wrap ErrBase64", s, derr)
		}
	})
}
