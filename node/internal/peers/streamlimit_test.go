package peers

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/mplex"
)

// TestMplexStreamLimit: as the mplex package doc says, the resource
// manager, not mplex's MaxInboundStreams (1024 per connection), bounds a
// peer's open inbound streams of one protocol: go-libp2p's per-protocol
// per-peer default autoscaled to the machine, which the node keeps (its
// own limits, resources.go, raise only the per-peer total to 1024).
// A peer on mplex holding streams of one protocol open gets exactly that
// many; the next is reset.
func TestMplexStreamLimit(t *testing.T) {
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	scaled := limits.AutoScale().ToPartialLimitConfig()
	perProtocol := int(scaled.ProtocolPeerDefault.StreamsInbound)
	perPeer := int(scaled.PeerDefault.StreamsInbound)
	if perProtocol <= 0 || perProtocol >= perPeer || perPeer >= mplex.DefaultMaxInboundStreams {
		t.Fatalf("default limits: %d per protocol and peer, %d per peer, mplex %d: not the order the mplex doc states",
			perProtocol, perPeer, mplex.DefaultMaxInboundStreams)
	}
	t.Logf("this machine: %d inbound streams per protocol and peer, %d per peer; mplex %d per connection", perProtocol, perPeer, mplex.DefaultMaxInboundStreams)

	key, _, _ := crypto.GenerateEd25519Key(nil)
	server, err := NewHost(key, HostConfig{MaxConnections: 50, Mplex: []bool{true}, Registerer: prometheus.NewRegistry(),
		Listen: []ListenAddr{{Flag: "--listen-address", Addr: ma.StringCast("/ip4/127.0.0.1/tcp/0")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	const proto = "/courier-test/hold/1"
	release := make(chan struct{})
	defer close(release)
	server.SetStreamHandler(proto, func(s network.Stream) {
		s.Write([]byte{1})
		<-release
		s.Reset()
	})
	client, err := libp2p.New(libp2p.NoListenAddrs, libp2p.Muxer(mplex.ID, mplex.DefaultTransport()),
		libp2p.ResourceManager(&network.NullResourceManager{}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := client.Connect(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}); err != nil {
		t.Fatal(err)
	}
	held := 0
	for range perProtocol + 2 {
		s, err := client.NewStream(ctx, server.ID(), proto)
		if err == nil {
			s.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.ReadFull(s, make([]byte, 1))
		}
		if err != nil {
			break
		}
		held++
	}
	if held != perProtocol {
		t.Fatalf("a peer held %d streams of one protocol open, want the resource manager's %d", held, perProtocol)
	}
}
