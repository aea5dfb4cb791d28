package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/mplex"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// freezer is a peer's muxer that, once frozen, stops reading its
// connections altogether: the node's writes fill the TCP window, which
// then stays at zero, as with a peer that stopped reading its socket.
type freezer struct {
	network.Multiplexer
	frozen chan struct{}
	once   sync.Once
}

func newFreezer() *freezer {
	return &freezer{Multiplexer: mplex.DefaultTransport(), frozen: make(chan struct{})}
}

func (f *freezer) NewConn(nc net.Conn, isServer bool, scope network.PeerScope) (network.MuxedConn, error) {
	return f.Multiplexer.NewConn(&frozenConn{Conn: nc, f: f, closed: make(chan struct{})}, isServer, scope)
}

func (f *freezer) freeze() { f.once.Do(func() { close(f.frozen) }) }

type frozenConn struct {
	net.Conn
	f      *freezer
	once   sync.Once
	closed chan struct{}
}

func (c *frozenConn) Read(p []byte) (int, error) {
	select {
	case <-c.f.frozen:
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

// stopBound is what the test allows Stop: StopGrace, then a margin for a
// loaded machine.
const stopBound = StopGrace + 10*time.Second

// A peer on mplex that stops reading its connection, as a filter
// subscriber or on a plain stream while it waits for a store response,
// keeps its TCP window at zero with the node's writes waiting on it; the
// node's Stop still returns within StopGrace (and a margin).
func TestStopWithPeerNotReading(t *testing.T) {
	if testing.Short() {
		t.Skip("fills loopback TCP windows with megabytes")
	}
	topic := shard.RelayShard{}.PubsubTopic()
	const contentTopic = "/app/1/stall/proto"
	payload := func(i int) []byte { return fmt.Appendf(bytes.Repeat([]byte{'x'}, 100<<10), "%d", i) }
	connect := func(t *testing.T, n *Node, f *freezer) host.Host {
		t.Helper()
		h, _ := newClient(t, libp2p.Muxer(mplex.ID, f))
		if err := h.Connect(context.Background(), peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
			t.Fatal(err)
		}
		if got := h.Network().ConnsToPeer(n.Host().ID())[0].ConnState().StreamMultiplexer; got != mplex.ID {
			t.Fatalf("muxer %s, want mplex", got)
		}
		return h
	}

	t.Run("filter subscriber", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		n := startTestNode(t, Config{Relay: true, Filter: true})
		f := newFreezer()
		h := connect(t, n, f)
		got := make(chan *message.Envelope, 1)
		fc := filter.NewClient(h, filter.ClientConfig{Handler: func(env *message.Envelope, _ peer.ID) {
			select {
			case got <- env:
			default:
			}
		}})
		defer fc.Close()
		if err := fc.Subscribe(ctx, n.Host().ID(), topic, contentTopic); err != nil {
			t.Fatal(err)
		}
		publish := func(i int) {
			t.Helper()
			if _, err := n.Publish(ctx, topic, &message.Message{Payload: payload(i), ContentTopic: contentTopic}); err != nil {
				t.Fatal(err)
			}
		}
		publish(0)
		select {
		case <-got: // the push stream is open and negotiated
		case <-ctx.Done():
			t.Fatal("no first push")
		}
		f.freeze()
		// The filter drops a push only when the subscriber's queue is full:
		// its writer waits in a Write, behind a full mplex send queue and a
		// TCP window at zero.
		for i := 1; n.Filter().Stats().Dropped == 0; i++ {
			if ctx.Err() != nil {
				t.Fatalf("after %d pushes of 100 kB the subscriber's queue never filled", i)
			}
			publish(i)
			time.Sleep(time.Millisecond)
		}
		stopWithin(t, n)
	})

	t.Run("plain stream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		n := startTestNode(t, Config{Relay: true, Store: true, DBURL: "sqlite://" + filepath.Join(t.TempDir(), "s.sqlite3")})
		for i := range 10 {
			if _, err := n.Publish(ctx, topic, &message.Message{Payload: payload(i), ContentTopic: contentTopic}); err != nil {
				t.Fatal(err)
			}
		}
		for {
			res, err := n.Archive().Query(ctx, archive.Query{PubsubTopic: topic, Limit: archive.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) == 10 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("archive holds %d of 10", len(res.Messages))
			case <-time.After(20 * time.Millisecond):
			}
		}
		// A plain stream the node writes on and the peer never reads; a
		// write that waited 100 ms for room tells the connection is full.
		const sink = protocol.ID("/courier-test/sink/1")
		full := make(chan struct{})
		n.Host().SetStreamHandler(sink, func(s network.Stream) {
			chunk := make([]byte, 64<<10)
			for {
				s.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				if _, err := s.Write(chunk); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						close(full)
					}
					return // left open: its frames stay queued
				}
			}
		})
		f := newFreezer()
		h := connect(t, n, f)
		waitFor := func(what string, cond func() bool) {
			t.Helper()
			for !cond() {
				select {
				case <-ctx.Done():
					t.Fatal(what)
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		waitFor("no identify", func() bool {
			ok, _ := h.Peerstore().SupportsProtocols(n.Host().ID(), store.ProtocolID, sink)
			return len(ok) == 2
		})
		// A store request, sent in two parts: its length prefix, so that the
		// node negotiates the stream and its store server waits for the
		// rest, while the connection still has room.
		req := lpframe.Append(nil, (&store.Request{RequestID: "stall", IncludeData: true, PubsubTopic: topic, Limit: 10}).Append(nil))
		q, err := h.NewStream(ctx, n.Host().ID(), store.ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Reset()
		if _, err := q.Write(req[:1]); err != nil {
			t.Fatal(err)
		}
		waitFor("the node never opened the store stream", func() bool {
			for _, c := range n.Host().Network().ConnsToPeer(h.ID()) {
				for _, s := range c.GetStreams() {
					if s.Protocol() == store.ProtocolID {
						return true
					}
				}
			}
			return false
		})
		s, err := h.NewStream(ctx, n.Host().ID(), sink)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Reset()
		s.Write([]byte{1}) // the node's handler starts once the protocol is read
		f.freeze()
		select {
		case <-full:
		case <-ctx.Done():
			t.Fatal("the node's writes to a peer that does not read never waited")
		}
		// The rest of the request: the store server answers with 1 MB it
		// cannot write.
		if _, err := q.Write(req[1:]); err != nil {
			t.Fatal(err)
		}
		waitFor("the store server never ran the query", func() bool { return n.StoreServer().Stats().Queries > 0 })
		if st := n.StoreServer().Stats(); st.Answered != 0 || st.Failed != 0 {
			t.Fatalf("store server: %+v, want its response waiting", st)
		}
		stopWithin(t, n)
	})
}

// stopWithin stops n and fails unless Stop returned within stopBound.
func stopWithin(t *testing.T, n *Node) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- n.Stop(context.Background()) }()
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("Stop returned in %v (%v)", took, err)
	case <-time.After(stopBound):
		t.Fatalf("Stop still running after %v", stopBound)
	}
}

