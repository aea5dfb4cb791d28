package relay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// TestContentTopicRule: a message whose content topic message.Validate
// refuses is Ignored when it arrives from a peer (counted as
// invalid_content_topic, not archived, not handed on) and refused when
// published locally, with ErrInvalid.
func TestContentTopicRule(t *testing.T) {
	arch := &fakeArchive{}
	r, err := relay.New(newHost(t), relay.Config{Archive: arch})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bad := []struct {
		ct   string
		want error
	}{
		{"", message.ErrEmptyContentTopic},
		{" \t", message.ErrEmptyContentTopic},
		{"/" + strings.Repeat("a", message.MaxContentTopicSize), message.ErrContentTopicTooLong},
	}
	for _, b := range bad {
		m := &message.Message{Payload: []byte("x"), ContentTopic: b.ct, Timestamp: 1}
		if err := harness.Inject(r, topic, m.Encode(nil)); !errors.Is(err, relay.ErrInvalid) {
			t.Errorf("Inject with content topic of %d bytes: %v", len(b.ct), err)
		}
		if _, err := r.Publish(context.Background(), topic, m); !errors.Is(err, relay.ErrInvalid) || !errors.Is(err, b.want) {
			t.Errorf("Publish with content topic of %d bytes: %v, want %v", len(b.ct), err, b.want)
		}
		if _, err := r.PublishWith(context.Background(), topic, m, 1, func(p []byte) error { p[0] = 'x'; return nil }); !errors.Is(err, b.want) {
			t.Errorf("PublishWith with content topic of %d bytes: %v, want %v", len(b.ct), err, b.want)
		}
	}
	st := r.Stats()
	if st.Drops[relay.DropContentTopic] != uint64(len(bad)) || st.Drops[relay.DropInvalid] != 0 {
		t.Fatalf("drops %v, want %d invalid_content_topic", st.Drops, len(bad))
	}
	good := &message.Message{Payload: []byte("x"), ContentTopic: "/" + strings.Repeat("a", message.MaxContentTopicSize-1), Timestamp: 1}
	if err := harness.Inject(r, topic, good.Encode(nil)); err != nil {
		t.Fatalf("1024-byte content topic: %v", err)
	}
	arch.mu.Lock()
	defer arch.mu.Unlock()
	if len(arch.envs) != 1 || arch.envs[0].Message().ContentTopic != good.ContentTopic {
		t.Fatalf("archived %d envelopes, want the valid one only", len(arch.envs))
	}
}

// TestPublishEnvelopeJoinsNoTopicForNobody: PublishEnvelope on a topic the
// relay has not joined and no peer follows returns 0 peers and joins
// nothing (no topic, validator or traffic figures left behind); once a
// peer follows the topic it joins and publishes to it.
func TestPublishEnvelopeJoinsNoTopicForNobody(t *testing.T) {
	ha, hb := newHost(t), newHost(t)
	ra, err := relay.New(ha, relay.Config{PeerTopics: func(t string) bool { return strings.HasPrefix(t, "/waku/2/rs/0/") }})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	envelope := func(tp string) *message.Envelope {
		m := &message.Message{Payload: []byte("x"), ContentTopic: "/a/1/b/c", Timestamp: 1}
		return message.NewEnvelope(m, tp, m.Encode(nil), nil)
	}
	for i := range 50 {
		tp := fmt.Sprintf("/hostile/%d/%s", i, strings.Repeat("x", 100*i))
		if n, err := ra.PublishEnvelope(context.Background(), envelope(tp)); n != 0 || err != nil {
			t.Fatalf("publish to nobody: %d peers, %v", n, err)
		}
	}
	if st := ra.Stats(); len(st.Topics) != 0 {
		t.Fatalf("%d topics joined by publishes to nobody", len(st.Topics))
	}
	const shard7 = "/waku/2/rs/0/7"
	if err := rb.Subscribe(shard7, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	got := make(chan *message.Envelope, 1)
	defer rb.AddHandler("h", func(env *message.Envelope) { got <- env })()
	waitFor(t, func() bool { return len(ra.TopicPeers(shard7)) == 1 })
	n, err := ra.PublishEnvelope(context.Background(), envelope(shard7))
	if n != 1 || err != nil {
		t.Fatalf("publish to a followed topic: %d peers, %v", n, err)
	}
	recv(t, got)
	if st := ra.Stats(); len(st.Topics) != 1 {
		t.Fatalf("topics after the publish: %v", st.Topics)
	}
	ra.Close()
	if _, err := ra.PublishEnvelope(context.Background(), envelope(shard7)); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
