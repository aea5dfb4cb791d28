//go:build linux

package faults

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
	"github.com/couriernet/courier/message"
)

// Store-sync settings of the scenarios that repair archives: a 10 s
// interval (nwaku's default is 300 s) and the default relay jitter of
// 20 s, so a round reconciles only messages at least 20 s old.
const (
	syncInterval = 10 * time.Second
	relayJitter  = 20 * time.Second
)

var syncFlags = []string{"--store", "--store-sync", "--store-sync-interval", strconv.Itoa(int(syncInterval / time.Second))}

// partitionJitter is Partition's relay jitter, a test setting like the
// interval: 2 s, which the lab's 20 ms ± 5 ms links and gossipsub's 1 s
// heartbeat leave ample room, where nwaku's default of 20 s is meant for
// the Internet's links.
const partitionJitter = 2 * time.Second

// waitArchives waits until every node's archive equals want and returns
// how long that took; after timeout it fails the test (not fatally, so
// the scenario still reports its figures) and returns timeout.
func waitArchives(t *testing.T, nodes []*netlab.Node, want map[message.Hash]bool, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ok, why := eventually(timeout, func() (bool, string) {
		arcs, err := archives(nodes)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes {
			if c := netlab.CheckSet(n.Host.Name, want, arcs[n.Host.Name]); !c.OK() {
				return false, c.String()
			}
		}
		return true, ""
	})
	if !ok {
		t.Errorf("archives did not converge within %v: %s", timeout, why)
	}
	return time.Since(start)
}

// testPartition: six store nodes with store-sync (interval 10 s, relay
// jitter partitionJitter), 20 ms links; halves {p0,p1,p2} and {p3,p4,p5},
// each fully linked inside, joined by three links, each dialled by the
// left node (--staticnode). Both halves publish (4 per second in all) for
// 10 s, then through a 2-minute partition, then 10 s after the heal.
// Within two sync intervals of the heal every archive must hold every
// message once, and the messages at least the relay jitter older than the
// heal too; the times are measured while the publishing goes on, polling
// from the heal. The partition outlasts the dead connections, so each
// left node redials its peer across, and store-sync syncs with a peer it
// dials once the relay jitter has passed (storesync.Config.Interval): that
// round repairs both ends, whatever the phase of the periodic rounds.
func testPartition(t *testing.T, bin string) {
	const rate = 4.0
	l := netlab.New(t, netlab.Config{Name: "part", Link: netlab.LinkSpec{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}})
	ms := newMembers(t, l, "p", 6)
	edges := [][2]int{{0, 1}, {0, 2}, {1, 2}, {3, 4}, {3, 5}, {4, 5}, {0, 3}, {1, 4}, {2, 5}}
	startMesh(t, bin, ms, edges, append(slices.Clip(syncFlags), "--store-sync-relay-jitter", strconv.Itoa(int(partitionJitter/time.Second)))...)
	nodes := nodesOf(ms)
	waitMesh(t, nodes, 3, 60*time.Second)
	left, right := []*netlab.Host{ms[0].host, ms[1].host, ms[2].host}, []*netlab.Host{ms[3].host, ms[4].host, ms[5].host}

	h := netlab.NewHistory()
	publish := func(d time.Duration) {
		if failed := h.PublishLoop(t, "part", nodes, int(d.Seconds()*rate), 512, rate); failed > 0 {
			t.Errorf("%d publishes refused", failed)
		}
	}
	publish(10 * time.Second)
	l.Partition(left, right)
	t.Logf("partitioned after %d messages", h.Count())
	publish(2 * time.Minute)
	healAt := time.Now()
	before := h.Set()
	old := map[message.Hash]bool{}
	for hash := range before {
		if p, _ := h.PublishedAt(hash); healAt.Sub(p.At) >= partitionJitter {
			old[hash] = true
		}
	}
	l.Heal()
	t.Logf("healed after %d messages (%d of them %v older than the heal)", len(before), len(old), partitionJitter)
	bound := 2 * syncInterval
	watch := watchArchives(nodes, healAt, bound+5*time.Second, old, before)
	publish(10 * time.Second)

	all := h.Set()
	waitArchives(t, nodes, all, time.Until(healAt.Add(bound+5*time.Second)))
	allConv := time.Since(healAt)
	conv := watch()
	fig := netlab.Figures{Scenario: "Partition", Published: h.Count(), Converge: allConv}
	for _, c := range checkArchives(t, nodes, all) {
		fig.Archived = max(fig.Archived, c.Got)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
	}
	if allConv > bound {
		t.Errorf("all messages converged %v after the heal, want within two sync intervals (%v)", allConv, bound)
	}
	for i, what := range []string{fmt.Sprintf("messages %v older than the heal", partitionJitter), "messages published before the heal"} {
		if conv[i] < 0 || conv[i] > bound {
			t.Errorf("%s: converged %v after the heal, want within two sync intervals (%v; negative: not seen)", what, conv[i], bound)
		}
	}
	fig.MemPeak = netlab.PeakRSS(t, nodes)
	fig.Extra = append(fig.Extra, fmt.Sprintf("relay jitter %v; %d published before the heal converged %v after it, the %d of them older than %v %v after it",
		partitionJitter, len(before), conv[1].Round(100*time.Millisecond), len(old), partitionJitter, conv[0].Round(100*time.Millisecond)))
	t.Log(fig)
	if t.Failed() {
		logRounds(t, nodes, healAt)
	}
}

