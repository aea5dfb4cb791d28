package lightpush

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

func TestRequestGolden(t *testing.T) {
	r := Request{RequestID: "id", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: []byte{0x0a, 0x00, 0x12, 0x00}}
	// 0a 02 "id" | a2 01 0e "/waku/2/rs/0/0" | aa 01 04 0a00 1200
	want := "0a026964" + "a2010e2f77616b752f322f72732f302f30" + "aa01040a001200"
	if got := hex.EncodeToString(r.Append(nil)); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	back, err := decodeRequest(r.Append(nil))
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if _, err := decodeRequest([]byte{0x0a, 0x00}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("no message: %v", err)
	}
	if _, err := decodeRequest([]byte{0xaa, 0x01, 0x00}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("no request id: %v", err)
	}
}

// TestResponseRequiredFields checks the fields nwaku's decoders require are
// written even when zero: v3 request_id and status_code; v2 is_success.
func TestResponseRequiredFields(t *testing.T) {
	r := Response{}
	if got := hex.EncodeToString(r.append(nil)); got != "0a005000" {
		t.Fatalf("empty v3 response %s", got)
	}
	r = Response{RequestID: "x", StatusCode: 200, RelayPeerCount: 0, HasRelayPeerCount: true}
	if got := hex.EncodeToString(r.append(nil)); got != "0a0178"+"50c801"+"6000" {
		t.Fatalf("v3 success with 0 peers %s", got)
	}
	back, err := decodeResponse(r.append(nil))
	if err != nil || back != r {
		t.Fatalf("round trip %+v %v", back, err)
	}
	v2 := LegacyRPC{RequestID: "x", Response: &LegacyResponse{IsSuccess: false, Info: ""}}
	// 0a 01 "x" | 1a 04 (08 00 | 12 00): is_success false is written.
	if got := hex.EncodeToString(v2.Append(nil)); got != "0a0178"+"1a0408001200" {
		t.Fatalf("v2 refusal %s", got)
	}
	dec, err := decodeLegacyRPC(v2.Append(nil))
	if err != nil || dec.Response == nil || dec.Response.IsSuccess || dec.Request != nil {
		t.Fatalf("v2 round trip %+v %v", dec, err)
	}
	if _, err := decodeLegacyRPC([]byte{0x0a, 0x00, 0x1a, 0x02, 0x12, 0x00}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("v2 response without is_success: %v", err)
	}
	if _, err := decodeLegacyRPC([]byte{0x0a, 0x00, 0x12, 0x02, 0x12, 0x00}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("v2 request without pubsub topic: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	r := Request{RequestID: "id", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: []byte{0x0a, 0x00, 0x12, 0x00}}
	f.Add(r.Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequest(b)
		if err != nil {
			return
		}
		if back, err := decodeRequest(r.Append(nil)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", r, back, err)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	r := Response{RequestID: "id", StatusCode: 505, StatusDesc: "No peers for topic, skipping publish"}
	f.Add(r.append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err != nil {
			return
		}
		if back, err := decodeResponse(r.append(nil)); err != nil || back != r {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", r, back, err)
		}
	})
}

func FuzzDecodeLegacyRPC(f *testing.F) {
	r := LegacyRPC{RequestID: "id", Request: &LegacyRequest{PubsubTopic: "/waku/2/rs/0/0", Message: []byte{0x0a, 0x00, 0x12, 0x00}}}
	f.Add(r.Append(nil))
	f.Add((&LegacyRPC{RequestID: "id", Response: &LegacyResponse{Info: "OK", IsSuccess: true}}).Append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeLegacyRPC(b)
		if err != nil {
			return
		}
		if back, err := decodeLegacyRPC(r.Append(nil)); err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", r, back, err)
		}
	})
}

// TestRequestFrame checks that the client's in-place encoding is the frame
// of Request.Append with the message encoded on its own.
func TestRequestFrame(t *testing.T) {
	msg := &message.Message{Payload: []byte("hello"), ContentTopic: "/a/1/b/proto", Timestamp: 3}
	for _, req := range []Request{{RequestID: "id"}, {RequestID: "id", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true}} {
		want := req
		want.Message = msg.Encode(nil)
		if got, w := appendRequestFrame(nil, &req, msg, nil), lpframe.Append(nil, want.Append(nil)); !bytes.Equal(got, w) {
			t.Fatalf("frame %x, want %x", got, w)
		}
	}
}
