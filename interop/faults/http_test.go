//go:build linux

package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/couriernet/courier/internal/netlab"
)

// Bad-client figures and bounds.
const (
	idleConns  = 10000
	slowLoris  = 300
	memBound   = 256 << 20 // bytes: the node's peak RSS through it all
	cutWithin  = 90 * time.Second
	overBody   = 17 << 20 // over the REST body limit (16 MiB, nwaku's)
	withinBody = 8 << 20  // within it, but no WakuMessage is near it
	bigPosts   = 10
	probeEvery = 500 * time.Millisecond
)

// testBadClients: one node with REST and metrics. From its own namespace
// the test opens 10,000 idle connections to REST and 1,000 to metrics,
// 300 slow-loris connections to each (a header byte a second), and posts
// ten bodies over the 16 MiB body limit and ten of 8 MiB within it to the
// relay route. A well-behaved client's
// GET /health is answered all along, the idle and slow connections are
// cut, the big bodies are refused, and the node's peak RSS stays under
// memBound.
func testBadClients(t *testing.T, bin string) {
	raiseNoFile(t, idleConns+idleConns/10+2*slowLoris+1024)
	l := netlab.New(t, netlab.Config{Name: "http"})
	m := newMembers(t, l, "w", 1)[0]
	n := m.host.StartNode(bin, m.dir, "--nodekey", m.key, "--store")
	base, _ := n.Memory()
	rest := fmt.Sprintf("127.0.0.1:%d", netlab.NodeRESTPort)
	metrics := fmt.Sprintf("127.0.0.1:%d", netlab.NodeMetricsPort)

	// A good client probes /health all along.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var probes probeStats
	go probes.run(ctx, n)

	start := time.Now()
	idleREST := openIdle(t, m.host, rest, idleConns)
	metricsStart := time.Now()
	idleMetrics := openIdle(t, m.host, metrics, idleConns/10)
	t.Logf("opened %d idle REST and %d idle metrics connections in %v", len(idleREST), len(idleMetrics), time.Since(start).Round(time.Millisecond))
	afterIdle, _ := n.Memory()
	lorisREST := startLoris(ctx, m.host, rest, slowLoris)
	lorisMetrics := startLoris(ctx, m.host, metrics, slowLoris)
	time.Sleep(3 * time.Second)
	afterLoris, _ := n.Memory()
	statuses := postBig(t, m.host, rest, bigPosts, overBody)
	afterOver, _ := n.Memory()
	within := postBig(t, m.host, rest, bigPosts, withinBody)
	afterPosts, _ := n.Memory()

	// Idle and slow connections must be cut; wait for it.
	cutREST, cutMetrics := waitCut(idleREST, start, cutWithin), waitCut(idleMetrics, metricsStart, cutWithin)
	lr, lm := lorisREST.wait(cutWithin), lorisMetrics.wait(cutWithin)
	mem, _ := n.Memory()
	cancel()
	probeN, probeFail, probeMax := probes.get()
	fig := netlab.Figures{Scenario: "BadClients", MemPeak: mem.Peak}
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("RSS %.1f MiB before, %.1f MiB with the idle connections open, peak %.1f MiB with the slow-loris ones too, %.1f MiB after the posts over the limit, %.1f MiB after those within it",
			mib(base.RSS), mib(afterIdle.RSS), mib(afterLoris.Peak), mib(afterOver.Peak), mib(afterPosts.Peak)),
		fmt.Sprintf("idle REST cut %d/%d in %v", cutREST.n, len(idleREST), cutREST.took.Round(100*time.Millisecond)),
		fmt.Sprintf("idle metrics cut %d/%d in %v", cutMetrics.n, len(idleMetrics), cutMetrics.took.Round(100*time.Millisecond)),
		fmt.Sprintf("slow-loris REST cut %d/%d (latest after %v), metrics %d/%d (latest after %v)", lr.n, slowLoris, lr.took.Round(100*time.Millisecond), lm.n, slowLoris, lm.took.Round(100*time.Millisecond)),
		fmt.Sprintf("17 MiB posts answered %v, 8 MiB posts %v", statuses, within),
		fmt.Sprintf("/health probes %d, failed %d, slowest %v", probeN, probeFail, probeMax.Round(time.Millisecond)))
	t.Log(fig)

	if mem.Peak > memBound {
		t.Errorf("node peak RSS %.1f MiB, bound %d MiB", float64(mem.Peak)/(1<<20), memBound>>20)
	}
	if probeFail > 0 {
		t.Errorf("%d of %d /health probes failed (a good client must be served)", probeFail, probeN)
	}
	if cutREST.n < len(idleREST) || cutMetrics.n < len(idleMetrics) {
		t.Errorf("idle connections left open after %v: REST %d, metrics %d", cutWithin, len(idleREST)-cutREST.n, len(idleMetrics)-cutMetrics.n)
	}
	if lr.n < slowLoris || lm.n < slowLoris {
		t.Errorf("slow-loris connections left open after %v: REST %d, metrics %d", cutWithin, slowLoris-lr.n, slowLoris-lm.n)
	}
	for code, k := range statuses {
		if code != http.StatusRequestEntityTooLarge && code != -1 {
			t.Errorf("%d of the 17 MiB posts answered %d, want 413 (or the connection cut)", k, code)
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// raiseNoFile lifts this process's open-file limit (and so the nodes')
// to at least n.
func raiseNoFile(t *testing.T, n uint64) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = n
	lim.Max = max(lim.Max, n) // root may raise the hard limit, a container may not
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("open-file limit to %d: %v", n, err)
	}
}

