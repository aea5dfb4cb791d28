package message_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/couriernet/courier/message"
)

// wakuMessageDescriptor is go-waku's pb/message.proto: proto3 with the
// optional fields 3, 10, 11, 21 and 31 and timestamp as sint64.
func wakuMessageDescriptor(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	opt := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, oneof int32) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{
			Name: proto.String(name), Number: proto.Int32(num), Type: typ.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(name),
		}
		if oneof >= 0 {
			f.OneofIndex, f.Proto3Optional = proto.Int32(oneof), proto.Bool(true)
		}
		return f
	}
	b, s, u32, s64, bo := descriptorpb.FieldDescriptorProto_TYPE_BYTES, descriptorpb.FieldDescriptorProto_TYPE_STRING,
		descriptorpb.FieldDescriptorProto_TYPE_UINT32, descriptorpb.FieldDescriptorProto_TYPE_SINT64, descriptorpb.FieldDescriptorProto_TYPE_BOOL
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("waku/message/v1/message.proto"), Package: proto.String("waku.message.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("WakuMessage"),
			Field: []*descriptorpb.FieldDescriptorProto{
				opt("payload", 1, b, -1), opt("content_topic", 2, s, -1), opt("version", 3, u32, 0),
				opt("timestamp", 10, s64, 1), opt("meta", 11, b, 2), opt("rate_limit_proof", 21, b, 3), opt("ephemeral", 31, bo, 4),
			},
			OneofDecl: []*descriptorpb.OneofDescriptorProto{
				{Name: proto.String("_version")}, {Name: proto.String("_timestamp")}, {Name: proto.String("_meta")},
				{Name: proto.String("_rate_limit_proof")}, {Name: proto.String("_ephemeral")},
			},
		}},
	}
	file, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return file.Messages().Get(0)
}

// TestInteropWithProtobuf checks our encoding against google.golang.org/protobuf
// driven by go-waku's schema, both ways.
func TestInteropWithProtobuf(t *testing.T) {
	md := wakuMessageDescriptor(t)
	ours := &message.Message{
		Payload: []byte("interop"), ContentTopic: "/a/1/b/c", Version: 2, Timestamp: -1681964442000000000,
		Meta: []byte{9, 8}, RateLimitProof: []byte{7}, Ephemeral: true,
		Present: message.HasVersion | message.HasTimestamp | message.HasMeta | message.HasRateLimitProof | message.HasEphemeral,
	}
	// Ours -> protobuf.
	dm := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(ours.Encode(nil), dm); err != nil {
		t.Fatal(err)
	}
	get := func(name string) protoreflect.Value { return dm.Get(md.Fields().ByName(protoreflect.Name(name))) }
	if string(get("payload").Bytes()) != "interop" || get("content_topic").String() != "/a/1/b/c" ||
		get("version").Uint() != 2 || get("timestamp").Int() != ours.Timestamp ||
		string(get("meta").Bytes()) != "\x09\x08" || string(get("rate_limit_proof").Bytes()) != "\x07" || !get("ephemeral").Bool() {
		t.Fatalf("protobuf read %v", dm)
	}
	// Protobuf -> ours, deterministic encoding.
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(dm)
	if err != nil {
		t.Fatal(err)
	}
	back, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(ours) {
		t.Fatalf("decoded %+v, want %+v", back, ours)
	}
	// A proto3 encoder omits an empty payload: we reject that as nwaku does.
	empty := dynamicpb.NewMessage(md)
	empty.Set(md.Fields().ByName("content_topic"), protoreflect.ValueOfString("/a/1/b/c"))
	wire, _ = proto.Marshal(empty)
	if _, err := message.Decode(wire, nil); err == nil {
		t.Fatal("message without payload field accepted")
	}
}
