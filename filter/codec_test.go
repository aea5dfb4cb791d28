package filter

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

func TestSubscribeRequestGolden(t *testing.T) {
	r := SubscribeRequest{RequestID: "id", Type: Subscribe, PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, ContentTopics: []string{"/a/1/b/proto", "/c/1/d/proto"}}
	// 0a 02 "id" | 10 01 | 52 0e "/waku/2/rs/0/0" | 5a 0c "/a/1/b/proto" | 5a 0c "/c/1/d/proto"
	want := "0a026964" + "1001" + "520e2f77616b752f322f72732f302f30" +
		"5a0c2f612f312f622f70726f746f" + "5a0c2f632f312f642f70726f746f"
	if got := hex.EncodeToString(r.Append(nil)); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
	back, err := decodeSubscribeRequest(r.Append(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %+v, want %+v", back, r)
	}
}

func TestSubscribeRequestDecodeRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		want SubscribeRequest
		err  error
	}{
		{"type absent is ping", "0a0131", SubscribeRequest{RequestID: "1"}, nil},
		{"unknown field skipped", "0a01317801", SubscribeRequest{RequestID: "1"}, nil},
		{"unsubscribe all", "0a01311003", SubscribeRequest{RequestID: "1", Type: UnsubscribeAll}, nil},
		{"empty pubsub topic is present", "0a01315200", SubscribeRequest{RequestID: "1", HasPubsubTopic: true}, nil},
		{"request id absent", "1001", SubscribeRequest{}, ErrMissingField},
		{"truncated", "0a05", SubscribeRequest{}, ErrMalformed},
		{"wrong wire type", "0801", SubscribeRequest{}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			got, err := decodeSubscribeRequest(b)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSubscribeResponseWritesEveryField checks that zero values are written:
// nwaku's decoder requires request_id and status_code.
func TestSubscribeResponseWritesEveryField(t *testing.T) {
	r := SubscribeResponse{}
	if got, want := hex.EncodeToString(r.append(nil)), "0a0050005a00"; got != want {
		t.Fatalf("empty response %s, want %s", got, want)
	}
	r = SubscribeResponse{RequestID: "x", StatusCode: 404, StatusDesc: notFound}
	back, err := DecodeSubscribeResponse(r.append(nil))
	if err != nil || back != r {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if _, err := DecodeSubscribeResponse([]byte{0x0a, 0}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("no status code: %v", err)
	}
}

// TestPushFrame builds a push around encoded bytes and reads it back the way
// a client does: the WakuMessage bytes come back unchanged.
func TestPushFrame(t *testing.T) {
	m := &message.Message{Payload: []byte("hello"), ContentTopic: "/a/1/b/proto", Timestamp: 7, Present: message.HasTimestamp}
	wire := m.Encode(nil)
	for _, topic := range []string{"/waku/2/rs/0/0", ""} {
		frame := AppendPushFrame(nil, topic, wire)
		if len(frame) != pushFrameSize(topic, wire) {
			t.Fatalf("size %d, PushFrameSize %d", len(frame), pushFrameSize(topic, wire))
		}
		body, err := lpframe.Read(bytes.NewReader(frame), MaxPushSize)
		if err != nil {
			t.Fatal(err)
		}
		// pubsub_topic (field 2) is written even when empty.
		if !bytes.Contains(body[len(body)-2-len(topic):], append([]byte{0x12, byte(len(topic))}, topic...)) {
			t.Fatalf("pubsub_topic not at the end: %x", body)
		}
		p, err := DecodePush(body)
		if err != nil {
			t.Fatal(err)
		}
		if p.PubsubTopic != topic || !bytes.Equal(p.Wire, wire) {
			t.Fatalf("push %+v", p)
		}
		got, err := message.Decode(p.Wire, nil)
		if err != nil || !got.Equal(m) {
			t.Fatalf("message %+v %v", got, err)
		}
	}
	if _, err := DecodePush([]byte{0x0a, 0}); !errors.Is(err, ErrMissingField) {
		t.Fatalf("push without pubsub topic: %v", err)
	}
}

func FuzzDecodeSubscribeRequest(f *testing.F) {
	r := SubscribeRequest{RequestID: "id", Type: Subscribe, PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, ContentTopics: []string{"/a/1/b/proto"}}
	f.Add(r.Append(nil))
	f.Add([]byte{0x0a, 0x01, 0x31})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeSubscribeRequest(b)
		if err != nil {
			return
		}
		back, err := decodeSubscribeRequest(r.Append(nil))
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", r, back, err)
		}
	})
}

func FuzzDecodeSubscribeResponse(f *testing.F) {
	r := SubscribeResponse{RequestID: "id", StatusCode: 200, StatusDesc: "OK"}
	f.Add(r.append(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeSubscribeResponse(b)
		if err != nil {
			return
		}
		if back, err := DecodeSubscribeResponse(r.append(nil)); err != nil || back != r {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", r, back, err)
		}
	})
}

func FuzzDecodePush(f *testing.F) {
	wire := (&message.Message{Payload: []byte("x"), ContentTopic: "/a/1/b/proto"}).Encode(nil)
	frame := AppendPushFrame(nil, "/waku/2/rs/0/0", wire)
	f.Add(frame[1:])
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePush(b)
		if err != nil {
			return
		}
		frame := AppendPushFrame(nil, p.PubsubTopic, p.Wire)
		body, err := lpframe.Read(bytes.NewReader(frame), len(frame))
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodePush(body)
		if err != nil || back.PubsubTopic != p.PubsubTopic || !bytes.Equal(back.Wire, p.Wire) {
			t.Fatalf("re-encoding changed %+v to %+v (%v)", p, back, err)
		}
	})
}
