package store

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// schema builds the messages of rfc-index 13/store.md and 14/message.md
// (package waku.store.v3) for google.golang.org/protobuf, the reference
// implementation the codec is checked against. Written as proto2 so that
// every field has presence; the wire encoding is the same as proto3's.
func schema(t *testing.T) map[string]protoreflect.MessageDescriptor {
	t.Helper()
	type f struct {
		name string
		num  int32
		typ  descriptorpb.FieldDescriptorProto_Type
		rep  bool
		msg  string
	}
	const (
		str    = descriptorpb.FieldDescriptorProto_TYPE_STRING
		byt    = descriptorpb.FieldDescriptorProto_TYPE_BYTES
		boo    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
		u32    = descriptorpb.FieldDescriptorProto_TYPE_UINT32
		u64    = descriptorpb.FieldDescriptorProto_TYPE_UINT64
		s64    = descriptorpb.FieldDescriptorProto_TYPE_SINT64
		msgTyp = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	msgs := []struct {
		name   string
		fields []f
	}{
		{"WakuMessage", []f{{"payload", 1, byt, false, ""}, {"content_topic", 2, str, false, ""},
			{"version", 3, u32, false, ""}, {"timestamp", 10, s64, false, ""}, {"meta", 11, byt, false, ""},
			{"rate_limit_proof", 21, byt, false, ""}, {"ephemeral", 31, boo, false, ""}}},
		{"WakuMessageKeyValue", []f{{"message_hash", 1, byt, false, ""}, {"message", 2, msgTyp, false, ".waku.store.v3.WakuMessage"},
			{"pubsub_topic", 3, str, false, ""}}},
		{"StoreQueryRequest", []f{{"request_id", 1, str, false, ""}, {"include_data", 2, boo, false, ""},
			{"pubsub_topic", 10, str, false, ""}, {"content_topics", 11, str, true, ""},
			{"time_start", 12, s64, false, ""}, {"time_end", 13, s64, false, ""},
			{"message_hashes", 20, byt, true, ""}, {"pagination_cursor", 51, byt, false, ""},
			{"pagination_forward", 52, boo, false, ""}, {"pagination_limit", 53, u64, false, ""}}},
		{"StoreQueryResponse", []f{{"request_id", 1, str, false, ""}, {"status_code", 10, u32, false, ""},
			{"status_desc", 11, str, false, ""}, {"messages", 20, msgTyp, true, ".waku.store.v3.WakuMessageKeyValue"},
			{"pagination_cursor", 51, byt, false, ""}}},
	}
	fd := &descriptorpb.FileDescriptorProto{Name: proto.String("storev3.proto"), Package: proto.String("waku.store.v3"),
		Syntax: proto.String("proto2")}
	for _, m := range msgs {
		dp := &descriptorpb.DescriptorProto{Name: proto.String(m.name)}
		for _, x := range m.fields {
			label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
			if x.rep {
				label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
			}
			fp := &descriptorpb.FieldDescriptorProto{Name: proto.String(x.name), Number: proto.Int32(x.num),
				Type: x.typ.Enum(), Label: label.Enum()}
			if x.msg != "" {
				fp.TypeName = proto.String(x.msg)
			}
			dp.Field = append(dp.Field, fp)
		}
		fd.MessageType = append(fd.MessageType, dp)
	}
	file, err := protodesc.NewFile(fd, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]protoreflect.MessageDescriptor{}
	for i := 0; i < file.Messages().Len(); i++ {
		out[string(file.Messages().Get(i).Name())] = file.Messages().Get(i)
	}
	return out
}

// dyn unmarshals b into a dynamic message of descriptor d.
func dyn(t *testing.T, d protoreflect.MessageDescriptor, b []byte) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(d)
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatalf("reference decoder refuses the encoding: %v", err)
	}
	return m
}

func field(m protoreflect.Message, name string) protoreflect.FieldDescriptor {
	return m.Descriptor().Fields().ByName(protoreflect.Name(name))
}
