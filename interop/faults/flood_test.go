//go:build linux

package faults

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

	"github.com/couriernet/courier/internal/netlab"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
)

// Gossipsub protocol ids the flooder speaks.
var meshsub = []string{"/meshsub/1.1.0", "/meshsub/1.0.0"}

// flooder is an in-test libp2p host on a lab host that sends gossipsub
// RPCs of its own making straight onto a stream, as a hostile peer would.
type flooder struct {
	h    host.Host
	sent atomic.Int64 // messages written
}

func newFlooder(t *testing.T, on *netlab.Host) *flooder {
	t.Helper()
	return &flooder{h: newPeerHost(t, on)}
}

// newPeerHost is an in-test libp2p host on lab host on, without
// listening: it dials from on's namespace, answers the Waku metadata
// protocol for shard 0 of cluster 0 (or the node would disconnect it) and
// reads and drops the gossipsub stream the node opens.
func newPeerHost(t *testing.T, on *netlab.Host) host.Host {
	t.Helper()
	dial := func(ma.Multiaddr) (tcp.ContextDialer, error) { return on, nil }
	h, err := libp2p.New(
		libp2p.NoListenAddrs,
		libp2p.Transport(tcp.NewTCPTransport, tcp.WithDialerForAddr(dial)),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	// The node checks the cluster and shards of every peer (Waku
	// metadata) and disconnects those that do not answer.
	md, err := metadata.New(h, metadata.Config{Shards: func() []uint16 { return []uint16{0} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { md.Close() })
	// The node opens a gossipsub stream to every peer; read and drop it.
	for _, p := range meshsub {
		h.SetStreamHandler(protocolID(p), func(s network.Stream) { io.Copy(io.Discard, s); s.Close() })
	}
	return h
}

// flood connects to target and sends rate messages per second on the
// lab's topic until ctx ends: 99 in 100 are bytes that do not decode as
// a WakuMessage, 1 in 100 a WakuMessage over the 150 KiB limit, each
// unique. It returns the time the node closed the connection (zero if it
// did not) and the last write error.
func (f *flooder) flood(ctx context.Context, target *netlab.Node, rate int) (cut time.Time, err error) {
	id, err := peer.Decode(target.ID)
	if err != nil {
		return time.Time{}, err
	}
	addr, err := ma.NewMultiaddr(target.Host.Multiaddr(target.ID))
	if err != nil {
		return time.Time{}, err
	}
	if err := f.h.Connect(ctx, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{addr}}); err != nil {
		return time.Time{}, fmt.Errorf("flooder connect: %w", err)
	}
	s, err := f.h.NewStream(ctx, id, protocolIDs(meshsub)...)
	if err != nil {
		return time.Time{}, fmt.Errorf("flooder stream: %w", err)
	}
	defer s.Reset()
	w := msgio.NewVarintWriter(s)
	topic := netlab.PubsubTopic
	yes := true
	sub, _ := proto.Marshal(&pb.RPC{Subscriptions: []*pb.RPC_SubOpts{{Subscribe: &yes, Topicid: &topic}}})
	if err := w.WriteMsg(sub); err != nil {
		return time.Time{}, err
	}
	const batch = 100
	tick := time.NewTicker(time.Second * batch / time.Duration(rate))
	defer tick.Stop()
	big := (&message.Message{Payload: make([]byte, message.MaxSize+1024), ContentTopic: "/netlab/1/flood/proto"}).Encode(nil)
	var seq uint64
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, nil
		case <-tick.C:
		}
		rpc := &pb.RPC{}
		for range batch {
			seq++
			var data []byte
			if seq%100 == 0 {
				data = slices.Clone(big)
				binary.BigEndian.PutUint64(data[len(data)-8:], seq) // unique, still over the limit
			} else {
				data = make([]byte, 64)
				data[0], data[1] = 0xff, 0xff // field 31, wire type 7: no WakuMessage
				binary.BigEndian.PutUint64(data[2:], seq)
			}
			rpc.Publish = append(rpc.Publish, &pb.Message{Data: data, Topic: &topic})
		}
		b, _ := proto.Marshal(rpc)
		if err := w.WriteMsg(b); err != nil {
			if f.h.Network().Connectedness(id) != network.Connected {
				return time.Now(), nil
			}
			return time.Time{}, err
		}
		f.sent.Add(batch)
		if f.h.Network().Connectedness(id) != network.Connected {
			return time.Now(), nil
		}
	}
}

