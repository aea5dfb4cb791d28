package rlnrelay

import (
	"context"
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

const relayTopic = "/waku/2/rs/0/0"

func newHost(t testing.TB) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestRelayWithRLN runs the validator as B's relay.Config.RLN, with A
// (no RLN) publishing the golden messages and some broken ones to B over
// gossipsub: B delivers exactly the valid ones, each with its verified
// proof in the envelope, decodes and verifies each message once, counts
// every drop under its reason, and A's score on B falls below zero.
func TestRelayWithRLN(t *testing.T) {
	ha, hb := newHost(t), newHost(t)
	v, _ := newTestValidator(t, nil)
	var cb message.Counters
	ra, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{RLN: v, Counters: &cb})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	got := make(chan *message.Envelope, 64)
	defer rb.AddHandler("test", func(env *message.Envelope) { got <- env })()
	for _, r := range []*relay.Relay{ra, rb} {
		if err := r.Subscribe(relayTopic, relay.OwnerConfig); err != nil {
			t.Fatal(err)
		}
	}
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the peers on the topic", func() bool { return len(rb.TopicPeers(relayTopic)) > 0 && len(ra.TopicPeers(relayTopic)) > 0 })

	noProof := *goldenMsg(t, "b11")
	noProof.RateLimitProof, noProof.Present = nil, noProof.Present&^message.HasRateLimitProof
	badPayload := *goldenMsg(t, "b12")
	badPayload.Payload = []byte("not what was proven")
	sends := []struct {
		m    *message.Message
		want Reason
	}{
		{goldenMsg(t, "a0"), Valid},
		{goldenMsg(t, "a0-spam"), ReasonSpam},
		{&noProof, ReasonNoProof},
		{&badPayload, ReasonProof},
		{goldenMsg(t, "other-id"), ReasonRLNIdentifier},
	}
	const valid = 10
	for i := range valid {
		sends = append(sends, struct {
			m    *message.Message
			want Reason
		}{goldenMsg(t, fmt.Sprintf("b%02d", i)), Valid})
	}
	// gossipsub validates concurrently, so either of A's two messages with
	// id 0 may be the one accepted and the other the spam.
	pair := map[string]bool{"A's message 0": true, "A's second message with id 0": true}
	wantValid := map[string]bool{}
	for _, s := range sends {
		if _, err := ra.Publish(context.Background(), relayTopic, s.m); err != nil {
			t.Fatal(err)
		}
		if s.want == Valid || s.want == ReasonSpam {
			wantValid[string(s.m.Payload)] = true
		}
	}
	for range valid + 1 {
		env := testwait.Recv(t, got, "a valid message on B")
		payload := string(env.Message().Payload)
		if !wantValid[payload] {
			t.Fatalf("B delivered %q", payload)
		}
		delete(wantValid, payload)
		if pair[payload] {
			for other := range pair {
				delete(wantValid, other)
			}
		}
		p := env.RateLimitProof()
		if p == nil {
			t.Fatal("envelope without its proof")
		}
		if want := decodeProof(t, env.Message()); *p != *want {
			t.Fatalf("envelope proof %+v, want the message's %+v", p, want)
		}
	}
	testwait.Until(t, "B's count of every message", func() bool {
		var n uint64
		for _, c := range v.Stats().Reasons {
			n += c
		}
		return n == uint64(len(sends))
	})
	s := v.Stats()
	for _, r := range []Reason{ReasonSpam, ReasonNoProof, ReasonProof, ReasonRLNIdentifier} {
		if s.Reasons[r] != 1 {
			t.Errorf("%v counted %d times, want 1", r, s.Reasons[r])
		}
	}
	if s.Reasons[Valid] != valid+1 || s.ValidByTopic[relayTopic] != valid+1 {
		t.Errorf("valid: %d, on the topic %d, want %d", s.Reasons[Valid], s.ValidByTopic[relayTopic], valid+1)
	}
	// One verification per message that reached it: all but the one with
	// no proof.
	if s.Verifications != uint64(len(sends)-1) {
		t.Errorf("%d verifications for %d messages", s.Verifications, len(sends))
	}
	if d := cb.Snapshot().Decodes; d != uint64(len(sends)) {
		t.Errorf("B decoded %d times for %d messages", d, len(sends))
	}
	if d := rb.Stats().Drops[relay.DropRLN]; d != 4 {
		t.Errorf("relay counted %d RLN drops, want 4", d)
	}
	testwait.Until(t, "A's score on B below zero", func() bool {
		score, ok := rb.PeerScore(ha.ID())
		return ok && score < 0
	})
	select {
	case env := <-got:
		t.Fatalf("B delivered %q as well", env.Message().Payload)
	default:
	}
}

// TestInjectWithRLN: the relay's receive path without the network
// (harness.Inject) carries the proof into the envelope its handlers get.
func TestInjectWithRLN(t *testing.T) {
	v, _ := newTestValidator(t, nil)
	r, err := relay.New(newHost(t), relay.Config{RLN: v})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan *message.Envelope, 1)
	defer r.AddHandler("test", func(env *message.Envelope) { got <- env })()
	m := goldenMsg(t, "b20")
	if err := harness.Inject(r, relayTopic, m.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	if p := (<-got).RateLimitProof(); p == nil || *p != *decodeProof(t, m) {
		t.Fatalf("injected envelope's proof %v", p)
	}
	if err := harness.Inject(r, relayTopic, m.Encode(nil)); err == nil {
		t.Fatal("the same message injected twice was accepted")
	}
}
