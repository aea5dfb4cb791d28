//go:build linux

// Package faults runs courier nodes (the real binary) in network
// namespaces with latency, loss, partitions, crashes, full disks, floods
// and bad HTTP clients, records what was published, delivered and
// archived, and checks that nothing was lost or duplicated. It needs root,
// iproute2 and iptables (internal/netlab); without them it skips, and
// under CI=true it fails.
//
//	go test -run TestFaults -v ./interop/faults/
//
// Each scenario runs in a lab of its own, and the scenarios run at the
// same time (labs share nothing), so the suite takes about as long as the
// longest one. Each logs one FIGURES line; docs/reliability.md reports
// them.
package faults

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
	"github.com/couriernet/courier/message"
)

// scenario is one fault scenario, run with the built binary.
type scenario struct {
	name string
	run  func(t *testing.T, bin string)
}

var scenarios = []scenario{
	{"Mesh12", testMesh12},
	{"Partition", testPartition},
	{"Kill9", testKills},
	{"Flood", testFlood},
	{"FullDisk", testFullDisk},
	{"BadClients", testBadClients},
	{"PeerMemory", testPeerMemory},
	{"Pause", testPause},
}

// TestFaults builds the binary and runs every scenario concurrently:
// t.Run from one goroutine per scenario, so go test's -parallel limit
// (GOMAXPROCS) does not serialize them.
func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault scenarios: minutes of node processes in network namespaces")
	}
	netlab.Require(t)
	bin := buildCourier(t)
	var wg sync.WaitGroup
	for _, s := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(s.name, func(t *testing.T) { s.run(t, bin) })
		}()
	}
	wg.Wait()
}

// buildCourier builds cmd/courier (without -race: the race detector runs
// in the test process) into a temporary directory.
func buildCourier(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "courier")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/couriernet/courier/cmd/courier")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// member is a lab host with the key its node will use.
type member struct {
	host *netlab.Host
	key  string
	id   string
	dir  string
	node *netlab.Node
}

// newMembers adds n hosts named prefix0.. on segments of their own, each
// with a node key and a data directory.
func newMembers(t *testing.T, l *netlab.Lab, prefix string, n int) []*member {
	t.Helper()
	ms := make([]*member, n)
	for i := range ms {
		key, id, err := netlab.NodeKey()
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = &member{host: l.AddHost(fmt.Sprintf("%s%d", prefix, i)), key: key, id: id, dir: t.TempDir()}
	}
	return ms
}

func (m *member) addr() string { return m.host.Multiaddr(m.id) }

// ringEdges links member i to i+1 and i+chord (mod n): a ring with
// chords, every node of degree 4 for n > 2*chord.
func ringEdges(n, chord int) [][2]int {
	var e [][2]int
	for i := range n {
		e = append(e, [2]int{i, (i + 1) % n})
		if chord > 1 && n > 2*chord {
			e = append(e, [2]int{i, (i + chord) % n})
		}
	}
	return e
}

// startMesh starts a node on every member, each with --staticnode for the
// members it dials by edges, plus flags.
func startMesh(t *testing.T, bin string, ms []*member, edges [][2]int, flags ...string) {
	t.Helper()
	dials := make([][]string, len(ms))
	for _, e := range edges {
		dials[e[0]] = append(dials[e[0]], "--staticnode", ms[e[1]].addr())
	}
	for i, m := range ms {
		args := append([]string{"--nodekey", m.key}, dials[i]...)
		m.node = m.host.StartNode(bin, m.dir, append(args, flags...)...)
	}
}

func nodesOf(ms []*member) []*netlab.Node {
	out := make([]*netlab.Node, len(ms))
	for i, m := range ms {
		out[i] = m.node
	}
	return out
}

// waitMesh waits until every node has at least minMesh gossipsub mesh
// peers on the lab's topic.
func waitMesh(t *testing.T, nodes []*netlab.Node, minMesh int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, timeout, "gossipsub meshes", func() (bool, string) {
		for _, n := range nodes {
			k, err := n.MeshPeers()
			if err != nil || k < minMesh {
				return false, fmt.Sprintf("%s: %d mesh peers (%v)", n.Host.Name, k, err)
			}
		}
		return true, ""
	})
	return time.Since(start)
}

// waitFor polls cond every 200 ms until it holds, failing the test with
// its last explanation after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, why := eventually(timeout, cond); !ok {
		t.Fatalf("%s: not within %v: %s", what, timeout, why)
	}
}

// eventually polls cond every 200 ms until it holds or timeout passes,
// and returns its last answer.
func eventually(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok || time.Now().After(deadline) {
			return ok, why
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// archives reads every node's archive listing.
func archives(nodes []*netlab.Node) (map[string][]message.Hash, error) {
	out := map[string][]message.Hash{}
	for _, n := range nodes {
		hs, err := n.StoreHashes()
		if err != nil {
			return nil, err
		}
		out[n.Host.Name] = hs
	}
	return out, nil
}

// checkArchives checks that every node's archive equals want: it fails
// the test for each that does not and returns the per-node checks.
func checkArchives(t *testing.T, nodes []*netlab.Node, want map[message.Hash]bool) []netlab.SetCheck {
	t.Helper()
	arcs, err := archives(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var out []netlab.SetCheck
	for _, n := range nodes {
		c := netlab.CheckSet(n.Host.Name, want, arcs[n.Host.Name])
		out = append(out, c)
		if !c.OK() {
			t.Errorf("archive %s", c)
		}
	}
	return out
}

// hops returns, for every ordered pair of members, the shortest path in
// links over edges (for comparing latency with hop count).
func hops(n int, edges [][2]int) [][]int {
	adj := make([][]int, n)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	d := make([][]int, n)
	for s := range n {
		d[s] = make([]int, n)
		for i := range d[s] {
			d[s][i] = -1
		}
		d[s][s] = 0
		q := []int{s}
		for len(q) > 0 {
			u := q[0]
			q = q[1:]
			for _, v := range adj[u] {
				if d[s][v] < 0 {
					d[s][v] = d[s][u] + 1
					q = append(q, v)
				}
			}
		}
	}
	return d
}

func meanHops(d [][]int) (mean float64, most int) {
	sum, k := 0, 0
	for i := range d {
		for j := range d[i] {
			if i != j {
				sum += d[i][j]
				k++
				most = max(most, d[i][j])
			}
		}
	}
	return float64(sum) / float64(k), most
}
