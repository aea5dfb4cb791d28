package store

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/couriernet/courier/message"
)

func i64(v int64) *int64 { return &v }

func hashOf(b byte) message.Hash {
	var h message.Hash
	for i := range h {
		h[i] = b + byte(i)
	}
	return h
}

func fullRequest() *Request {
	c := hashOf(0xc0)
	return &Request{RequestID: "req-1", IncludeData: true, PubsubTopic: "/waku/2/rs/0/0",
		ContentTopics: []string{"/a/1/b/proto", "/a/1/c/proto"}, StartTime: i64(-5), EndTime: i64(1681964442000000000),
		Hashes: []message.Hash{hashOf(1), hashOf(2)}, Cursor: &c, Forward: true, Limit: 100}
}

// TestZeroValuesWritten: the fields nwaku's decoders require are written
// even when they hold zero values (rfc-index 13/store.md field numbers).
func TestZeroValuesWritten(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  []byte
		want string
	}{
		// request_id=1 "", include_data=2 false, pagination_forward=52 false
		{"empty request", (&Request{}).Append(nil), "0a00" + "1000" + "a00300"},
		// request_id=1 "", status_code=10 0, status_desc=11 ""
		{"empty response", (&Response{}).Append(nil), "0a00" + "5000" + "5a00"},
		{"key-value without data", (&Response{Messages: []KeyValue{{Hash: message.Hash{}}}}).Append(nil),
			"0a0050005a00" + "a201" + "22" + "0a20" + "0000000000000000000000000000000000000000000000000000000000000000"},
	} {
		if h := hex.EncodeToString(tt.got); h != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, h, tt.want)
		}
	}
}

func TestRequestAgainstSchema(t *testing.T) {
	s := schema(t)
	r := fullRequest()
	m := dyn(t, s["StoreQueryRequest"], r.Append(nil))
	get := func(name string) protoreflect.Value { return m.Get(field(m, name)) }
	if get("request_id").String() != r.RequestID || !get("include_data").Bool() ||
		get("pubsub_topic").String() != r.PubsubTopic || get("time_start").Int() != -5 ||
		get("time_end").Int() != *r.EndTime || !bytes.Equal(get("pagination_cursor").Bytes(), r.Cursor[:]) ||
		!get("pagination_forward").Bool() || get("pagination_limit").Uint() != 100 {
		t.Fatalf("reference decoder reads %v", m)
	}
	if l := get("content_topics").List(); l.Len() != 2 || l.Get(1).String() != r.ContentTopics[1] {
		t.Fatalf("content topics %v", l)
	}
	if l := get("message_hashes").List(); l.Len() != 2 || !bytes.Equal(l.Get(1).Bytes(), r.Hashes[1][:]) {
		t.Fatalf("hashes %v", l)
	}
	// A query without options writes only the three fields nwaku requires.
	m = dyn(t, s["StoreQueryRequest"], (&Request{}).Append(nil))
	var set []string
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		set = append(set, string(fd.Name()))
		return true
	})
	slices.Sort(set)
	if want := []string{"include_data", "pagination_forward", "request_id"}; !reflect.DeepEqual(set, want) {
		t.Fatalf("empty request sets %v, want %v", set, want)
	}
}

