package lightpush_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/lightpush"
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

func connect(t *testing.T, from, to host.Host) {
	t.Helper()
	if err := from.Connect(context.Background(), peer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

func newRelay(t *testing.T, h host.Host, ctr *message.Counters) *relay.Relay {
	t.Helper()
	r, err := relay.New(h, relay.Config{Counters: ctr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	return r
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestClientThroughServiceToRelay pushes from a light client to service
// node A with v3 and v2; relay node B receives the exact bytes the client
// encoded. A decodes and hashes each message once and encodes nothing. A
// node without relay peers answers 505 (v2: not_published_to_any_peer).
func TestClientThroughServiceToRelay(t *testing.T) {
	ha, hb, hc := newHost(t), newHost(t), newHost(t)
	var ca message.Counters
	ra := newRelay(t, ha, &ca)
	svc, err := lightpush.New(ha, lightpush.Config{Relay: ra, Counters: &ca})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	client := lightpush.NewClient(hc, lightpush.ClientConfig{})
	connect(t, hc, ha)

	msg := &message.Message{Payload: []byte("alone"), ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano()}
	resp, err := client.Push(ctx(t), ha.ID(), topic, msg)
	if err != nil {
		t.Fatal(err)
	}
	var se *lightpush.StatusError
	if !errors.As(resp.Err(), &se) || se.Code != lightpush.StatusNoPeersToRelay || se.Desc != "No peers for topic, skipping publish" {
		t.Fatalf("without relay peers: %+v", resp)
	}
	if err := client.PushLegacy(ctx(t), ha.ID(), topic, msg); !errors.As(err, &se) || se.Desc != "not_published_to_any_peer" {
		t.Fatalf("v2 without relay peers: %v", err)
	}

	rb := newRelay(t, hb, nil)
	got := make(chan *message.Envelope, 16)
	defer rb.AddHandler("test", func(env *message.Envelope) { got <- env })()
	connect(t, ha, hb)
	deadline := time.Now().Add(30 * time.Second)
	for len(ra.TopicPeers(topic)) == 0 || len(rb.TopicPeers(topic)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("relay mesh not formed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := ca.Snapshot()
	const n = 5
	var sent [][]byte
	for i := range n {
		m := &message.Message{Payload: []byte{byte(i), 1, 2, 3}, ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano()}
		sent = append(sent, m.Encode(nil))
		if i%2 == 0 {
			resp, err := client.Push(ctx(t), ha.ID(), topic, m)
			if err != nil || resp.Err() != nil || resp.RelayPeerCount != 1 {
				t.Fatalf("v3 push %d: %+v %v", i, resp, err)
			}
		} else if err := client.PushLegacy(ctx(t), ha.ID(), topic, m); err != nil {
			t.Fatalf("v2 push %d: %v", i, err)
		}
	}
	// B validates on several goroutines, so the order may change: match the
	// bytes as a set.
	want := map[string]bool{}
	for _, w := range sent {
		want[string(w)] = true
	}
	for i := range n {
		select {
		case env := <-got:
			if !want[string(env.Wire())] {
				t.Fatalf("B got bytes the client did not send: %x", env.Wire())
			}
			delete(want, string(env.Wire()))
		case <-ctx(t).Done():
			t.Fatalf("%d of %d messages relayed", i, n)
		}
	}
	if d := ca.Snapshot().Sub(before); d.Decodes != n || d.Hashes != n || d.Encodes != 0 {
		t.Fatalf("service node counts for %d pushes: %+v; want %d decodes, %d hashes, 0 encodes", n, d, n, n)
	}
	if st := svc.Stats(); st.Answers["v3"][505] != 1 || st.Answers["v2"][505] != 1 || st.Answers["v3"][200] != 3 || st.Answers["v2"][200] != 2 {
		t.Fatalf("answers %v", st.Answers)
	}
}

// TestRateLimit: requests over the budget are answered 429 (v3) and
// TOO_MANY_REQUESTS (v2), request id "N/A", without being read.
func TestRateLimit(t *testing.T) {
	ha, hc := newHost(t), newHost(t)
	ra := newRelay(t, ha, nil)
	svc, err := lightpush.New(ha, lightpush.Config{Relay: ra, RateLimit: ratelimit.Setting{Volume: 1, Period: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	client := lightpush.NewClient(hc, lightpush.ClientConfig{})
	connect(t, hc, ha)
	msg := &message.Message{Payload: []byte("x"), ContentTopic: "/app/1/chat/proto", Timestamp: 1}
	// The limiter's buckets for a 1-per-hour setting: the global one starts
	// with 1 token, the peer's with trunc(0.75*1*2) = 1.
	if resp, err := client.Push(ctx(t), ha.ID(), topic, msg); err != nil || resp.StatusCode != lightpush.StatusNoPeersToRelay {
		t.Fatalf("first push: %+v %v", resp, err)
	}
	resp, err := client.Push(ctx(t), ha.ID(), topic, msg)
	if err != nil || resp.RequestID != "N/A" || resp.StatusCode != lightpush.StatusTooManyRequests || resp.StatusDesc != "Request rejected due to too many requests" {
		t.Fatalf("second push: %+v %v", resp, err)
	}
	client.PushLegacy(ctx(t), ha.ID(), topic, msg) // v2 has a limiter of its own: its first request passes
	var se *lightpush.StatusError
	if err := client.PushLegacy(ctx(t), ha.ID(), topic, msg); !errors.As(err, &se) || se.Desc != "TOO_MANY_REQUESTS" {
		t.Fatalf("second v2 push: %v", err)
	}
}

// TestClientDialFailure: a service peer that is gone gives a *DialError
// naming it, matching ErrDial, in v3 and v2 (the REST API answers it with
// nwaku's dial_failure texts).
func TestClientDialFailure(t *testing.T) {
	hs, hc := newHost(t), newHost(t)
	gone := peer.AddrInfo{ID: hs.ID(), Addrs: hs.Addrs()}
	hs.Close()
	hc.Peerstore().AddAddrs(gone.ID, gone.Addrs, time.Hour)
	client := lightpush.NewClient(hc, lightpush.ClientConfig{})
	msg := &message.Message{Payload: []byte("x"), ContentTopic: "/a/1/b/proto"}
	_, err := client.Push(ctx(t), gone.ID, topic, msg)
	var de *lightpush.DialError
	if !errors.As(err, &de) || de.Peer != gone.ID || !errors.Is(err, lightpush.ErrDial) {
		t.Fatalf("v3 push to a closed peer: %v", err)
	}
	if err := client.PushLegacy(ctx(t), gone.ID, topic, msg); !errors.As(err, &de) || de.Peer != gone.ID || !errors.Is(err, lightpush.ErrDial) {
		t.Fatalf("v2 push to a closed peer: %v", err)
	}
}
