//go:build linux

package faults

import (
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"

	"github.com/couriernet/courier/internal/netlab"
	"github.com/couriernet/courier/message"
)

// flooder is an in-test libp2p host on a lab host that sends gossipsub
// RPCs of its own making straight onto a stream, as a hostile peer would.
type flooder struct {
	h    host.Host
	sent atomic.Int64 // messages written
}

func newFlooder(t *testing.T, on *netlab.Host) *flooder {
	t.Helper()
	return &flooder{h: on.NewPeer()}
}

// flood connects to target and sends rate messages per second on the
// lab's topic until ctx ends: 99 in 100 are bytes that do not decode as
// a WakuMessage, 1 in 100 a WakuMessage over the 150 KiB limit, each
// unique. It returns the time the node closed the connection (zero if it
// did not) and the last write error.
func (f *flooder) flood(ctx context.Context, target *netlab.Node, rate int) (cut time.Time, err error) {
	g, err := netlab.DialGossip(ctx, f.h, target)
	if err != nil {
		return time.Time{}, fmt.Errorf("flooder: %w", err)
	}
	defer g.Close()
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
		msgs := make([][]byte, 0, batch)
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
			msgs = append(msgs, data)
		}
		if err := g.Publish(msgs...); err != nil {
			if !g.Connected() {
				return time.Now(), nil
			}
			return time.Time{}, err
		}
		f.sent.Add(batch)
		if !g.Connected() {
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
		if failed := h.PublishLoop(t, "flood", []*netlab.Node{a}, int(phase.Seconds()*rate), 256, rate); failed > 0 {
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
	peak := netlab.PeakRSS(t, []*netlab.Node{a, b, c})

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
