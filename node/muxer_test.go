package node

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"

	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/mplex"
)

// A peer with yamux and mplex gets yamux; a peer with mplex only (as
// js-libp2p's default stack) gets mplex and speaks the node's protocols
// over it.
func TestMuxerChoice(t *testing.T) {
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	for _, tt := range []struct {
		name  string
		opts  []libp2p.Option
		muxer protocol.ID
	}{
		{"both", []libp2p.Option{libp2p.Muxer(yamux.ID, yamux.DefaultTransport), libp2p.Muxer(mplex.ID, mplex.DefaultTransport())}, yamux.ID},
		{"mplex only", []libp2p.Option{libp2p.Muxer(mplex.ID, mplex.DefaultTransport())}, mplex.ID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, md := newClient(t, tt.opts...)
			if err := h.Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
				t.Fatal(err)
			}
			conns := h.Network().ConnsToPeer(n.Host().ID())
			if len(conns) != 1 {
				t.Fatalf("%d connections", len(conns))
			}
			if got := conns[0].ConnState().StreamMultiplexer; got != tt.muxer {
				t.Fatalf("muxer %s, want %s", got, tt.muxer)
			}
			// the peer asks the node's metadata, the node asks the peer's
			rpc, err := md.Request(ctx, n.Host().ID())
			if err != nil {
				t.Fatal(err)
			}
			if !rpc.HasClusterID || rpc.ClusterID != 0 || !slices.Equal(rpc.Shards, []uint32{0}) {
				t.Fatalf("node's metadata %+v, want cluster 0 shard 0", rpc)
			}
			if _, err := n.Metadata().Request(ctx, h.ID()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// newClient returns a host that does not listen, speaks Noise and opts,
// and answers metadata on cluster 0 shard 0, which the node checks on
// connect. Both are closed when the test ends.
func newClient(t *testing.T, opts ...libp2p.Option) (host.Host, *metadata.Service) {
	t.Helper()
	h, err := libp2p.New(append([]libp2p.Option{libp2p.NoListenAddrs, libp2p.Security(noise.ID, noise.New)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	md, err := metadata.New(h, metadata.Config{Shards: func() []uint16 { return []uint16{0} }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { md.Close() })
	return h, md
}

// A node given one muxer offers only that one.
func TestMuxersConfig(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		muxer string
		id    protocol.ID
	}{{MuxerMplex, mplex.ID}, {MuxerYamux, yamux.ID}} {
		t.Run(tt.muxer, func(t *testing.T) {
			n, err := New(Config{ListenAddress: "127.0.0.1", Muxers: []string{tt.muxer}})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Stop(ctx)
			h, _ := newClient(t, libp2p.Muxer(yamux.ID, yamux.DefaultTransport), libp2p.Muxer(mplex.ID, mplex.DefaultTransport()))
			if err := h.Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
				t.Fatal(err)
			}
			if got := h.Network().ConnsToPeer(n.Host().ID())[0].ConnState().StreamMultiplexer; got != tt.id {
				t.Fatalf("muxer %s, want %s", got, tt.id)
			}
		})
	}
}
