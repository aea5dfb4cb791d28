// Package message implements the Waku message (14/WAKU2-MESSAGE): the
// WakuMessage codec, the deterministic message hash and the Envelope that
// carries one decoded message through a node.
//
// # Decode once, hash once
//
// Decode parses the wire bytes with google.golang.org/protobuf/encoding/protowire
// and aliases them: the Payload, Meta and RateLimitProof slices and the
// ContentTopic string of the returned Message point into the input. The
// caller hands the input over to the Message and must not modify it
// afterwards. NewEnvelope binds message, pubsub topic and wire bytes into
// one immutable value that every consumer receives by pointer; its
// deterministic message hash is computed at most once, on first use.
//
// # Counting
//
// Every call of Decode, Encode and the hash adds to a Counters value, so the
// counts the benchmark and the metrics report are the calls that happened.
// Each node owns one Counters; a nil *Counters counts nothing.
//
// # Limits
//
// An encoded message is at most MaxSize (153600) bytes and its meta at most
// MaxMetaSize (64) bytes; the payload and content topic fields must be
// present (nwaku waku_core/message/{codec,message,default_values}.nim).
// Decode enforces these. To be relayed, whichever way it enters a node, a
// message must also pass Validate: a content topic that is not empty or
// white space (nwaku's REST rule, go-waku's WakuMessage.Validate) and at
// most MaxContentTopicSize (1024) bytes, a bound of this package since
// nwaku sets none (see MaxContentTopicSize for where the number comes
// from).
package message