// testFlood: nodes a, b, c on one LAN, a-b-c in a line; a publishes 20
// messages a second and c delivers them. An in-test libp2p host floods b
// with 10,000 invalid or oversized messages a second for 20 s. b rejects
// them, its gossipsub score for the flooder falls below the graylist
// threshold (-10,000, nwaku's), and b disconnects it as nwaku's
// disconnectBadPeers does; c still delivers every one of a's messages.
// Rate and latency a to c are reported before and during the flood.
func testFlood(t *testing.T, bin string) {
	const (
		rate      = 20.0
		floodRate = 10000
		phase     = 20 * time.Second
		poll      = 20 * time.Millisecond
	)
	l := netlab.New(t, netlab.Config{Name: "flood"})
	lan := l.Segment()
	var ms []*member
	for _, name := range []string{"a", "b", "c"} {
		key, id, err := netlab.NodeKey()
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &member{host: lan.AddHost(name), key: key, id: id, dir: t.TempDir()})
	}
	attacker := lan.AddHost("x")
	startMesh(t, bin, ms, [][2]int{{0, 1}, {1, 2}})
	a, b, c := ms[0].node, ms[1].node, ms[2].node
	waitMesh(t, []*netlab.Node{a, c}, 1, 30*time.Second)

	h := netlab.NewHistory()
	stop := h.Poll([]*netlab.Node{c}, poll)
	measure := func() (count int, p50, p99 time.Duration) {
		before := h.Count()
		if failed := publishLoop(t, h, "flood", []*netlab.Node{a}, int(phase.Seconds()*rate), 256, rate); failed > 0 {
			t.Errorf("%d publishes refused", failed)
		}
		time.Sleep(2 * time.Second)
		hashes := h.PublishedHashes()[before:]
		var lat []time.Duration
		for _, x := range hashes {
			p, _ := h.PublishedAt(x)
			if d, ok := h.FirstDelivery("c", x); ok {
				lat = append(lat, d.At.Sub(p.At))
			}
		}
		slices.Sort(lat)
		return len(lat), netlab.Percentile(lat, 50), netlab.Percentile(lat, 99)
	}
	baseN, base50, base99 := measure()

	f := newFlooder(t, attacker)
	ctx, cancel := context.WithTimeout(context.Background(), phase+2*time.Second)
	defer cancel()
	var cutAt time.Time
	var floodErr error
	var wg sync.WaitGroup
	wg.Add(1)
	floodStart := time.Now()
	go func() {
		defer wg.Done()
		cutAt, floodErr = f.flood(ctx, b, floodRate)
	}()
	var minScore float64
	scoreDone := make(chan struct{})
	go func() {
		defer close(scoreDone)
		for ctx.Err() == nil {
			if s, ok, err := b.RelayPeerScore(f.h.ID().String()); err == nil && ok {
				minScore = min(minScore, s)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	floodN, flood50, flood99 := measure()
	wg.Wait()
	cancel()
	<-scoreDone
	stop()
	floodTook := time.Since(floodStart)
	peak := peakRSS(t, []*netlab.Node{a, b, c})

	if floodErr != nil {
		t.Errorf("flood: %v", floodErr)
	}
	if c := h.DeliveryCheck("c"); !c.OK() {
		t.Errorf("c during the flood: %s", c)
	}
	// The disconnect may come before a poll of /admin/v1/peers sees the
	// score; the node's log line of the disconnect names it.
	reCut := regexp.MustCompile(`msg="disconnecting peer below the gossipsub graylist threshold" peer=` + f.h.ID().String() + ` score=(\S+)`)
	for _, line := range b.Lines() {
		if m := reCut.FindStringSubmatch(line); m != nil {
			if s, err := strconv.ParseFloat(m[1], 64); err == nil {
				minScore = min(minScore, s)
			}
		}
	}
	if minScore > -10000 {
		t.Errorf("b's lowest score for the flooder %.0f, want below the graylist threshold -10000", minScore)
	}
	disconnect := "never"
	if cutAt.IsZero() {
		t.Errorf("b did not disconnect the flooder in %v (%d messages sent); nwaku disconnects peers below the graylist threshold", floodTook.Round(time.Second), f.sent.Load())
	} else {
		disconnect = cutAt.Sub(floodStart).Round(100 * time.Millisecond).String()
	}
	m, err := b.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	fig := netlab.Figures{Scenario: "Flood", Published: h.Count(), Delivered: h.Deliveries(), MemPeak: peak}
	dc := h.DeliveryCheck("c")
	fig.Lost, fig.Dup = dc.Lost, dc.Duplicated
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("flooder sent %d in %v, disconnected after %s, lowest score %.0f", f.sent.Load(), floodTook.Round(100*time.Millisecond), disconnect, minScore),
		fmt.Sprintf("a to c before: %d in %v (%.1f/s) p50 %v p99 %v", baseN, phase, float64(baseN)/phase.Seconds(), base50.Round(time.Millisecond), base99.Round(time.Millisecond)),
		fmt.Sprintf("during: %d (%.1f/s) p50 %v p99 %v", floodN, float64(floodN)/phase.Seconds(), flood50.Round(time.Millisecond), flood99.Round(time.Millisecond)),
		fmt.Sprintf("b's rejects %v", rejectMetrics(m)))
	t.Log(fig)
}

// rejectMetrics picks b's counters of dropped and rejected messages.
func rejectMetrics(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v != 0 && (slices.ContainsFunc([]string{"courier_drops_total", "waku_node_errors", "reject", "invalid"}, func(s string) bool { return containsFold(k, s) })) {
			out[k] = v
		}
	}
	return out
}

func containsFold(s, sub string) bool { return strings.Contains(strings.ToLower(s), sub) }

func protocolID(s string) protocol.ID { return protocol.ID(s) }

func protocolIDs(ss []string) []protocol.ID {
	out := make([]protocol.ID, len(ss))
	for i, s := range ss {
		out[i] = protocol.ID(s)
	}
	return out
}
