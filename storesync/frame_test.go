package storesync

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
)

func TestMessageAndTopic(t *testing.T) {
	m := &message.Message{Payload: []byte("hi"), ContentTopic: "/app/1/chat/proto", Timestamp: 5}
	wire := m.Encode(nil)
	topic := "/waku/2/rs/0/0"
	got := appendMessageAndTopic(nil, topic, wire)
	// nwaku's order: field 1 (0x0a) the topic, field 2 (0x12) the message.
	want := append(append([]byte{0x0a, byte(len(topic))}, topic...), append([]byte{0x12, byte(len(wire))}, wire...)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
	// The spec's order: message as field 1, topic as field 2.
	spec := append(append([]byte{0x0a, byte(len(wire))}, wire...), append([]byte{0x12, byte(len(topic))}, topic...)...)
	for name, b := range map[string][]byte{"nwaku order": got, "spec order": spec} {
		gotTopic, gotWire, err := decodeMessageAndTopic(b)
		if err != nil || gotTopic != topic || !bytes.Equal(gotWire, wire) {
			t.Errorf("%s: got %q %x %v", name, gotTopic, gotWire, err)
		}
	}
	for _, b := range [][]byte{nil, got[:5], want[:2+len(topic)], {0x0a, 0x80}} {
		if _, _, err := decodeMessageAndTopic(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("decodeMessageAndTopic(%x) err = %v, want ErrMalformed", b, err)
		}
	}
}

func FuzzDecodeMessageAndTopic(f *testing.F) {
	m := &message.Message{Payload: []byte("hi"), ContentTopic: "/a/1/b/c"}
	f.Add(appendMessageAndTopic(nil, "/waku/2/rs/0/0", m.Encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		topic, wire, err := decodeMessageAndTopic(b)
		if err != nil {
			return
		}
		if len(wire) > len(b) || len(topic) > len(b) {
			t.Fatalf("decoded more than the input")
		}
		if len(wire) != cap(wire) {
			t.Fatalf("wire len %d, cap %d", len(wire), cap(wire))
		}
	})
}

// TestMessageAndTopicWireCapped: the wire DecodeMessageAndTopic returns
// has len == cap, so an append to it cannot overwrite the frame (here: the
// topic field that follows it in the spec's order).
func TestMessageAndTopicWireCapped(t *testing.T) {
	m := &message.Message{Payload: []byte("hi"), ContentTopic: "/a/1/b/c"}
	enc := m.Encode(nil)
	frame := appendField(nil, 1, enc)
	frame = appendField(frame, 2, []byte("/waku/2/rs/0/0"))
	topic, wire, err := decodeMessageAndTopic(frame)
	if err != nil || topic != "/waku/2/rs/0/0" || !bytes.Equal(wire, enc) {
		t.Fatalf("DecodeMessageAndTopic = %q, %x, %v", topic, wire, err)
	}
	if len(wire) != cap(wire) {
		t.Fatalf("wire len %d, cap %d", len(wire), cap(wire))
	}
}

func appendField(dst []byte, num protowire.Number, v []byte) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, v)
}