func openIdle(t *testing.T, h *netlab.Host, addr string, count int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, count)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range count {
		c, err := h.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Logf("idle connection %d to %s: %v", len(conns), addr, err)
			break
		}
		conns = append(conns, c)
	}
	return conns
}

type cutCount struct {
	n    int
	took time.Duration // when the last was cut
}

// waitCut waits until the server closed every connection (a read returns
// EOF or an error) or within passes since start, when they were opened;
// times are from start, to within a second.
func waitCut(conns []net.Conn, start time.Time, within time.Duration) cutCount {
	var res cutCount
	// One reader per connection would be 10,000 goroutines under the race
	// detector's limit of 8,128: poll them in turns instead.
	deadline := start.Add(within)
	open := append([]net.Conn(nil), conns...)
	buf := make([]byte, 1)
	for len(open) > 0 && time.Now().Before(deadline) {
		var still []net.Conn
		for _, c := range open {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			_, err := c.Read(buf)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				still = append(still, c)
				continue
			}
			res.n++
			res.took = time.Since(start)
		}
		open = still
		if len(open) > 0 {
			time.Sleep(time.Second)
		}
	}
	return res
}

// loris are slow-loris connections: a request line, then one header byte
// a second, never the end of the headers.
type loris struct {
	mu    sync.Mutex
	start time.Time
	cut   int
	last  time.Duration
	done  sync.WaitGroup
}

func startLoris(ctx context.Context, h *netlab.Host, addr string, count int) *loris {
	l := &loris{start: time.Now()}
	for range count {
		c, err := h.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			defer c.Close()
			if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
				l.record()
				return
			}
			for ctx.Err() == nil {
				time.Sleep(time.Second)
				if _, err := c.Write([]byte("a")); err != nil {
					l.record()
					return
				}
				c.SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := c.Read(make([]byte, 1)); err != nil {
					if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
						l.record()
						return
					}
				}
			}
		}()
	}
	return l
}

func (l *loris) record() {
	l.mu.Lock()
	l.cut++
	l.last = time.Since(l.start)
	l.mu.Unlock()
}

// wait waits until every connection is cut or within passes since start.
func (l *loris) wait(within time.Duration) cutCount {
	done := make(chan struct{})
	go func() { l.done.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(l.start.Add(within))):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return cutCount{n: l.cut, took: l.last}
}

// postBig posts count bodies of size bytes (the start of a JSON message,
// never finished) to the relay route, each on a fresh connection, and
// counts the statuses (-1: the connection was cut before an answer).
func postBig(t *testing.T, h *netlab.Host, addr string, count, size int) map[int]int {
	out := map[int]int{}
	body := bytes.Repeat([]byte("a"), size)
	copy(body, `{"payload":"`)
	for range count {
		code := func() int {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := h.DialContext(ctx, "tcp", addr)
			if err != nil {
				return -1
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			go func() {
				fmt.Fprintf(c, "POST /relay/v1/messages/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
					strings.ReplaceAll(netlab.PubsubTopic, "/", "%2F"), len(body))
				c.Write(body)
			}()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return -1
			}
			resp.Body.Close()
			return resp.StatusCode
		}()
		out[code]++
	}
	return out
}

// probeStats are a good client's /health requests.
type probeStats struct {
	mu      sync.Mutex
	n, fail int
	slowest time.Duration
}

func (p *probeStats) run(ctx context.Context, n *netlab.Node) {
	for ctx.Err() == nil {
		start := time.Now()
		_, err := n.Health()
		took := time.Since(start)
		p.mu.Lock()
		p.n++
		if err != nil {
			p.fail++
		}
		p.slowest = max(p.slowest, took)
		p.mu.Unlock()
		time.Sleep(probeEvery)
	}
}

func (p *probeStats) get() (n, fail int, slowest time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, p.fail, p.slowest
}