// logRounds logs each node's store-sync and static node lines, to show
// when the halves reconnected and which rounds repaired what.
func logRounds(t *testing.T, nodes []*netlab.Node, healAt time.Time) {
	t.Logf("healed at %s", healAt.UTC().Format("15:04:05.000"))
	for _, n := range nodes {
		for _, line := range n.Proc.Lines() {
			if strings.Contains(line, "store-sync") || strings.Contains(line, "static node") {
				t.Logf("%s: %s", n.Host.Name, line)
			}
		}
	}
}

// watchArchives polls the archives of nodes every 200 ms from now on,
// for at most within after from, until every node holds every hash of
// each set once (other messages may be there too). The function it
// returns waits for the polling to end and gives, for each set, the time
// after from at which a poll first saw that, or -1.
func watchArchives(nodes []*netlab.Node, from time.Time, within time.Duration, sets ...map[message.Hash]bool) func() []time.Duration {
	got := make([]time.Duration, len(sets))
	for i := range got {
		got[i] = -1
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for left := len(sets); left > 0 && time.Since(from) < within; time.Sleep(200 * time.Millisecond) {
			arcs, err := archives(nodes)
			if err != nil {
				continue
			}
			at := time.Since(from)
			for i, want := range sets {
				if got[i] < 0 && holdAll(nodes, arcs, want) {
					got[i] = at
					left--
				}
			}
		}
	}()
	return func() []time.Duration {
		<-done
		return got
	}
}

// holdAll reports whether every node's archive listing holds every hash
// of want, none twice.
func holdAll(nodes []*netlab.Node, arcs map[string][]message.Hash, want map[message.Hash]bool) bool {
	for _, n := range nodes {
		if c := netlab.CheckSet(n.Host.Name, want, arcs[n.Host.Name]); c.Lost > 0 || c.Duplicated > 0 {
			return false
		}
	}
	return true
}

// testKills: four store nodes with store-sync and two relay nodes that
// publish (8 per second) over 10 ms links, every node linked to every
// other. Every 20 s a random store node is killed with SIGKILL and
// restarted 2 s later on its data directory, six times. Every message a
// store node's archive listed before it was killed must be in its
// archive when it is back, and after convergence every store node holds
// every published message once.
func testKills(t *testing.T, bin string) {
	const (
		kills = 6
		every = 20 * time.Second
		rate  = 8.0
	)
	l := netlab.New(t, netlab.Config{Name: "kill", Link: netlab.LinkSpec{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}})
	stores := newMembers(t, l, "s", 4)
	pubs := newMembers(t, l, "r", 2)
	all := append(append([]*member(nil), stores...), pubs...)
	var edges [][2]int
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			edges = append(edges, [2]int{i, j})
		}
	}
	// Only the store nodes dial (with --staticnode, redialled after a
	// restart); the relay nodes dial each other.
	dials := make([][]string, len(all))
	for _, e := range edges {
		dials[e[0]] = append(dials[e[0]], "--staticnode", all[e[1]].addr())
	}
	for i, m := range all {
		flags := append([]string{"--nodekey", m.key}, dials[i]...)
		if i < len(stores) {
			flags = append(flags, syncFlags...)
		}
		m.node = m.host.StartNode(bin, m.dir, flags...)
	}
	storeNodes, pubNodes := nodesOf(stores), nodesOf(pubs)
	waitMesh(t, nodesOf(all), 4, 60*time.Second)

	h := netlab.NewHistory()
	var wg sync.WaitGroup
	wg.Add(1)
	duration := time.Duration(kills+1) * every
	go func() {
		defer wg.Done()
		if failed := h.PublishLoop(t, "kill", pubNodes, int(duration.Seconds()*rate), 512, rate); failed > 0 {
			t.Errorf("%d publishes refused", failed)
		}
	}()
	acked := map[message.Hash]bool{}
	var killed []string
	var peakBefore int64
	for i := range kills {
		time.Sleep(every)
		peakBefore = max(peakBefore, netlab.PeakRSS(t, storeNodes))
		victim := storeNodes[rand.IntN(len(storeNodes))]
		listed, err := victim.StoreHashes()
		if err != nil {
			t.Fatalf("kill %d: archive of %s before the kill: %v", i+1, victim.Host.Name, err)
		}
		mine := map[message.Hash]bool{}
		for _, x := range listed {
			acked[x], mine[x] = true, true
		}
		if err := victim.Kill9(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := victim.Restart(); err != nil {
			t.Fatalf("restart %s: %v", victim.Host.Name, err)
		}
		back, err := victim.StoreHashes()
		if err != nil {
			t.Fatalf("archive of %s after its restart: %v", victim.Host.Name, err)
		}
		if c := netlab.CheckSet(victim.Host.Name, mine, back); c.Lost > 0 || c.Duplicated > 0 {
			t.Errorf("kill %d: %s lost what it listed before kill -9: %s", i+1, victim.Host.Name, c)
		}
		killed = append(killed, fmt.Sprintf("%s(%d)", victim.Host.Name, len(mine)))
		t.Logf("kill %d: %s, which listed %d messages", i+1, victim.Host.Name, len(mine))
	}
	wg.Wait()
	endAt := time.Now()
	want := h.Set()
	for x := range acked {
		if !want[x] {
			t.Errorf("an archive listed %s, which was never published", x)
		}
	}
	waitArchives(t, storeNodes, want, 2*syncInterval+relayJitter+30*time.Second)
	fig := netlab.Figures{Scenario: "Kill9", Published: h.Count(), Converge: time.Since(endAt)}
	for _, c := range checkArchives(t, storeNodes, want) {
		fig.Archived = max(fig.Archived, c.Got)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
	}
	fig.MemPeak = max(peakBefore, netlab.PeakRSS(t, storeNodes))
	fig.Extra = append(fig.Extra, fmt.Sprintf("kills %v, %d acknowledged before a kill", killed, len(acked)))
	t.Log(fig)
}
