package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMessageHashEmptyPayload: "courier message hash" hashes whatever the
// codec decodes, an empty payload included: the 14/WAKU2-MESSAGE vector
// with an empty payload, and nwaku's (tests/waku_core/test_message_digest.nim).
func TestMessageHashEmptyPayload(t *testing.T) {
	const msg = `{"payload":"","contentTopic":"/waku/2/default-content/proto","timestamp":1681964442000000000,"meta":"c3VwZXItc2VjcmV0"}`
	for _, tc := range []struct{ topic, want string }{
		{"/waku/2/default-waku/proto", "483ea950cb63f9b9d6926b262bb36194d3f40a0463ce8446228350bd44e96de4"},
		{"/waku/2/rs/0/0", "0f6448cc23b2db6c696aa6ab4b693eff4cf3549ff346fe1dbeb281697396a09f"},
	} {
		var out bytes.Buffer
		if err := messageHash([]string{"hash", "--pubsub-topic", tc.topic}, strings.NewReader(msg), &out); err != nil {
			t.Fatalf("%s: %v", tc.topic, err)
		}
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Fatalf("%s: hash %s, want %s", tc.topic, got, tc.want)
		}
	}
}
