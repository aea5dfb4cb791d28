package storesync

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/protowalk"
	"github.com/couriernet/courier/storesync/internal/rbsr"
)

// maxTopicLen bounds a pubsub topic in bytes, as in a payload's topic lists.
const maxTopicLen = rbsr.MaxTopicLen

// appendMessageAndTopic appends a WakuMessageAndTopic as nwaku v0.38.1
// writes it (waku_store_sync/codec.nim): pubsub topic as field 1, the
// encoded WakuMessage as field 2 (the spec has them the other way round).
// wire is written as it is, never re-encoded.
func appendMessageAndTopic(dst []byte, pubsubTopic string, wire []byte) []byte {
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, pubsubTopic)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	return protowire.AppendBytes(dst, wire)
}

// decodeMessageAndTopic reads a WakuMessageAndTopic in nwaku's field order
// or the spec's and returns the pubsub topic and the encoded WakuMessage.
// wire aliases buf, with len == cap. Which field is which is told by content: the topic is
// UTF-8 starting with '/', the message a valid WakuMessage. Errors wrap
// ErrMalformed.
func decodeMessageAndTopic(buf []byte) (pubsubTopic string, wire []byte, err error) {
	var f1, f2 []byte
	var have1, have2 bool
	r := protowalk.NewReader(buf)
	for r.Next() {
		if num := r.Num(); r.Type() == protowire.BytesType && (num == 1 || num == 2) {
			if num == 1 {
				f1, have1 = r.Bytes(), true
			} else {
				f2, have2 = r.Bytes(), true
			}
		}
	}
	if err := r.Err(); err != nil {
		switch e := err.(*protowalk.Error); {
		case e.Kind == protowalk.BadTag:
			return "", nil, fmt.Errorf("%w: transfer frame: bad tag", ErrMalformed)
		case e.Type == protowire.BytesType && (e.Num == 1 || e.Num == 2):
			return "", nil, fmt.Errorf("%w: transfer frame: truncated field %d", ErrMalformed, e.Num)
		default:
			return "", nil, fmt.Errorf("%w: transfer frame: bad field %d", ErrMalformed, e.Num)
		}
	}
	if !have1 || !have2 {
		return "", nil, fmt.Errorf("%w: transfer frame needs a pubsub topic and a message", ErrMalformed)
	}
	if isTopic(f1) && !isTopic(f2) {
		return string(f1), f2, nil
	}
	if isTopic(f2) && !isTopic(f1) {
		return string(f2), f1, nil
	}
	// Both look like topics: nwaku's order, whose message field then fails
	// to decode later with a clear error.
	return string(f1), f2, nil
}

// isTopic reports whether b looks like a pubsub topic: short UTF-8 text
// starting with '/'. An encoded WakuMessage starts with a tag byte (0x0a
// for its payload field), never '/'.
func isTopic(b []byte) bool {
	return len(b) > 0 && len(b) <= maxTopicLen && b[0] == '/' && utf8.Valid(b)
}
