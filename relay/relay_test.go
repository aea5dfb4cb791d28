package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

const topic = "/waku/2/rs/0/0"

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

type fakeArchive struct {
	mu   sync.Mutex
	envs []*message.Envelope
}

func (a *fakeArchive) Append(_ context.Context, env *message.Envelope, done func(error)) error {
	a.mu.Lock()
	a.envs = append(a.envs, env)
	a.mu.Unlock()
	if done != nil {
		done(nil)
	}
	return nil
}

// TestRelayDecodeOnce publishes from A to B and checks that B decodes and
// hashes each message exactly once, that every handler receives the same
// envelope, and that A encodes once and hashes once.
func TestRelayDecodeOnce(t *testing.T) {
	ha, hb := newHost(t), newHost(t)
	var ca, cb message.Counters
	arch := &fakeArchive{}
	ra, err := relay.New(ha, relay.Config{Counters: &ca})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{Counters: &cb, Archive: arch})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	const n = 20
	got := make([]chan *message.Envelope, 3)
	for i := range got {
		ch := make(chan *message.Envelope, n)
		got[i] = ch
		defer rb.AddHandler(fmt.Sprint("h", i), func(env *message.Envelope) { ch <- env })()
	}
	if err := rb.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	if err := ra.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(rb.TopicPeers(topic)) > 0 && len(ra.TopicPeers(topic)) > 0 })
	sent := map[message.Hash]bool{}
	for i := range n {
		m := &message.Message{Payload: []byte(fmt.Sprintf("payload %d", i)), ContentTopic: "/test/1/relay/proto", Timestamp: int64(i + 1)}
		env, err := ra.Publish(context.Background(), topic, m)
		if err != nil {
			t.Fatal(err)
		}
		sent[env.Hash()] = true
	}
	for i := range n {
		e0 := recv(t, got[0])
		if !sent[e0.Hash()] {
			t.Fatalf("message %d: unexpected hash %s", i, e0.Hash())
		}
		if e1, e2 := recv(t, got[1]), recv(t, got[2]); e1 != e0 || e2 != e0 {
			t.Fatalf("message %d: handlers got different envelopes", i)
		}
	}
	sa, sb := ca.Snapshot(), cb.Snapshot()
	if sb.Decodes != n || sb.Hashes != n || sb.Encodes != 0 {
		t.Fatalf("receiver counters %+v, want %d decodes, %d hashes, 0 encodes", sb, n, n)
	}
	// A also receives its own publishes through its subscription: still no decode.
	if sa.Encodes != n || sa.Hashes != n || sa.Decodes != 0 {
		t.Fatalf("sender counters %+v, want %d encodes, %d hashes, 0 decodes", sa, n, n)
	}
	if len(arch.envs) != n {
		t.Fatalf("archive got %d envelopes, want %d", len(arch.envs), n)
	}
	if st := rb.Stats(); st.TotalDrops() != 0 || st.MsgIDHashes != n || st.Topics[topic].Messages != n {
		t.Fatalf("receiver stats %+v", st)
	}
}

func TestInjectRejects(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, bad := range [][]byte{{0x0a, 0x05}, {0x12, 0x00}, (&message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Meta: make([]byte, 65)}).Encode(nil)} {
		if err := harness.Inject(r, topic, bad); err == nil {
			t.Fatalf("Inject(%x) accepted", bad)
		}
	}
	if d := r.Stats().Drops[relay.DropInvalid]; d != 3 {
		t.Fatalf("invalid drops = %d, want 3", d)
	}
	if _, err := r.Publish(context.Background(), topic, &message.Message{ContentTopic: "/a/1/b/c", Meta: make([]byte, 65)}); err == nil {
		t.Fatal("publish with 65-byte meta accepted")
	}
}

