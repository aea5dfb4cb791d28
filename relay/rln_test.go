package relay_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rln"
)

// barrierRLN is a MessageValidator that holds each call until another is
// running at the same time (or a second has passed), and records the
// most calls it saw at once.
type barrierRLN struct {
	mu       sync.Mutex
	inflight int
	max      int
	calls    int
}

func (b *barrierRLN) ValidateMessage(_ string, m *message.Message) (*rln.RateLimitProof, pubsub.ValidationResult) {
	b.mu.Lock()
	b.calls++
	b.inflight++
	b.max = max(b.max, b.inflight)
	deadline := time.Now().Add(time.Second)
	for b.inflight < 2 && time.Now().Before(deadline) {
		b.mu.Unlock()
		time.Sleep(time.Millisecond)
		b.mu.Lock()
	}
	b.inflight--
	b.mu.Unlock()
	var p rln.RateLimitProof
	copy(p.Proof[:], m.Payload)
	return &p, pubsub.ValidationAccept
}

// TestRLNValidatorRunsConcurrently: gossipsub runs the relay's topic
// validator, and so Config.RLN, on several workers at once (one per CPU)
// for messages from one peer, so proof verification is not serialised;
// and the proof Config.RLN returns rides in the delivered envelope.
func TestRLNValidatorRunsConcurrently(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: gossipsub starts one validation worker")
	}
	ha, hb := newHost(t), newHost(t)
	b := &barrierRLN{}
	ra, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{RLN: b})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	const n = 8
	got := make(chan *message.Envelope, n)
	defer rb.AddHandler("test", func(env *message.Envelope) { got <- env })()
	for _, r := range []*relay.Relay{ra, rb} {
		if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
			t.Fatal(err)
		}
	}
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(rb.TopicPeers(topic)) > 0 && len(ra.TopicPeers(topic)) > 0 })
	for i := range n {
		m := &message.Message{Payload: []byte(fmt.Sprintf("payload %d", i)), ContentTopic: "/test/1/rln/proto", Timestamp: int64(i + 1)}
		if _, err := ra.Publish(context.Background(), topic, m); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		env := testwait.Recv(t, got, "a delivered message")
		p := env.RateLimitProof()
		if p == nil || string(p.Proof[:len(env.Message().Payload)]) != string(env.Message().Payload) {
			t.Fatalf("envelope carries proof %v", p)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls != n || b.max < 2 {
		t.Fatalf("%d calls, at most %d at once; want %d calls, 2 or more at once", b.calls, b.max, n)
	}
}

// TestRLNDropsCounted: a message Config.RLN does not accept is dropped
// and counted as DropRLN, with no envelope.
func TestRLNDropsCounted(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{RLN: rejectAll{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := &message.Message{Payload: []byte{1}, ContentTopic: "/test/1/rln/proto"}
	if err := harness.Inject(r, topic, m.Encode(nil)); err == nil {
		t.Fatal("accepted")
	}
	if d := r.Stats().Drops[relay.DropRLN]; d != 1 {
		t.Fatalf("DropRLN %d, want 1", d)
	}
}

type rejectAll struct{}

func (rejectAll) ValidateMessage(string, *message.Message) (*rln.RateLimitProof, pubsub.ValidationResult) {
	return nil, pubsub.ValidationReject
}
