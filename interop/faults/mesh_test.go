//go:build linux

package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
)

// testMesh12: twelve store nodes, each on a segment of its own, every
// link 80 ms ± 20 ms one way with 2 % loss each way; a ring with chords
// (degree 4). 300 messages of 1 KiB at 6 per second from random nodes:
// every node delivers every message once and archives it once.
// Latency p50/p99 is reported against link latency times hop count.
func testMesh12(t *testing.T, bin string) {
	const (
		n     = 12
		count = 300
		rate  = 6.0
		poll  = 50 * time.Millisecond
	)
	link := netlab.LinkSpec{Delay: 80 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.02}
	l := netlab.New(t, netlab.Config{Name: "mesh", Link: link})
	ms := newMembers(t, l, "m", n)
	edges := ringEdges(n, 4)
	startMesh(t, bin, ms, edges, "--store")
	nodes := nodesOf(ms)
	formed := waitMesh(t, nodes, 3, 60*time.Second)
	t.Logf("meshes formed %v after the last start", formed.Round(100*time.Millisecond))

	h := netlab.NewHistory()
	stop := h.Poll(nodes, poll)
	start := time.Now()
	if failed := h.PublishLoop(t, "mesh", nodes, count, 1024, rate); failed > 0 {
		t.Errorf("%d publishes refused", failed)
	}
	published := time.Since(start)
	var converged time.Duration
	waitFor(t, 60*time.Second, "every node delivers every message", func() (bool, string) {
		for _, nd := range nodes {
			if c := h.DeliveryCheck(nd.Host.Name); c.Lost > 0 {
				return false, c.String()
			}
		}
		converged = time.Since(start) - published
		return true, ""
	})
	failures := stop()
	fig := netlab.Figures{Scenario: "Mesh12", Published: h.Count(), Delivered: h.Deliveries(), Converge: converged}
	for _, nd := range nodes {
		c := h.DeliveryCheck(nd.Host.Name)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
		if !c.OK() {
			t.Errorf("delivered %s", c)
		}
	}
	want := h.Set()
	waitFor(t, 30*time.Second, "every archive holds every message", func() (bool, string) {
		arcs, err := archives(nodes)
		if err != nil {
			return false, err.Error()
		}
		for name, hs := range arcs {
			if c := netlab.CheckSet(name, want, hs); !c.OK() {
				return false, c.String()
			}
		}
		return true, ""
	})
	for _, c := range checkArchives(t, nodes, want) {
		fig.Archived = max(fig.Archived, c.Got)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
	}
	lat := h.Latencies()
	fig.P50, fig.P99 = netlab.Percentile(lat, 50), netlab.Percentile(lat, 99)
	fig.MemPeak = netlab.PeakRSS(t, nodes)
	mean, most := meanHops(hops(n, edges))
	hs := l.HopStats()
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("hops mean %.2f max %d (%.0f ms of links at the mean)", mean, most, mean*80),
		fmt.Sprintf("poll %v, %d failed polls", poll, failures),
		fmt.Sprintf("hop packets %d delayed, %d overflow", hs.Delayed, hs.Overflow))
	t.Log(fig)
}