func TestRequestFromReference(t *testing.T) {
	s := schema(t)
	want := fullRequest()
	m := dynamicpb.NewMessage(s["StoreQueryRequest"])
	set := func(name string, v protoreflect.Value) { m.Set(field(m, name), v) }
	set("request_id", protoreflect.ValueOfString(want.RequestID))
	set("include_data", protoreflect.ValueOfBool(true))
	set("pubsub_topic", protoreflect.ValueOfString(want.PubsubTopic))
	ct := m.Mutable(field(m, "content_topics")).List()
	for _, c := range want.ContentTopics {
		ct.Append(protoreflect.ValueOfString(c))
	}
	set("time_start", protoreflect.ValueOfInt64(*want.StartTime))
	set("time_end", protoreflect.ValueOfInt64(*want.EndTime))
	hs := m.Mutable(field(m, "message_hashes")).List()
	for _, h := range want.Hashes {
		hs.Append(protoreflect.ValueOfBytes(h[:]))
	}
	set("pagination_cursor", protoreflect.ValueOfBytes(want.Cursor[:]))
	set("pagination_forward", protoreflect.ValueOfBool(true))
	set("pagination_limit", protoreflect.ValueOfUint64(want.Limit))
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func testMessage(payload string, ts int64) (*message.Message, []byte) {
	m := &message.Message{Payload: []byte(payload), ContentTopic: "/a/1/b/proto", Timestamp: ts, Meta: []byte("m"),
		Present: message.HasTimestamp | message.HasMeta}
	return m, m.Encode(nil)
}

func TestResponseAgainstSchema(t *testing.T) {
	s := schema(t)
	_, wire := testMessage("hello", 42)
	c := hashOf(9)
	r := &Response{RequestID: "req-1", StatusCode: 200, StatusDesc: "OK", Cursor: &c, Messages: []KeyValue{
		{Hash: hashOf(1), Wire: wire, PubsubTopic: "/waku/2/rs/0/0"},
		{Hash: hashOf(2)},
	}}
	b := r.Append(nil)
	if len(b) != r.size() {
		t.Fatalf("Size %d, Append wrote %d", r.size(), len(b))
	}
	m := dyn(t, s["StoreQueryResponse"], b)
	get := func(name string) protoreflect.Value { return m.Get(field(m, name)) }
	if get("request_id").String() != "req-1" || get("status_code").Uint() != 200 || get("status_desc").String() != "OK" ||
		!bytes.Equal(get("pagination_cursor").Bytes(), c[:]) {
		t.Fatalf("reference decoder reads %v", m)
	}
	l := get("messages").List()
	if l.Len() != 2 {
		t.Fatalf("%d messages", l.Len())
	}
	kv := l.Get(0).Message()
	wm := kv.Get(field(kv, "message")).Message()
	if !bytes.Equal(kv.Get(field(kv, "message_hash")).Bytes(), r.Messages[0].Hash[:]) ||
		kv.Get(field(kv, "pubsub_topic")).String() != "/waku/2/rs/0/0" ||
		string(wm.Get(field(wm, "payload")).Bytes()) != "hello" || wm.Get(field(wm, "timestamp")).Int() != 42 {
		t.Fatalf("first key-value reads %v", kv)
	}
	kv = l.Get(1).Message()
	if kv.Has(field(kv, "message")) || kv.Has(field(kv, "pubsub_topic")) {
		t.Fatalf("key-value without data has %v", kv)
	}
}

func TestResponseFromReference(t *testing.T) {
	s := schema(t)
	want, wire := testMessage("payload bytes", 7)
	m := dynamicpb.NewMessage(s["StoreQueryResponse"])
	m.Set(field(m, "request_id"), protoreflect.ValueOfString("r"))
	m.Set(field(m, "status_code"), protoreflect.ValueOfUint32(200))
	m.Set(field(m, "status_desc"), protoreflect.ValueOfString("OK"))
	list := m.Mutable(field(m, "messages")).List()
	for i, withData := range []bool{true, false, true} {
		kv := list.NewElement().Message()
		h := hashOf(byte(i))
		kv.Set(field(kv, "message_hash"), protoreflect.ValueOfBytes(h[:]))
		if withData {
			wm := dynamicpb.NewMessage(s["WakuMessage"])
			if err := proto.Unmarshal(wire, wm); err != nil {
				t.Fatal(err)
			}
			kv.Set(field(kv, "message"), protoreflect.ValueOfMessage(wm))
			if i == 0 {
				kv.Set(field(kv, "pubsub_topic"), protoreflect.ValueOfString("/waku/2/rs/0/1"))
			}
		}
		list.Append(protoreflect.ValueOfMessage(kv))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var c message.Counters
	got, err := decodeResponse(b, &c)
	if err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "r" || got.StatusCode != 200 || got.StatusDesc != "OK" || got.Cursor != nil || len(got.Messages) != 3 {
		t.Fatalf("got %+v", got)
	}
	kv := got.Messages[0]
	if kv.Hash != hashOf(0) || kv.PubsubTopic != "/waku/2/rs/0/1" || !kv.Message.Equal(want) || !bytes.Equal(kv.Wire, wire) {
		t.Fatalf("first key-value %+v", kv)
	}
	// A message without its pubsub topic is dropped, as nwaku's decoder
	// keeps the two only together.
	for _, kv := range got.Messages[1:] {
		if kv.Wire != nil || kv.Message != nil || kv.PubsubTopic != "" {
			t.Fatalf("key-value %x: %+v", kv.Hash, kv)
		}
	}
	if d := c.Snapshot().Decodes; d != 1 {
		t.Fatalf("%d decodes, want 1", d)
	}
}

// TestDecodeRequestNwakuRules: what nwaku's decoder accepts and refuses
// (waku_store/rpc_codec.nim), with its error names.
func TestDecodeRequestNwakuRules(t *testing.T) {
	id := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "x")
	with := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{id}, parts...), nil) }
	bytesField := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	short := hashOf(5)
	var padded message.Hash
	copy(padded[:], short[:20])
	h6 := hashOf(6)
	long := append(h6[:], 1, 2, 3)
	for _, tt := range []struct {
		name    string
		in      []byte
		want    *Request
		wantErr string
	}{
		{"no request id", nil, nil, "MissingRequiredField request_id"},
		{"empty request id", []byte{0x0a, 0x00}, &Request{}, ""},
		{"short hash padded", with(bytesField(20, short[:20])), &Request{RequestID: "x", Hashes: []message.Hash{padded}}, ""},
		{"long hash truncated", with(bytesField(20, long)), &Request{RequestID: "x", Hashes: []message.Hash{hashOf(6)}}, ""},
		{"short cursor padded", with(bytesField(51, short[:20])), &Request{RequestID: "x", Cursor: &padded}, ""},
		{"unknown field skipped", with(bytesField(50, []byte("reserved")), protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)),
			&Request{RequestID: "x"}, ""},
		{"last value wins", with(protowire.AppendVarint(protowire.AppendTag(nil, 53, protowire.VarintType), 5),
			protowire.AppendVarint(protowire.AppendTag(nil, 53, protowire.VarintType), 9)), &Request{RequestID: "x", Limit: 9}, ""},
		{"wrong wire type", with(protowire.AppendVarint(protowire.AppendTag(nil, 10, protowire.VarintType), 1)), nil, "BadWireType"},
		{"truncated field", with([]byte{0x52, 0x05, 'a'}), nil, "MessageIncomplete"},
		{"bad tag", with([]byte{0xff}), nil, "VarintDecode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest(tt.in)
			if tt.wantErr != "" {
				var de *decodeError
				if !errors.As(err, &de) || de.name != tt.wantErr || !errors.Is(err, ErrMalformed) {
					t.Fatalf("err %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	kvNoHash := protowire.AppendBytes(protowire.AppendTag(nil, 20, protowire.BytesType),
		protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "t"))
	badMsg := (&Response{Messages: []KeyValue{{Hash: hashOf(1), Wire: []byte{0x0a, 0x00}, PubsubTopic: "t"}}}).Append(nil)
	for _, tt := range []struct {
		name string
		in   []byte
		want error
	}{
		{"key-value without hash", kvNoHash, ErrMalformed},
		{"message without content topic", badMsg, message.ErrMissingContentTopic},
		{"truncated", []byte{0x0a, 0x05}, ErrMalformed},
	} {
		if _, err := decodeResponse(tt.in, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add(fullRequest().Append(nil))
	f.Add((&Request{}).Append(nil))
	f.Add([]byte{0x0a, 0x01, 'x', 0xa2, 0x01, 0x03, 1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := DecodeRequest(in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := DecodeRequest(r.Append(nil))
		if err != nil || !reflect.DeepEqual(normalize(again), normalize(r)) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, r)
		}
	})
}

// normalize maps what encoding cannot tell apart (an empty pubsub topic is
// not written) to one form.
func normalize(r *Request) *Request {
	c := *r
	if len(c.ContentTopics) == 0 {
		c.ContentTopics = nil
	}
	if len(c.Hashes) == 0 {
		c.Hashes = nil
	}
	return &c
}

func FuzzDecodeResponse(f *testing.F) {
	_, wire := testMessage("p", 1)
	c := hashOf(3)
	f.Add((&Response{RequestID: "r", StatusCode: 200, StatusDesc: "OK", Cursor: &c,
		Messages: []KeyValue{{Hash: hashOf(1), Wire: wire, PubsubTopic: "t"}, {Hash: hashOf(2)}}}).Append(nil))
	f.Add((&Response{}).Append(nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeResponse(in, new(message.Counters))
		if err != nil {
			return
		}
		b := r.Append(nil)
		if len(b) != r.size() {
			t.Fatalf("Size %d, Append wrote %d", r.size(), len(b))
		}
		again, err := decodeResponse(b, new(message.Counters))
		if err != nil || again.RequestID != r.RequestID || again.StatusCode != r.StatusCode ||
			len(again.Messages) != len(r.Messages) || (again.Cursor == nil) != (r.Cursor == nil) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, r)
		}
		for i := range r.Messages {
			if again.Messages[i].Hash != r.Messages[i].Hash || !bytes.Equal(again.Messages[i].Wire, r.Messages[i].Wire) {
				t.Fatalf("key-value %d differs", i)
			}
		}
	})
}
