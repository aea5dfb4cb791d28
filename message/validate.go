package message

import (
	"errors"
	"fmt"
)

// MaxContentTopicSize is the longest content topic in bytes that a node
// relays, archives, takes from a light client or lets a filter client
// subscribe to. 14/WAKU2-MESSAGE, 23/WAKU2-TOPICS and nwaku v0.38.1 set no
// limit. Topics of 23/WAKU2-TOPICS' form /{application}/{version}/{name}/
// {encoding} are short: Status's /waku/1/0x<8 hex digits>/rfc26 is 24 bytes,
// and a name of 64 hex digits (a 32-byte hash) still keeps one under 100.
// 1024 leaves ten times that and is the bound the store-sync codec already
// puts on each topic of its payloads.
const MaxContentTopicSize = 1024

// Errors of Validate and CheckContentTopic.
var (
	// ErrEmptyContentTopic: a content topic that is empty or white space
	// only, which nwaku's REST API refuses ("Field `contentTopic` is missing
	// or empty", rest_api/endpoint/relay/types.nim) and go-waku's
	// WakuMessage.Validate refuses for relay and lightpush.
	ErrEmptyContentTopic = errors.New("message: content topic is empty or white space")
	// ErrContentTopicTooLong: a content topic over MaxContentTopicSize bytes.
	ErrContentTopicTooLong = errors.New("message: content topic over 1024 bytes")
)

// CheckContentTopic returns nil when ct may be relayed: not empty, not only
// white space (ASCII space, tab, vertical tab, CR, LF, form feed: Nim's
// isEmptyOrWhitespace, which nwaku's REST API applies) and at most
// MaxContentTopicSize bytes. Errors wrap ErrEmptyContentTopic or
// ErrContentTopicTooLong.
func CheckContentTopic(ct string) error {
	if len(ct) > MaxContentTopicSize {
		return fmt.Errorf("%w: %d bytes", ErrContentTopicTooLong, len(ct))
	}
	for i := 0; i < len(ct); i++ {
		switch ct[i] {
		case ' ', '\t', '\v', '\r', '\n', '\f':
		default:
			return nil
		}
	}
	return ErrEmptyContentTopic
}

// Validate applies the rules every message must meet to be relayed,
// whichever way it enters a node (relay from a peer, local publish, the
// REST API, lightpush v2 and v3): meta at most MaxMetaSize bytes, the
// encoding at most MaxSize bytes, and a content topic CheckContentTopic
// accepts. Decode already holds a decoded message to the first two; the
// relay applies its network policy (timestamp window) after this. Errors
// wrap ErrMetaTooLong, ErrTooLarge, ErrEmptyContentTopic or
// ErrContentTopicTooLong.
func Validate(m *Message) error {
	if len(m.Meta) > MaxMetaSize {
		return fmt.Errorf("%w: %d bytes", ErrMetaTooLong, len(m.Meta))
	}
	if n := m.Size(); n > MaxSize {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	return CheckContentTopic(m.ContentTopic)
}
