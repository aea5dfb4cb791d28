package filter

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
)

const topic = "/waku/2/rs/0/0"

// clockService is a Service without a host whose clock the test moves.
func clockService(t *testing.T, cfg Config) (*Service, *time.Time) {
	t.Helper()
	cfg.setDefaults()
	s := newService(nil, cfg)
	now := time.Unix(1_700_000_000, 0)
	s.now = func() time.Time { return now }
	t.Cleanup(func() { s.Close() })
	return s, &now
}

func sub(ct ...string) SubscribeRequest {
	return SubscribeRequest{RequestID: "r", Type: Subscribe, PubsubTopic: topic, HasPubsubTopic: true, ContentTopics: ct}
}

func unsub(ct ...string) SubscribeRequest {
	r := sub(ct...)
	r.Type = Unsubscribe
	return r
}

func topics(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("/app/1/t%d/proto", i)
	}
	return out
}

// TestAnswerStatusCodes walks one peer through every request type and the
// status code and description nwaku v0.38.1 answers for each case.
func TestAnswerStatusCodes(t *testing.T) {
	s, now := clockService(t, Config{MaxPeers: 2, MaxCriteria: 3, SubscriptionTimeout: time.Minute})
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	ping := SubscribeRequest{RequestID: "r"}
	all := SubscribeRequest{RequestID: "r", Type: UnsubscribeAll}
	steps := []struct {
		name string
		p    peer.ID
		req  SubscribeRequest
		code uint32
		desc string
	}{
		{"ping without subscriptions", a, ping, 404, "NOT_FOUND: peer has no subscriptions"},
		{"unsubscribe all without subscriptions", a, all, 404, "NOT_FOUND: peer has no subscriptions"},
		{"subscribe without pubsub topic", a, SubscribeRequest{RequestID: "r", Type: Subscribe, ContentTopics: []string{"/x/1/y/proto"}}, 400, "BAD_REQUEST: pubsubTopic and contentTopics must be specified"},
		{"subscribe without content topics", a, sub(), 400, "BAD_REQUEST: pubsubTopic and contentTopics must be specified"},
		{"subscribe 101 content topics", a, sub(topics(101)...), 400, "BAD_REQUEST: exceeds maximum content topics: 100"},
		{"unsubscribe 101 content topics", a, unsub(topics(101)...), 400, "BAD_REQUEST: exceeds maximum content topics: 100"},
		{"subscribe", a, sub("/x/1/y/proto"), 200, "OK"},
		{"subscribe again, same criterion", a, sub("/x/1/y/proto"), 200, "OK"},
		{"ping", a, ping, 200, "OK"},
		{"criteria limit", a, sub(topics(3)...), 503, "SERVICE_UNAVAILABLE: peer has reached maximum number of filter criteria"},
		{"second peer", b, sub("/x/1/y/proto"), 200, "OK"},
		{"peer limit", c, sub("/x/1/y/proto"), 503, "SERVICE_UNAVAILABLE: node has reached maximum number of subscriptions: 2"},
		{"unsubscribe from a criterion nobody has", a, unsub("/nobody/1/x/proto"), 404, "NOT_FOUND: peer has no subscriptions"},
		{"unsubscribe without pubsub topic", a, SubscribeRequest{RequestID: "r", Type: Unsubscribe, ContentTopics: []string{"/x/1/y/proto"}}, 400, "BAD_REQUEST: pubsubTopic and contentTopics must be specified"},
		{"unsubscribe the last criterion", a, unsub("/x/1/y/proto"), 200, "OK"},
		{"peer without criteria is gone", a, ping, 404, "NOT_FOUND: peer has no subscriptions"},
		{"unknown type", a, SubscribeRequest{RequestID: "r", Type: 9}, 400, "BAD_REQUEST: unknown request type 9"},
		{"unsubscribe all", b, all, 200, "OK"},
		{"unsubscribe all again", b, all, 404, "NOT_FOUND: peer has no subscriptions"},
	}
	for _, st := range steps {
		resp := s.Answer(st.p, st.req)
		if resp.StatusCode != st.code || resp.StatusDesc != st.desc || resp.RequestID != "r" {
			t.Fatalf("%s: got %d %q (id %q), want %d %q", st.name, resp.StatusCode, resp.StatusDesc, resp.RequestID, st.code, st.desc)
		}
	}
	// Expiry: a subscription not refreshed within the timeout is gone.
	if r := s.Answer(a, sub("/x/1/y/proto")); r.StatusCode != 200 {
		t.Fatal(r)
	}
	*now = now.Add(time.Minute + time.Second)
	if r := s.Answer(a, ping); r.StatusCode != 404 {
		t.Fatalf("ping after expiry: %d", r.StatusCode)
	}
	st := s.Stats()
	if st.Requests["SUBSCRIBE"] != 9 || st.Requests["SUBSCRIBER_PING"] != 4 || st.Requests["UNSUBSCRIBE"] != 4 || st.Requests["UNSUBSCRIBE_ALL"] != 3 {
		t.Fatalf("request counts %v", st.Requests)
	}
}

