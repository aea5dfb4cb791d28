package netlab

import (
	"context"
	"fmt"
	"io"

	"github.com/libp2p/go-libp2p"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-msgio"
	ma "github.com/multiformats/go-multiaddr"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/metadata"
)

// Meshsub are the gossipsub protocol ids a peer of NewPeer speaks on a
// Gossip stream, newest first.
var Meshsub = []protocol.ID{"/meshsub/1.1.0", "/meshsub/1.0.0"}

// NewPeer starts an in-test libp2p host on lab host h, as a hostile or
// measured peer of the lab's nodes: it does not listen, dials from h's
// namespace over TCP, has no resource limits, answers the Waku metadata
// protocol for shard 0 of cluster 0 (PubsubTopic; a node disconnects a
// peer that does not) and reads and drops every gossipsub stream a node
// opens to it. It is closed when the test ends; it fails the test on
// error.
func (h *Host) NewPeer() host.Host {
	tb := h.lab.tb
	tb.Helper()
	dial := func(ma.Multiaddr) (tcp.ContextDialer, error) { return h, nil }
	p, err := libp2p.New(
		libp2p.NoListenAddrs,
		libp2p.Transport(tcp.NewTCPTransport, tcp.WithDialerForAddr(dial)),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
	)
	if err != nil {
		tb.Fatalf("netlab: peer on %s: %v", h.Name, err)
	}
	tb.Cleanup(func() { p.Close() })
	md, err := metadata.New(p, metadata.Config{Shards: func() []uint16 { return []uint16{0} }})
	if err != nil {
		tb.Fatalf("netlab: peer on %s: metadata: %v", h.Name, err)
	}
	tb.Cleanup(func() { md.Close() })
	for _, id := range Meshsub {
		p.SetStreamHandler(id, func(s network.Stream) { io.Copy(io.Discard, s); s.Close() })
	}
	return p
}

// Gossip is a raw gossipsub stream from an in-test peer to a node: the
// test writes RPCs of its own making, as a hostile peer would, with no
// pubsub router between (no validation, no seen cache, no scoring of the
// node).
type Gossip struct {
	p    host.Host
	node peer.ID
	s    network.Stream
	w    msgio.WriteCloser
}

// DialGossip connects peer p to node n, opens a gossipsub stream and
// subscribes to PubsubTopic on it, so that the node counts p among the
// topic's peers.
func DialGossip(ctx context.Context, p host.Host, n *Node) (*Gossip, error) {
	id, err := peer.Decode(n.ID)
	if err != nil {
		return nil, err
	}
	addr, err := ma.NewMultiaddr(n.Host.Multiaddr(n.ID))
	if err != nil {
		return nil, err
	}
	if err := p.Connect(ctx, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}}); err != nil {
		return nil, fmt.Errorf("netlab: connect to %s: %w", n.Host.Name, err)
	}
	s, err := p.NewStream(ctx, id, Meshsub...)
	if err != nil {
		return nil, fmt.Errorf("netlab: gossipsub stream to %s: %w", n.Host.Name, err)
	}
	g := &Gossip{p: p, node: id, s: s, w: msgio.NewVarintWriter(s)}
	topic, yes := PubsubTopic, true
	if err := g.WriteRPC(&pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &yes, Topicid: &topic}}}); err != nil {
		s.Reset()
		return nil, err
	}
	return g, nil
}

// WriteRPC writes one RPC, length-prefixed as gossipsub frames it.
func (g *Gossip) WriteRPC(rpc *pb.RPC) error {
	b, err := proto.Marshal(rpc)
	if err != nil {
		return err
	}
	return g.w.WriteMsg(b)
}

// Publish writes one RPC that publishes each of data (the bytes of a
// WakuMessage, or anything else) on PubsubTopic, unsigned. data is only
// read.
func (g *Gossip) Publish(data ...[]byte) error {
	topic := PubsubTopic
	rpc := &pb.RPC{Publish: make([]*pb.Message, len(data))}
	for i, d := range data {
		rpc.Publish[i] = &pb.Message{Data: d, Topic: &topic}
	}
	return g.WriteRPC(rpc)
}

// Connected reports whether the peer is still connected to the node.
func (g *Gossip) Connected() bool {
	return g.p.Network().Connectedness(g.node) == network.Connected
}

// Close resets the stream.
func (g *Gossip) Close() { g.s.Reset() }
