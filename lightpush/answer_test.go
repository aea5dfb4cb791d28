package lightpush_test

import (
	"errors"
	"testing"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
)

// answerWith makes h answer every request of proto with answer (nil:
// reset the stream once the request is read).
func answerWith(h host.Host, proto protocol.ID, answer []byte) {
	h.SetStreamHandler(proto, func(st network.Stream) {
		if _, err := lpframe.Read(st, lightpush.MaxRequestSize); err != nil || answer == nil {
			st.Reset()
			return
		}
		lpframe.Write(st, answer)
		st.Close()
	})
}

// v3Answer is a LightPushResponse with request id id and status code.
func v3Answer(id string, code uint64) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, id)
	b = protowire.AppendTag(b, 10, protowire.VarintType)
	return protowire.AppendVarint(b, code)
}

// TestClientAnswerFailures: the errors a push gets from a service peer that
// answers with nothing usable, each apart as nwaku's clients tell them
// (waku_lightpush/client.nim, waku_lightpush_legacy/client.nim
// sendPushRequest): no answer read, an answer to another request id (a
// TOO_MANY_REQUESTS answer with "N/A" passes), an answer that does not
// decode, a v2 PushRPC without its response, and a v2 refusal without info
// ("unknown failure").
func TestClientAnswerFailures(t *testing.T) {
	hs, hc := newHost(t), newHost(t)
	connect(t, hc, hs)
	client := lightpush.NewClient(hc, lightpush.ClientConfig{})
	msg := &message.Message{Payload: []byte("x"), ContentTopic: "/a/1/b/proto"}
	for _, tc := range []struct {
		name   string
		answer []byte
		want   error
	}{
		{"reset", nil, lightpush.ErrNoResponse},
		{"other id", v3Answer("someone-else", 200), lightpush.ErrRequestIDMismatch},
		{"other id 503", v3Answer("N/A", 503), lightpush.ErrRequestIDMismatch},
		{"not protobuf", []byte{0xff, 0xff}, lightpush.ErrMalformed},
	} {
		answerWith(hs, lightpush.ProtocolID, tc.answer)
		if _, err := client.Push(ctx(t), hs.ID(), topic, msg); !errors.Is(err, tc.want) {
			t.Errorf("v3 %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	answerWith(hs, lightpush.ProtocolID, v3Answer("N/A", 429))
	if resp, err := client.Push(ctx(t), hs.ID(), topic, msg); err != nil || resp.StatusCode != lightpush.StatusTooManyRequests {
		t.Errorf("v3 TOO_MANY_REQUESTS with N/A: %+v %v", resp, err)
	}

	answerWith(hs, lightpush.LegacyProtocolID, nil)
	if err := client.PushLegacy(ctx(t), hs.ID(), topic, msg); !errors.Is(err, lightpush.ErrNoResponse) {
		t.Errorf("v2 reset: %v", err)
	}
	answerWith(hs, lightpush.LegacyProtocolID, (&lightpush.LegacyRPC{RequestID: "1"}).Append(nil))
	if err := client.PushLegacy(ctx(t), hs.ID(), topic, msg); !errors.Is(err, lightpush.ErrEmptyResponse) {
		t.Errorf("v2 without response: %v", err)
	}
	answerWith(hs, lightpush.LegacyProtocolID, (&lightpush.LegacyRPC{RequestID: "1", Response: &lightpush.LegacyResponse{}}).Append(nil))
	var se *lightpush.StatusError
	if err := client.PushLegacy(ctx(t), hs.ID(), topic, msg); !errors.As(err, &se) || se.Desc != "unknown failure" {
		t.Errorf("v2 refusal without info: %v", err)
	}
}
