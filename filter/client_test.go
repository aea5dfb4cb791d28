package filter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
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

func connect(t *testing.T, from, to host.Host) {
	t.Helper()
	if err := from.Connect(context.Background(), peer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func envelope(t *testing.T, contentTopic string, payload []byte) *message.Envelope {
	t.Helper()
	wire := (&message.Message{Payload: payload, ContentTopic: contentTopic, Timestamp: 1}).Encode(nil)
	m, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	return message.NewEnvelope(m, topic, wire, nil)
}

type light struct {
	h   host.Host
	c   *filter.Client
	ctr *message.Counters
	got chan *message.Envelope
}

func newLight(t *testing.T, service host.Host) *light {
	t.Helper()
	l := &light{h: newHost(t), ctr: new(message.Counters), got: make(chan *message.Envelope, 1024)}
	l.c = filter.NewClient(l.h, filter.ClientConfig{Counters: l.ctr, Handler: func(env *message.Envelope, _ peer.ID) { l.got <- env }})
	t.Cleanup(func() { l.c.Close() })
	connect(t, l.h, service)
	return l
}

func (l *light) next(t *testing.T) *message.Envelope {
	t.Helper()
	select {
	case env := <-l.got:
		return env
	case <-time.After(30 * time.Second):
		t.Fatal("no push within 30 s")
		return nil
	}
}

// TestClientAgainstService runs courier's client against courier's service
// over real hosts: each request type with its status code, pushes only to
// matching subscribers, the same message pushed once, and each push decoded
// once and hashed once by the client.
func TestClientAgainstService(t *testing.T) {
	sh := newHost(t)
	svc, err := filter.New(sh, filter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a, b := newLight(t, sh), newLight(t, sh)
	var se *filter.StatusError
	if err := a.c.Ping(ctx(t), sh.ID()); !errors.As(err, &se) || se.Code != filter.StatusNotFound {
		t.Fatalf("ping before subscribing: %v", err)
	}
	if err := a.c.Subscribe(ctx(t), sh.ID(), topic); !errors.As(err, &se) || se.Code != filter.StatusBadRequest {
		t.Fatalf("subscribe without content topics: %v", err)
	}
	if err := a.c.Subscribe(ctx(t), sh.ID(), topic, "/app/1/one/proto"); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Subscribe(ctx(t), sh.ID(), topic, "/app/1/one/proto", "/app/1/two/proto"); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Ping(ctx(t), sh.ID()); err != nil {
		t.Fatal(err)
	}
	one := envelope(t, "/app/1/one/proto", bytes.Repeat([]byte{1}, 1000))
	two := envelope(t, "/app/1/two/proto", []byte("two"))
	svc.Push(one)
	svc.Push(one) // the same hash again: not pushed
	svc.Push(two)
	for _, tc := range []struct {
		who  *light
		want []*message.Envelope
	}{{a, []*message.Envelope{one}}, {b, []*message.Envelope{one, two}}} {
		for _, want := range tc.want {
			got := tc.who.next(t)
			if got.Hash() != want.Hash() || got.PubsubTopic() != topic || !bytes.Equal(got.Wire(), want.Wire()) {
				t.Fatalf("got %s on %q, want %s", got.Hash(), got.PubsubTopic(), want.Hash())
			}
		}
	}
	if err := a.c.Unsubscribe(ctx(t), sh.ID(), topic, "/app/1/one/proto"); err != nil {
		t.Fatal(err)
	}
	if err := b.c.UnsubscribeAll(ctx(t), sh.ID()); err != nil {
		t.Fatal(err)
	}
	if err := b.c.UnsubscribeAll(ctx(t), sh.ID()); !errors.As(err, &se) || se.Code != filter.StatusNotFound || se.Desc != "NOT_FOUND: peer has no subscriptions" {
		t.Fatalf("second unsubscribe all: %v", err)
	}
	svc.Push(envelope(t, "/app/1/one/proto", []byte("late")))
	if len(a.got)+len(b.got) != 0 {
		t.Fatal("push after unsubscribing")
	}
	if c := b.ctr.Snapshot(); c.Decodes != 2 || c.Hashes != 2 || c.Encodes != 0 {
		t.Fatalf("client b counters %+v, want 2 decodes, 2 hashes, 0 encodes for 2 pushes", c)
	}
	st := svc.Stats()
	if st.Pushed != 3 || st.Duplicates != 1 || st.Dropped != 0 || st.Subscribers != 0 {
		t.Fatalf("service stats %+v", st)
	}
}

// TestStalledSubscriberDoesNotDelayOthers subscribes one peer that never
// reads its push stream beside three that do: the healthy ones receive every
// message, the stalled one's queue drops and the drops are counted.
func TestStalledSubscriberDoesNotDelayOthers(t *testing.T) {
	sh := newHost(t)
	svc, err := filter.New(sh, filter.Config{PushQueueSize: 4, PushTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	stalled := newHost(t)
	hold := make(chan struct{})
	defer close(hold)
	connect(t, stalled, sh)
	sc := filter.NewClient(stalled, filter.ClientConfig{})
	// Replace the client's push handler by one that never reads.
	stalled.SetStreamHandler(filter.PushProtocolID, func(st network.Stream) { <-hold; st.Reset() })
	if err := sc.Subscribe(ctx(t), sh.ID(), topic, "/app/1/x/proto"); err != nil {
		t.Fatal(err)
	}
	var healthy []*light
	for range 3 {
		l := newLight(t, sh)
		if err := l.c.Subscribe(ctx(t), sh.ID(), topic, "/app/1/x/proto"); err != nil {
			t.Fatal(err)
		}
		healthy = append(healthy, l)
	}
	const n = 60 // 60 x 64 KiB: far over what yamux's stream window holds
	payload := make([]byte, 64*1024)
	for i := range n {
		copy(payload, fmt.Sprint(i))
		env := envelope(t, "/app/1/x/proto", bytes.Clone(payload))
		svc.Push(env)
		for _, l := range healthy {
			if got := l.next(t); got.Hash() != env.Hash() {
				t.Fatalf("message %d: wrong hash", i)
			}
		}
	}
	st := svc.Stats()
	if st.Pushed < 3*n || st.Dropped == 0 {
		t.Fatalf("stats %+v: want every push to the 3 healthy peers and drops for the stalled one", st)
	}
	// Close must not wait out the stalled writer's hour-long push timeout:
	// leaving resets its stream.
	closed := make(chan struct{})
	go func() { svc.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close blocked on the stalled subscriber's write")
	}
}

// TestRateLimit: a peer over its budget is answered 429 with request id
// "N/A" and nwaku's text; another peer is not limited by it.
func TestRateLimit(t *testing.T) {
	sh := newHost(t)
	svc, err := filter.New(sh, filter.Config{RateLimit: ratelimit.Setting{Volume: 2, Period: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	a, b := newLight(t, sh), newLight(t, sh)
	for range 2 {
		if err := a.c.Subscribe(ctx(t), sh.ID(), topic, "/app/1/x/proto"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := a.c.Request(ctx(t), sh.ID(), filter.SubscribeRequest{RequestID: "r", Type: filter.SubscriberPing})
	if err != nil || resp.RequestID != "N/A" || resp.StatusCode != filter.StatusTooManyRequests || resp.StatusDesc != "filter request rejected due rate limit exceeded" {
		t.Fatalf("third request: %+v %v", resp, err)
	}
	var se *filter.StatusError
	if err := a.c.Ping(ctx(t), sh.ID()); !errors.As(err, &se) || se.Code != filter.StatusTooManyRequests {
		t.Fatalf("ping over the limit: %v", err)
	}
	if err := b.c.Subscribe(ctx(t), sh.ID(), topic, "/app/1/x/proto"); err != nil {
		t.Fatalf("another peer: %v", err)
	}
	if st := svc.Stats(); st.RateLimited != 2 {
		t.Fatalf("rate limited %d", st.RateLimited)
	}
}

// TestClientDialFailure: a service peer that is gone gives a *DialError
// naming it, matching ErrDial.
func TestClientDialFailure(t *testing.T) {
	hs, hc := newHost(t), newHost(t)
	gone := peer.AddrInfo{ID: hs.ID(), Addrs: hs.Addrs()}
	hs.Close()
	hc.Peerstore().AddAddrs(gone.ID, gone.Addrs, time.Hour)
	c := filter.NewClient(hc, filter.ClientConfig{})
	t.Cleanup(func() { c.Close() })
	err := c.Ping(ctx(t), gone.ID)
	var de *filter.DialError
	if !errors.As(err, &de) || de.Peer != gone.ID || !errors.Is(err, filter.ErrDial) {
		t.Fatalf("ping to a closed peer: %v", err)
	}
}
