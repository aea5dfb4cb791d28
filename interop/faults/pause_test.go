//go:build linux

package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
)

// testPause: four store nodes with store-sync, all linked, 30 ms ± 10 ms
// links; q3's bandwidth is 1 Mbit/s each way. The relay nodes publish 4
// KiB messages at 4 a second for 60 s; 15 s in, q1 is stopped (SIGSTOP)
// for 30 s and then continued. Every archive, q1's too, must then hold
// every message once.
func testPause(t *testing.T, bin string) {
	const (
		rate     = 4.0
		duration = 60 * time.Second
		pause    = 30 * time.Second
	)
	l := netlab.New(t, netlab.Config{Name: "pause", Link: netlab.LinkSpec{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond}})
	ms := newMembers(t, l, "q", 4)
	l.SetRate(ms[3].host, 1_000_000)
	var edges [][2]int
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			edges = append(edges, [2]int{i, j})
		}
	}
	startMesh(t, bin, ms, edges, syncFlags...)
	nodes := nodesOf(ms)
	waitMesh(t, nodes, 3, 60*time.Second)
	paused := ms[1].node
	publishers := []*netlab.Node{ms[0].node, ms[2].node, ms[3].node}

	h := netlab.NewHistory()
	done := make(chan int)
	go func() { done <- h.PublishLoop(t, "pause", publishers, int(duration.Seconds()*rate), 4096, rate) }()
	time.Sleep(15 * time.Second)
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause)
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	if failed := <-done; failed > 0 {
		t.Errorf("%d publishes refused", failed)
	}
	conv := waitArchives(t, nodes, h.Set(), 2*syncInterval+relayJitter+30*time.Second)
	fig := netlab.Figures{Scenario: "Pause", Published: h.Count(), Converge: time.Since(resumed), MemPeak: netlab.PeakRSS(t, nodes)}
	for _, c := range checkArchives(t, nodes, h.Set()) {
		fig.Archived = max(fig.Archived, c.Got)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
	}
	m, err := paused.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "waku_archive_errors_total") && v > 0 {
			refused[k] = v
		}
	}
	hs := l.HopStats()
	fig.Extra = append(fig.Extra, fmt.Sprintf("q1 stopped %v; converged %v after the last publish", pause, conv.Round(100*time.Millisecond)),
		fmt.Sprintf("q1's archive refused %v", refused),
		fmt.Sprintf("hop %d packets delayed, %d overflow", hs.Delayed, hs.Overflow))
	t.Log(fig)
}
