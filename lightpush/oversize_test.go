package lightpush

import (
	"context"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

const oversizeTopic = "/waku/2/rs/0/0"

func testHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestOversizedRequestAnswered: a request over MaxRequestSize (a message of
// 300 kB) is answered as nwaku answers it, which reads requests of any size
// and refuses the message in its relay: v3 INVALID_MESSAGE with the
// request's id, v2 is_success false, both "Message size exceeded maximum
// of 153600 bytes". Nothing is published, and the stream is answered, not
// reset.
func TestOversizedRequestAnswered(t *testing.T) {
	server, client := testHost(t), testHost(t)
	fr := &fakeRelay{peers: 1}
	s, err := New(server, Config{Relay: fr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := client.Connect(context.Background(), peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}); err != nil {
		t.Fatal(err)
	}
	big := wire(&message.Message{Payload: make([]byte, 300_000), ContentTopic: "/app/1/chat/proto", Timestamp: 1})
	exchange := func(proto protocol.ID, req []byte) []byte {
		t.Helper()
		st, err := client.NewStream(context.Background(), server.ID(), proto)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := lpframe.Write(st, req); err != nil {
			t.Fatal(err)
		}
		resp, err := lpframe.Read(st, MaxResponseSize)
		if err != nil {
			t.Fatalf("%s: no answer: %v", proto, err)
		}
		return resp
	}
	const want = "Message size exceeded maximum of 153600 bytes"
	v3 := exchange(ProtocolID, (&Request{RequestID: "big-1", PubsubTopic: oversizeTopic, HasPubsubTopic: true, Message: big}).Append(nil))
	if r, err := decodeResponse(v3); err != nil || r.RequestID != "big-1" || r.StatusCode != StatusInvalidMessage || r.StatusDesc != want {
		t.Fatalf("v3 answer %+v, %v", r, err)
	}
	v2 := exchange(LegacyProtocolID, (&LegacyRPC{RequestID: "big-2", Request: &LegacyRequest{PubsubTopic: oversizeTopic, Message: big}}).Append(nil))
	if r, err := decodeLegacyRPC(v2); err != nil || r.RequestID != "big-2" || r.Response == nil || r.Response.IsSuccess || r.Response.Info != want {
		t.Fatalf("v2 answer %+v, %v", r, err)
	}
	st := s.Stats()
	if len(fr.got) != 0 || st.Answers["v3"][StatusInvalidMessage] != 1 || st.Answers["v2"][StatusInvalidMessage] != 1 || st.LegacyFailures[want] != 1 || st.Unreadable != 0 {
		t.Fatalf("published %d; stats %+v", len(fr.got), st)
	}
}

func TestHeadRequestID(t *testing.T) {
	req := (&Request{RequestID: "abc", PubsubTopic: oversizeTopic, HasPubsubTopic: true, Message: valid()}).Append(nil)
	for _, tc := range []struct {
		head []byte
		want string
	}{
		{req, "abc"},
		{req[:3], "N/A"}, // the id cut short
		{nil, "N/A"},
		{[]byte{0xff}, "N/A"},
		{protowire.AppendString(protowire.AppendTag(nil, 20, protowire.BytesType), oversizeTopic), "N/A"},
		{protowire.AppendString(protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 5), 1, protowire.BytesType), "later"), "later"},
	} {
		if got := headRequestID(tc.head); got != tc.want {
			t.Errorf("headRequestID(%x) = %q, want %q", tc.head, got, tc.want)
		}
	}
}