func TestHandlerQueueFullCounted(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{HandlerQueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	block := make(chan struct{})
	started := make(chan struct{}, 1)
	remove := r.AddHandler("slow", func(*message.Envelope) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-block
	})
	wire := func() []byte { return (&message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c"}).Encode(nil) }
	if err := harness.Inject(r, topic, wire()); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, started, "the handler") // it holds the first envelope; the queue has room for one
	for range 3 {
		if err := harness.Inject(r, topic, wire()); err != nil {
			t.Fatal(err)
		}
	}
	close(block)
	remove()
	if d := r.Stats().Drops[relay.DropHandlerQueueFull]; d != 2 {
		t.Fatalf("handler drops = %d, want 2", d)
	}
}

func recv(t *testing.T, ch chan *message.Envelope) *message.Envelope {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a message")
		return nil
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSubscribeUnsubscribe(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Unsubscribe(topic, relay.OwnerREST); !errors.Is(err, relay.ErrNotSubscribed) {
		t.Fatalf("Unsubscribe before Subscribe = %v", err)
	}
	for range 2 {
		if err := r.Subscribe(topic, relay.OwnerREST); err != nil {
			t.Fatal(err)
		}
		if got := r.Topics(); len(got) != 1 || got[0] != topic {
			t.Fatalf("Topics = %v", got)
		}
		if err := r.Unsubscribe(topic, relay.OwnerREST); err != nil {
			t.Fatal(err)
		}
		if got := r.Topics(); len(got) != 0 {
			t.Fatalf("Topics after Unsubscribe = %v", got)
		}
	}
	if _, err := r.Publish(context.Background(), topic, &message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c"}); err != nil {
		t.Fatalf("publish after unsubscribe: %v", err)
	}
	r.Close()
	if err := r.Subscribe(topic, relay.OwnerREST); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v", err)
	}
}

// TestSubscriptionOwners: a topic is relayed while any owner needs it; one
// owner letting go leaves the others' subscription in place, an owner that
// never subscribed changes nothing, and owners are a set.
func TestSubscriptionOwners(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	subscribed := func(want ...relay.Owner) {
		t.Helper()
		if got := r.Owners(topic); !slices.Equal(got, want) {
			t.Fatalf("Owners = %v, want %v", got, want)
		}
		if got := r.Topics(); (len(want) > 0) != slices.Contains(got, topic) {
			t.Fatalf("Topics = %v with owners %v", got, want)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Subscribe(topic, relay.OwnerConfig))
	must(r.Subscribe(topic, relay.OwnerREST))
	must(r.Subscribe(topic, relay.OwnerREST)) // a set: no second count
	subscribed(relay.OwnerConfig, relay.OwnerREST)
	must(r.Unsubscribe(topic, relay.OwnerREST))
	subscribed(relay.OwnerConfig)
	if err := r.Unsubscribe(topic, relay.OwnerREST); !errors.Is(err, relay.ErrNotSubscribed) {
		t.Fatalf("second Unsubscribe by rest = %v, want ErrNotSubscribed", err)
	}
	if err := r.Unsubscribe(topic, relay.OwnerFilter); !errors.Is(err, relay.ErrNotSubscribed) {
		t.Fatalf("Unsubscribe by a non-owner = %v, want ErrNotSubscribed", err)
	}
	subscribed(relay.OwnerConfig)
	if err := r.Subscribe(topic, ""); !errors.Is(err, relay.ErrNoOwner) {
		t.Fatalf("Subscribe without owner = %v, want ErrNoOwner", err)
	}
	if err := r.Unsubscribe(topic, ""); !errors.Is(err, relay.ErrNoOwner) {
		t.Fatalf("Unsubscribe without owner = %v, want ErrNoOwner", err)
	}
	must(r.Subscribe(topic, "filter/peer-1"))
	must(r.Unsubscribe(topic, relay.OwnerConfig))
	subscribed("filter/peer-1")
	must(r.Unsubscribe(topic, "filter/peer-1"))
	subscribed()
}

// TestPublishWith: the payload fill writes lands in the published encoding,
// which decodes to the message with that payload; an error from fill
// publishes nothing.
func TestPublishWith(t *testing.T) {
	r, err := relay.New(newHost(t), relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan *message.Envelope, 2)
	defer r.AddHandler("h", func(env *message.Envelope) { got <- env })()
	if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msg := &message.Message{ContentTopic: "/a/1/b/c", Timestamp: 9, Present: message.HasTimestamp}
	fillErr := errors.New("no payload today")
	if _, err := r.PublishWith(ctx, topic, msg, 3, func([]byte) error { return fillErr }); !errors.Is(err, fillErr) {
		t.Fatalf("PublishWith with a failing fill = %v", err)
	}
	env, err := r.PublishWith(ctx, topic, msg, 3, func(p []byte) error { copy(p, "abc"); return nil })
	if err != nil {
		t.Fatal(err)
	}
	recvd := testwait.Recv(t, got, "the published message")
	want := &message.Message{Payload: []byte("abc"), ContentTopic: "/a/1/b/c", Timestamp: 9, Present: message.HasTimestamp}
	if recvd != env || !recvd.Message().Equal(want) || !bytes.Equal(recvd.Wire(), want.Encode(nil)) {
		t.Fatalf("delivered %+v (wire %x), want %+v", recvd.Message(), recvd.Wire(), want)
	}
	select {
	case e := <-got:
		t.Fatalf("a second message was delivered: %+v", e.Message())
	default:
	}
}

// TestMeshPeers meshes two relays on a topic and follows the mesh as
// gossipsub changes it: grafted after the connection, gone from the other
// side's mesh when one unsubscribes (its Leave sends PRUNE), and gone when
// the peer disconnects. The peer's score is known once it is connected.
func TestMeshPeers(t *testing.T) {
	ha, hb := newHost(t), newHost(t)
	ra, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := relay.New(hb, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	const other = "/waku/2/rs/0/7"
	for _, r := range []*relay.Relay{ra, rb} {
		for _, tp := range []string{topic, other} {
			if err := r.Subscribe(tp, relay.OwnerConfig); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ha.Connect(context.Background(), peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return slices.Equal(ra.MeshPeers(topic), []peer.ID{hb.ID()}) && slices.Equal(rb.MeshPeers(topic), []peer.ID{ha.ID()}) &&
			slices.Equal(ra.MeshPeers(other), []peer.ID{hb.ID()})
	})
	waitFor(t, func() bool { _, ok := ra.PeerScore(hb.ID()); return ok })
	if got := ra.MeshPeers("/waku/2/rs/0/3"); got != nil {
		t.Fatalf("mesh of a topic not joined: %v", got)
	}
	if err := rb.Unsubscribe(other, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ra.MeshPeers(other) == nil && rb.MeshPeers(other) == nil })
	if got := ra.MeshPeers(topic); !slices.Equal(got, []peer.ID{hb.ID()}) {
		t.Fatalf("mesh of %s after the other topic's prune: %v", topic, got)
	}
	if err := ha.Network().ClosePeer(hb.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return ra.MeshPeers(topic) == nil })
}
