package lightpush

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// fakeRelay records what it publishes and answers with a set peer count.
type fakeRelay struct {
	peers    int
	checkErr error
	pubErr   error
	got      []*message.Envelope
}

func (f *fakeRelay) Check(*message.Message) error { return f.checkErr }

func (f *fakeRelay) PublishEnvelope(_ context.Context, env *message.Envelope) (int, error) {
	if f.pubErr != nil {
		return 0, f.pubErr
	}
	f.got = append(f.got, env)
	return f.peers, nil
}

func wire(m *message.Message) []byte { return m.Encode(nil) }

func valid() []byte {
	return wire(&message.Message{Payload: []byte("hi"), ContentTopic: "/app/1/chat/proto", Timestamp: 42})
}

// TestStatusCodes checks each answer nwaku v0.38.1 gives, v3 and v2.
func TestStatusCodes(t *testing.T) {
	big := wire(&message.Message{Payload: make([]byte, message.MaxSize), ContentTopic: "/app/1/chat/proto", Timestamp: 1})
	noPayload := []byte{0x12, 0x01, 'x'}
	auto := func(ct string) (string, error) {
		if strings.HasPrefix(ct, "/app/") {
			return "/waku/2/rs/0/3", nil
		}
		return "", errors.New("bad content topic")
	}
	for _, tc := range []struct {
		name   string
		relay  fakeRelay
		auto   func(string) (string, error)
		req    Request
		code   uint32
		desc   string
		v2info string
	}{
		{"published", fakeRelay{peers: 3}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: valid()}, 200, "", "OK"},
		{"no relay peers", fakeRelay{}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: valid()}, 505, "No peers for topic, skipping publish", "not_published_to_any_peer"},
		{"too large", fakeRelay{peers: 1}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: big}, 420, "Message size exceeded maximum of 153600 bytes", ""},
		{"undecodable message", fakeRelay{peers: 1}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: noPayload}, 400, "decode_rpc_failure: message: payload field absent", ""},
		{"static sharding, no topic", fakeRelay{peers: 1}, nil, Request{Message: valid()}, 420, "Pubsub topic must be specified when static sharding is enabled", ""},
		{"autosharding picks the topic", fakeRelay{peers: 1}, auto, Request{Message: valid()}, 200, "", ""},
		{"autosharding, bad content topic", fakeRelay{peers: 1}, auto, Request{Message: wire(&message.Message{Payload: []byte("x"), ContentTopic: "nope", Timestamp: 1})}, 420, "Invalid content-topic:bad content topic", ""},
		{"empty topic", fakeRelay{peers: 1}, nil, Request{PubsubTopic: " ", HasPubsubTopic: true, Message: valid()}, 400, "topic must not be empty", ""},
		{"relay rule", fakeRelay{peers: 1, checkErr: errors.New("relay: timestamp too far from local time")}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: valid()}, 420, "relay: timestamp too far from local time", ""},
		{"publish fails", fakeRelay{pubErr: errors.New("relay: closed")}, nil, Request{PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: valid()}, 500, "relay: closed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(nil, Config{Relay: &tc.relay, Autoshard: tc.auto})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tc.req.RequestID = "r1"
			resp := s.Push(context.Background(), tc.req)
			if resp.StatusCode != tc.code || resp.StatusDesc != tc.desc || resp.RequestID != "r1" {
				t.Fatalf("v3 %d %q (id %q), want %d %q", resp.StatusCode, resp.StatusDesc, resp.RequestID, tc.code, tc.desc)
			}
			if resp.HasRelayPeerCount != (tc.code == 200) || int(resp.RelayPeerCount) != tc.relay.peers*boolInt(tc.code == 200) {
				t.Fatalf("relay peer count %v %d", resp.HasRelayPeerCount, resp.RelayPeerCount)
			}
			if tc.auto != nil && tc.code == 200 && tc.relay.got[0].PubsubTopic() != "/waku/2/rs/0/3" {
				t.Fatalf("autosharded to %q", tc.relay.got[0].PubsubTopic())
			}
			if !tc.req.HasPubsubTopic || tc.req.PubsubTopic == " " {
				return // v2 always names a topic
			}
			v2 := s.PushLegacy(context.Background(), LegacyRequest{PubsubTopic: tc.req.PubsubTopic, Message: tc.req.Message})
			want := tc.v2info
			if want == "" {
				want = tc.desc
			}
			if v2.IsSuccess != (tc.code == 200) || v2.Info != want {
				t.Fatalf("v2 %v %q, want %q", v2.IsSuccess, v2.Info, want)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDecodeErrorsOverTheWire checks the answers to requests that do not
// decode: v3 answers 400 with request id "N/A"; v2 is_success false.
func TestDecodeErrorsOverTheWire(t *testing.T) {
	s, _ := New(nil, Config{Relay: &fakeRelay{peers: 1}})
	defer s.Close()
	r := s.answerV3(context.Background(), []byte{0x0a, 0x01, 'x'})
	if r.RequestID != "N/A" || r.StatusCode != 400 || r.StatusDesc != "decode_rpc_failure: lightpush: required field absent: message" {
		t.Fatalf("v3 %+v", r)
	}
	v2 := s.answerV2(context.Background(), []byte{0x0a, 0x01, 'x'})
	if v2.RequestID != "x" || v2.Response == nil || v2.Response.IsSuccess || v2.Response.Info != "empty_request_body_failure" {
		t.Fatalf("v2 %+v", v2.Response)
	}
}

// TestPushedAsArrived checks the service path's counts: one decode and one
// hash per message, no encode, and the published envelope aliasing the
// request's bytes; a zero timestamp is filled (one encode), as nwaku does.
func TestPushedAsArrived(t *testing.T) {
	var ctr message.Counters
	fr := &fakeRelay{peers: 1}
	s, _ := New(nil, Config{Relay: fr, Counters: &ctr})
	defer s.Close()
	const n = 10
	for range n {
		w := valid()
		if r := s.Push(context.Background(), Request{RequestID: "r", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: w}); r.StatusCode != 200 {
			t.Fatal(r)
		}
		if got := fr.got[len(fr.got)-1].Wire(); &got[0] != &w[0] {
			t.Fatal("published bytes are not the request's bytes")
		}
	}
	if c := ctr.Snapshot(); c.Decodes != n || c.Hashes != n || c.Encodes != 0 {
		t.Fatalf("counters %+v, want %d decodes, %d hashes, 0 encodes", c, n, n)
	}
	zero := wire(&message.Message{Payload: []byte("x"), ContentTopic: "/app/1/chat/proto"})
	s.Push(context.Background(), Request{RequestID: "r", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: zero})
	if m := fr.got[len(fr.got)-1].Message(); m.Timestamp == 0 {
		t.Fatal("zero timestamp not filled")
	}
	if st := s.Stats(); st.PublishedAsArrived != n || st.Reencoded != 1 || st.Answers["v3"][200] != n+1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPushTopicRules checks the rules a push meets before anything is
// published, v3 and v2: a content topic message.Validate accepts (420
// otherwise, as nwaku answers a message its relay validation refuses), a
// static-shard pubsub topic (400) of the service's cluster (421
// UNSUPPORTED_PUBSUB_TOPIC). Nothing refused reaches the relay.
func TestPushTopicRules(t *testing.T) {
	msg := func(ct string) []byte {
		return wire(&message.Message{Payload: []byte("hi"), ContentTopic: ct, Timestamp: 42})
	}
	long := "/" + strings.Repeat("a", message.MaxContentTopicSize)
	for _, tc := range []struct {
		name  string
		topic string
		wire  []byte
		code  uint32
		desc  string
	}{
		{"own cluster", "/waku/2/rs/3/0", valid(), 200, ""},
		{"own cluster, last shard", "/waku/2/rs/3/1023", valid(), 200, ""},
		{"empty content topic", "/waku/2/rs/3/0", msg(""), 420, "message: content topic is empty or white space"},
		{"white space content topic", "/waku/2/rs/3/0", msg(" \t"), 420, "message: content topic is empty or white space"},
		{"content topic over 1024 bytes", "/waku/2/rs/3/0", msg(long), 420, "message: content topic over 1024 bytes: 1025 bytes"},
		{"other cluster", "/waku/2/rs/0/0", valid(), 421, "Unsupported pubsub topic: cluster 0, this node serves cluster 3"},
		{"named topic", "/waku/2/default-waku/proto", valid(), 400, "Invalid pubsub topic: 26 bytes, want /waku/2/rs/<cluster>/<shard>"},
		{"no prefix", "/waku/2/rs", valid(), 400, "Invalid pubsub topic: must start with /waku/2/rs/"},
		{"not a shard", "/waku/2/rs/3/x", valid(), 400, "Invalid pubsub topic: shard id is not a decimal number"},
		{"shard out of range", "/waku/2/rs/3/1024", valid(), 400, "Invalid pubsub topic: shard id 1024 over 1023"},
		{"200 kB topic", "/waku/2/rs/3/" + strings.Repeat("9", 200_000), valid(), 400, "Invalid pubsub topic: 200013 bytes, want /waku/2/rs/<cluster>/<shard>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := &fakeRelay{peers: 1}
			s, err := New(nil, Config{Relay: fr, ClusterID: 3})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			resp := s.Push(context.Background(), Request{RequestID: "r1", PubsubTopic: tc.topic, HasPubsubTopic: true, Message: tc.wire})
			if resp.StatusCode != tc.code || resp.StatusDesc != tc.desc {
				t.Fatalf("v3 %d %q, want %d %q", resp.StatusCode, resp.StatusDesc, tc.code, tc.desc)
			}
			v2 := s.PushLegacy(context.Background(), LegacyRequest{PubsubTopic: tc.topic, Message: tc.wire})
			if want := map[bool]string{true: "OK", false: tc.desc}[tc.code == 200]; v2.IsSuccess != (tc.code == 200) || v2.Info != want {
				t.Fatalf("v2 %v %q, want %q", v2.IsSuccess, v2.Info, want)
			}
			if published := len(fr.got); published != 2*boolInt(tc.code == 200) {
				t.Fatalf("%d messages reached the relay", published)
			}
		})
	}
}

// fakeRLN is an RLN step that answers with a set outcome and records the
// messages it was given.
type fakeRLN struct {
	attach bool // return a copy with a proof, as a Publisher does
	err    error
	proof  *rln.RateLimitProof
	got    []*message.Message
}

func (f *fakeRLN) Prepare(_ string, m *message.Message) (*message.Message, *rln.RateLimitProof, error) {
	f.got = append(f.got, m)
	if f.err != nil {
		return nil, nil, f.err
	}
	if f.attach {
		out := *m
		out.RateLimitProof, out.Present = []byte("proof bytes"), m.Present|message.HasRateLimitProof
		return &out, f.proof, nil
	}
	return m, f.proof, nil
}

// TestRLNStep checks RLN relay's step of a push as nwaku's relay push
// handler takes it (waku_lightpush/callbacks.nim): a proof attached is
// published re-encoded with the proof in the envelope, a message the
// validator accepts as it arrived with its proof, no proof to be had is
// 504 OUT_OF_RLN_PROOF with the proof's error, a refused one 420; the step
// sees the filled timestamp. v2 answers with the same texts.
func TestRLNStep(t *testing.T) {
	const limitText = "could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: 2 & nonceLimit: 2"
	withProof := wire(&message.Message{Payload: []byte("hi"), ContentTopic: "/app/1/chat/proto", Timestamp: 42, RateLimitProof: []byte("p")})
	for _, tc := range []struct {
		name     string
		rln      fakeRLN
		msg      []byte
		code     uint32
		desc     string
		asArrive bool
	}{
		{"attached", fakeRLN{attach: true, proof: &rln.RateLimitProof{}}, valid(), 200, "", false},
		{"validated", fakeRLN{proof: &rln.RateLimitProof{}}, withProof, 200, "", true},
		{"out of proofs", fakeRLN{err: &OutOfRLNProofError{Err: errors.New(limitText)}}, valid(), StatusOutOfRLNProof, limitText, false},
		{"invalid", fakeRLN{err: errors.New("RLN validation failed")}, withProof, StatusInvalidMessage, "RLN validation failed", false},
		{"zero timestamp", fakeRLN{attach: true, proof: &rln.RateLimitProof{}}, wire(&message.Message{Payload: []byte("x"), ContentTopic: "/app/1/chat/proto"}), 200, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := &fakeRelay{peers: 1}
			s, err := New(nil, Config{Relay: fr, RLN: &tc.rln})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			resp := s.Push(context.Background(), Request{RequestID: "r", PubsubTopic: "/waku/2/rs/0/0", HasPubsubTopic: true, Message: tc.msg})
			if resp.StatusCode != tc.code || resp.StatusDesc != tc.desc {
				t.Fatalf("v3 %d %q, want %d %q", resp.StatusCode, resp.StatusDesc, tc.code, tc.desc)
			}
			if len(tc.rln.got) != 1 || tc.rln.got[0].Timestamp == 0 {
				t.Fatalf("the RLN step saw %d messages, timestamp %d", len(tc.rln.got), tc.rln.got[0].Timestamp)
			}
			if tc.code != 200 {
				if len(fr.got) != 0 {
					t.Fatal("published a refused message")
				}
				if v2 := s.PushLegacy(context.Background(), LegacyRequest{PubsubTopic: "/waku/2/rs/0/0", Message: tc.msg}); v2.IsSuccess || v2.Info != tc.desc {
					t.Fatalf("v2 %v %q, want %q", v2.IsSuccess, v2.Info, tc.desc)
				}
				return
			}
			env := fr.got[0]
			if env.RateLimitProof() != tc.rln.proof {
				t.Fatal("the envelope does not carry the step's proof")
			}
			m, err := message.Decode(env.Wire(), nil)
			if err != nil || len(m.RateLimitProof) == 0 || m.Timestamp == 0 {
				t.Fatalf("published %+v, %v: want a proof and a timestamp", m, err)
			}
			if w := env.Wire(); (&w[0] == &tc.msg[0]) != tc.asArrive {
				t.Fatalf("published the request's bytes: %v, want %v", &w[0] == &tc.msg[0], tc.asArrive)
			}
			if st := s.Stats(); (st.PublishedAsArrived == 1) != tc.asArrive || (st.Reencoded == 1) == tc.asArrive {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
