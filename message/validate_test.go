package message_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/couriernet/courier/message"
)

// TestCheckContentTopic checks the content topic rule every entry path
// applies: neither empty nor ASCII white space, at most 1024 bytes.
func TestCheckContentTopic(t *testing.T) {
	for _, tc := range []struct {
		name, ct string
		want     error
	}{
		{"plain", "/app/1/chat/proto", nil},
		{"not of the 23/WAKU2-TOPICS form", "chat", nil}, // nwaku relays it under static sharding
		{"empty", "", message.ErrEmptyContentTopic},
		{"white space", " \t\r\n\v\f", message.ErrEmptyContentTopic},
		{"non-ASCII space is a character", "\u00a0", nil}, // Nim's isEmptyOrWhitespace is ASCII
		{"1024 bytes", "/" + strings.Repeat("a", 1023), nil},
		{"1025 bytes", "/" + strings.Repeat("a", 1024), message.ErrContentTopicTooLong},
		{"16 kB", strings.Repeat(" ", 16000), message.ErrContentTopicTooLong},
	} {
		if err := message.CheckContentTopic(tc.ct); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestValidate checks that Validate adds the meta and size limits to the
// content topic rule.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    message.Message
		want error
	}{
		{"plain", message.Message{Payload: []byte("x"), ContentTopic: "/a/1/b/c"}, nil},
		{"empty payload", message.Message{ContentTopic: "/a/1/b/c"}, nil}, // 14/WAKU2-MESSAGE's own vectors have one
		{"empty content topic", message.Message{Payload: []byte("x")}, message.ErrEmptyContentTopic},
		{"meta of 64", message.Message{ContentTopic: "/a/1/b/c", Meta: make([]byte, 64)}, nil},
		{"meta of 65", message.Message{ContentTopic: "/a/1/b/c", Meta: make([]byte, 65)}, message.ErrMetaTooLong},
		{"over MaxSize", message.Message{ContentTopic: "/a/1/b/c", Payload: make([]byte, message.MaxSize)}, message.ErrTooLarge},
	} {
		if err := message.Validate(&tc.m); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