// Stop's guard closes the host's connections once its grace has passed,
// or at once when Stop's context has ended, and not once cancelled.
func TestDropPeersAfter(t *testing.T) {
	connected := func(t *testing.T) (*Node, host.Host) {
		t.Helper()
		n := startTestNode(t, Config{})
		h, _ := newClient(t)
		if err := h.Connect(context.Background(), peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
			t.Fatal(err)
		}
		return n, h
	}
	waitDropped := func(t *testing.T, n *Node) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for len(n.Host().Network().Conns()) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("connections still open")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Run("grace", func(t *testing.T) {
		n, _ := connected(t)
		defer peers.DropAfter(context.Background(), n.Host(), 50*time.Millisecond, n.cfg.Logger)()
		waitDropped(t, n)
	})
	t.Run("context", func(t *testing.T) {
		n, _ := connected(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		defer peers.DropAfter(ctx, n.Host(), time.Hour, n.cfg.Logger)()
		waitDropped(t, n)
	})
	t.Run("cancelled", func(t *testing.T) {
		n, h := connected(t)
		peers.DropAfter(context.Background(), n.Host(), 50*time.Millisecond, n.cfg.Logger)()
		time.Sleep(200 * time.Millisecond)
		if len(n.Host().Network().ConnsToPeer(h.ID())) != 1 {
			t.Fatal("connection closed after the guard was cancelled")
		}
	})
}
