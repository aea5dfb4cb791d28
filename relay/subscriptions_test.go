package relay_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/relay"
)

// A peer that announces subscriptions to 800,000 topics of its own (20 MB
// of SUBSCRIBE entries, which made gossipsub hold 270 MB before) leaves
// only the ones the relay tracks: its subscriptions to a joined topic and
// to one Config.PeerTopics allows are kept, the others dropped, and the
// live heap stays within a few MB of where it was.
func TestPeerSubscriptionsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 20 MB of subscriptions")
	}
	const (
		joined  = "/waku/2/rs/0/0"
		allowed = "/waku/2/rs/0/5"
		frames  = 100
	)
	hn, hp := newHost(t), newHost(t)
	r, err := relay.New(hn, relay.Config{PeerTopics: func(t string) bool { return strings.HasPrefix(t, "/waku/2/rs/0/") }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Subscribe(joined, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	// The peer reads what the relay sends, so that the relay counts it as
	// a gossipsub peer, and writes its own RPCs by hand.
	hp.SetStreamHandler(relay.ProtocolID, func(s network.Stream) { io.Copy(io.Discard, s) })
	if err := hp.Connect(context.Background(), peer.AddrInfo{ID: hn.ID(), Addrs: hn.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return slices.Contains(r.TopicPeers(""), hp.ID()) })
	base := liveHeap()
	st, err := hp.NewStream(context.Background(), hn.ID(), relay.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Reset()
	sent, k := 0, 0
	for f := range frames {
		var rpc pb.RPC
		size := 0
		for size < 200_000 {
			topic := fmt.Sprintf("/hostile/%07d/xxxxxxxx", k)
			k++
			rpc.Subscriptions = append(rpc.Subscriptions, subscribe(topic))
			size += len(topic) + 6
		}
		if f == frames-1 {
			rpc.Subscriptions = append(rpc.Subscriptions, subscribe(joined), subscribe(allowed))
		}
		b, err := proto.Marshal(&rpc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Write(append(binary.AppendUvarint(nil, uint64(len(b))), b...)); err != nil {
			t.Fatal(err)
		}
		sent += len(b)
	}
	// The last frame names the tracked topics: once they show, every
	// frame before has been handled.
	waitFor(t, func() bool { return slices.Contains(r.TopicPeers(allowed), hp.ID()) })
	if !slices.Contains(r.TopicPeers(joined), hp.ID()) {
		t.Errorf("the peer's subscription to the joined topic %s was dropped", joined)
	}
	for _, junk := range []string{"/hostile/0000000/xxxxxxxx", fmt.Sprintf("/hostile/%07d/xxxxxxxx", k-1)} {
		if peers := r.TopicPeers(junk); len(peers) != 0 {
			t.Errorf("subscription to %s kept: %v", junk, peers)
		}
	}
	if grown := liveHeap() - base; grown > 16<<20 {
		t.Errorf("%d subscriptions in %d MB: live heap grew by %d MB, want at most 16 MB", k, sent>>20, grown>>20)
	}
}

func subscribe(topic string) *pb.RPC_SubOpts {
	yes := true
	return &pb.RPC_SubOpts{Subscribe: &yes, Topicid: &topic}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
