//go:build linux

package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/internal/netlab"
)

// testPeerMemory: one relay and filter node and 96 in-test libp2p peers
// on eight lab hosts, each peer answering Waku metadata and subscribing
// to the lab's topic over gossipsub; then each peer subscribes over filter
// v2 to ten content topics. The node's Go heap before and after each step
// gives the memory of a connected relay peer and of a filter subscriber
// with ten criteria.
func testPeerMemory(t *testing.T, bin string) {
	// go-libp2p's resource manager admits a burst of 16 connections from
	// one IP address, then one per 5 s: 12 peers a host stay within it.
	const (
		hosts   = 8
		perHost = 12
	)
	l := netlab.New(t, netlab.Config{Name: "peers"})
	lan := l.Segment()
	key, id, err := netlab.NodeKey()
	if err != nil {
		t.Fatal(err)
	}
	nh := lan.AddHost("n")
	n := nh.StartNode(bin, t.TempDir(), "--nodekey", key, "--max-connections", "300", "--ip-colocation-limit", "0", "--filter")
	time.Sleep(3 * time.Second)
	base, baseHeap := memNow(t, n)

	pid, err := peer.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	var peers []host.Host
	for i := range hosts {
		on := lan.AddHost(fmt.Sprintf("c%d", i))
		for range perHost {
			h := on.NewPeer()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := netlab.DialGossip(ctx, h, n)
			cancel()
			if err != nil {
				t.Fatalf("peer %d: %v", len(peers), err)
			}
			peers = append(peers, h)
		}
	}
	waitFor(t, 30*time.Second, "the node lists every peer", func() (bool, string) {
		ids, err := n.ConnectedPeers()
		return err == nil && len(ids) >= len(peers), fmt.Sprintf("%d connected (%v)", len(ids), err)
	})
	time.Sleep(5 * time.Second) // a few heartbeats: gossip state per peer
	with, withHeap := memNow(t, n)
	k := float64(len(peers))

	for i, h := range peers {
		c := filter.NewClient(h, filter.ClientConfig{})
		defer c.Close()
		topics := make([]string, filterCriteria)
		for j := range topics {
			topics[j] = fmt.Sprintf("/netlab/1/filter-%d-%d/proto", i, j)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.Subscribe(ctx, pid, netlab.PubsubTopic, topics...)
		cancel()
		if err != nil {
			t.Fatalf("filter subscriber %d: %v", i, err)
		}
	}
	time.Sleep(2 * time.Second)
	subs, subsHeap := memNow(t, n)
	fig := netlab.Figures{Scenario: "PeerMemory", MemPeak: with.Peak}
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("%d relay peers: RSS %.1f -> %.1f MiB (%.1f KiB a peer), Go heap in use %.1f -> %.1f MiB (%.1f KiB a peer)",
			len(peers), mib(base.RSS), mib(with.RSS), float64(with.RSS-base.RSS)/k/1024,
			baseHeap/(1<<20), withHeap/(1<<20), (withHeap-baseHeap)/k/1024),
		fmt.Sprintf("each a filter subscriber of %d content topics: RSS -> %.1f MiB, Go heap -> %.1f MiB (%.1f KiB a subscriber, %.0f B a criterion)",
			filterCriteria, mib(subs.RSS), subsHeap/(1<<20), (subsHeap-withHeap)/k/1024, (subsHeap-withHeap)/k/filterCriteria))
	fig.MemPeak = subs.Peak
	t.Log(fig)
	if perSub := (subsHeap - withHeap) / k; perSub > filterHeapBound {
		t.Errorf("Go heap %.1f KiB a filter subscriber, bound %d KiB", perSub/1024, filterHeapBound>>10)
	}
	if perPeer := (withHeap - baseHeap) / k; perPeer > peerHeapBound {
		t.Errorf("Go heap %.1f KiB a connected relay peer, bound %d KiB", perPeer/1024, peerHeapBound>>10)
	}
}

// filterCriteria is the content topics each filter subscriber asks for.
const filterCriteria = 10

// filterHeapBound is the stated bound of the Go heap one filter subscriber
// of filterCriteria content topics costs the node beyond its connection,
// in bytes.
const filterHeapBound = 64 << 10

// peerHeapBound is the stated bound of the Go heap one connected relay
// peer costs the node (its connection, muxer, gossipsub and peer-manager
// state), in bytes.
const peerHeapBound = 256 << 10

// memNow returns the node's resident memory and its Go heap in use
// (go_memstats_heap_inuse_bytes).
func memNow(t *testing.T, n *netlab.Node) (netlab.Memory, float64) {
	t.Helper()
	m, err := n.Memory()
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := n.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return m, metrics["go_memstats_heap_inuse_bytes"]
}