// TestSweepAndTopics checks that expired peers are swept, that a ping keeps
// a peer, and that OnTopic reports the first and last criterion of a topic.
func TestSweepAndTopics(t *testing.T) {
	var events []string
	s, now := clockService(t, Config{SubscriptionTimeout: time.Minute, OnTopic: func(topic string, on bool) {
		events = append(events, fmt.Sprint(topic, on))
	}})
	a, b := peer.ID("a"), peer.ID("b")
	s.Answer(a, sub("/x/1/y/proto", "/x/1/z/proto"))
	s.Answer(b, sub("/x/1/y/proto"))
	other := sub("/x/1/y/proto")
	other.PubsubTopic = "/waku/2/rs/0/1"
	s.Answer(b, other)
	*now = now.Add(40 * time.Second)
	s.Answer(b, SubscribeRequest{RequestID: "p"}) // ping refreshes b only
	*now = now.Add(30 * time.Second)
	s.sweep()
	subs := s.Subscriptions()
	if len(subs) != 1 || subs[0].Peer != b || len(subs[0].Criteria) != 2 {
		t.Fatalf("after sweep: %+v", subs)
	}
	if st := s.Stats(); st.Expired != 1 || st.Subscribers != 1 || st.Criteria != 2 {
		t.Fatalf("stats %+v", st)
	}
	s.Answer(b, SubscribeRequest{RequestID: "r", Type: UnsubscribeAll})
	if len(events) == 4 {
		sort.Strings(events[2:]) // unsubscribe all leaves topics in map order
	}
	want := fmt.Sprint([]string{topic + "true", "/waku/2/rs/0/1true", topic + "false", "/waku/2/rs/0/1false"})
	if got := fmt.Sprint(events); got != want {
		t.Fatalf("OnTopic events %s, want %s", got, want)
	}
}

// TestPushMatchesAndDedups queues frames directly (no host): only peers
// whose criterion matches get the frame, every one gets the same buffer,
// a second push of the same message is skipped, and a full queue drops.
func TestPushMatchesAndDedups(t *testing.T) {
	s, _ := clockService(t, Config{PushQueueSize: 1})
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	s.Answer(a, sub("/x/1/y/proto"))
	s.Answer(b, sub("/x/1/y/proto", "/x/1/z/proto"))
	s.Answer(c, sub("/x/1/z/proto"))
	env := envelope(t, "/x/1/y/proto", "one")
	s.mu.RLock()
	qa, qb, qc := s.peers[a].queue, s.peers[b].queue, s.peers[c].queue
	s.mu.RUnlock()
	s.Push(env)
	if len(qc) != 0 {
		t.Fatal("c got a message it did not subscribe to")
	}
	fa := <-qa
	fb := <-qb
	if &fa[0] != &fb[0] {
		t.Fatal("subscribers got different buffers")
	}
	s.Push(env)
	if len(qa) != 0 || s.Stats().Duplicates != 1 {
		t.Fatalf("duplicate pushed: stats %+v", s.Stats())
	}
	s.Push(envelope(t, "/x/1/y/proto", "two"))
	s.Push(envelope(t, "/x/1/y/proto", "three"))
	if st := s.Stats(); st.Dropped != 2 || st.Messages != 3 {
		t.Fatalf("stats %+v, want 2 drops of 3 messages", st)
	}
}

func envelope(t *testing.T, contentTopic, payload string) *message.Envelope {
	t.Helper()
	wire := (&message.Message{Payload: []byte(payload), ContentTopic: contentTopic}).Encode(nil)
	m, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	return message.NewEnvelope(m, topic, wire, nil)
}

func TestSeenHashesBounded(t *testing.T) {
	c := newSeenHashes(2, time.Minute)
	now := time.Unix(0, 0)
	h := func(i byte) message.Hash { return message.Hash{i} }
	if c.check(h(1), now) || !c.check(h(1), now) {
		t.Fatal("second sighting not a duplicate")
	}
	if c.check(h(2), now) || c.check(h(3), now) {
		t.Fatal("new hashes reported seen")
	}
	if c.check(h(1), now) {
		t.Fatal("oldest hash not forgotten when full")
	}
	if len(c.at) != 2 {
		t.Fatalf("%d hashes kept, limit 2", len(c.at))
	}
	if c.check(h(3), now.Add(2*time.Minute)) {
		t.Fatal("hash older than the TTL reported seen")
	}
}
