package filter_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/mplex"
)

// frozenMux is a subscriber's mplex that, once frozen, stops reading its
// connections: the service's pushes fill the TCP window, which stays at
// zero.
type frozenMux struct {
	network.Multiplexer
	frozen chan struct{}
}

func (m *frozenMux) NewConn(nc net.Conn, isServer bool, scope network.PeerScope) (network.MuxedConn, error) {
	return m.Multiplexer.NewConn(&frozenConn{Conn: nc, frozen: m.frozen, closed: make(chan struct{})}, isServer, scope)
}

type frozenConn struct {
	net.Conn
	frozen <-chan struct{}
	once   sync.Once
	closed chan struct{}
}

func (c *frozenConn) Read(p []byte) (int, error) {
	select {
	case <-c.frozen:
		<-c.closed
		return 0, net.ErrClosed
	default:
		return c.Conn.Read(p)
	}
}

func (c *frozenConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A subscriber on mplex that stops reading makes a push time out, and the
// push stream is reset with the connection's send queue full; Close still
// returns, at once, and the writer does not wait on the peer.
func TestCloseWithSubscriberNotReading(t *testing.T) {
	mux := func(m network.Multiplexer) libp2p.Option { return libp2p.Muxer(mplex.ID, m) }
	sh, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), mux(mplex.DefaultTransport()))
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	svc, err := filter.New(sh, filter.Config{PushTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	fm := &frozenMux{Multiplexer: mplex.DefaultTransport(), frozen: make(chan struct{})}
	lh, err := libp2p.New(libp2p.NoListenAddrs, mux(fm))
	if err != nil {
		t.Fatal(err)
	}
	defer lh.Close()
	got := make(chan struct{}, 1)
	fc := filter.NewClient(lh, filter.ClientConfig{Handler: func(*message.Envelope, peer.ID) {
		select {
		case got <- struct{}{}:
		default:
		}
	}})
	defer fc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lh.Connect(ctx, peer.AddrInfo{ID: sh.ID(), Addrs: sh.Addrs()}); err != nil {
		t.Fatal(err)
	}
	const ct = "/app/1/stall/proto"
	if err := fc.Subscribe(ctx, sh.ID(), topic, ct); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 100<<10)
	push := func(i int) { svc.Push(envelope(t, ct, fmt.Appendf(payload[:0:0], "%d%s", i, payload))) }
	push(0)
	select {
	case <-got: // the push stream is open and negotiated
	case <-ctx.Done():
		t.Fatal("no first push")
	}
	close(fm.frozen)
	for i := 1; svc.Stats().Failed == 0; i++ {
		if ctx.Err() != nil {
			t.Fatalf("%d pushes of 100 kB to a subscriber that does not read, none failed", i)
		}
		push(i)
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	start := time.Now()
	go func() {
		svc.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Logf("Close returned in %v", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("Close still waiting for the push writer after 20 s")
	}
}
