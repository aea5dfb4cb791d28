//go:build linux

package faults

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
)

// testFullDisk: a relay node r and two store nodes with store-sync, in a
// line r - s0 - s1 over 5 ms links, so s1 hears r only through s0. s0's
// data directory is a 64 MiB tmpfs. After 20 messages the disk is
// filled and r publishes 100 more: s0 keeps relaying (s1 delivers all
// 100), refuses the archive writes with a counted error, a log line and a
// /health entry; once the space is freed, store-sync brings its archive
// to every message.
func testFullDisk(t *testing.T, bin string) {
	const rate = 5.0
	l := netlab.New(t, netlab.Config{Name: "disk", Link: netlab.LinkSpec{Delay: 5 * time.Millisecond}})
	ms := newMembers(t, l, "d", 3) // d0 relay, d1 store on the small disk, d2 store
	disk := l.Disk("d1", 64<<20)
	ms[1].dir = disk.Path
	dials := [][]string{{"--staticnode", ms[1].addr()}, {"--staticnode", ms[2].addr()}, nil}
	for i, m := range ms {
		flags := append([]string{"--nodekey", m.key}, dials[i]...)
		if i > 0 {
			flags = append(flags, syncFlags...)
		}
		m.node = m.host.StartNode(bin, m.dir, flags...)
	}
	r, s0, s1 := ms[0].node, ms[1].node, ms[2].node
	waitMesh(t, []*netlab.Node{r, s1}, 1, 30*time.Second)

	h := netlab.NewHistory()
	stop := h.Poll([]*netlab.Node{s1}, 100*time.Millisecond)
	h.PublishLoop(t, "disk", []*netlab.Node{r}, 20, 512, rate)
	waitArchives(t, []*netlab.Node{s0, s1}, h.Set(), 10*time.Second)
	errorsBefore := archiveErrors(t, s0)

	filled, err := disk.Fill()
	if err != nil {
		t.Fatal(err)
	}
	fullAt := time.Now()
	t.Logf("filled s0's disk with %d bytes", filled)
	if failed := h.PublishLoop(t, "disk", []*netlab.Node{r}, 100, 512, rate); failed > 0 {
		t.Errorf("%d publishes refused", failed)
	}
	waitFor(t, 10*time.Second, "s1 delivers all, through s0", func() (bool, string) {
		c := h.DeliveryCheck("d2")
		return c.Lost == 0, c.String()
	})
	stop()
	if s0.Exited() {
		t.Fatal("s0 exited on a full disk")
	}
	time.Sleep(2 * time.Second) // the archive's writer commits in batches
	errorsFull := archiveErrors(t, s0)
	health, herr := s0.Health()
	storeHealth := "absent"
	for _, p := range health.ProtocolsHealth {
		if st, ok := p["Store"]; ok { // nwaku's shape: {"Store": "READY", "desc": "..."}
			storeHealth = fmt.Sprintf("%s %q", st, p["desc"])
		}
	}
	logLine := ""
	reFull := regexp.MustCompile(`(?i)no space left|disk (is )?full|ENOSPC`)
	for _, line := range s0.Lines() {
		if reFull.MatchString(line) {
			logLine = line
			break
		}
	}
	arc0, err := s0.StoreHashes()
	if err != nil {
		t.Errorf("s0's archive while full: %v", err)
	}
	heldFull := len(arc0)

	if err := disk.Free(); err != nil {
		t.Fatal(err)
	}
	freedAt := time.Now()
	conv := waitArchives(t, []*netlab.Node{s0, s1}, h.Set(), 2*syncInterval+relayJitter+20*time.Second)
	fig := netlab.Figures{Scenario: "FullDisk", Published: h.Count(), Delivered: h.Deliveries(), Converge: conv, MemPeak: netlab.PeakRSS(t, nodesOf(ms))}
	for _, c := range checkArchives(t, []*netlab.Node{s0, s1}, h.Set()) {
		fig.Archived = max(fig.Archived, c.Got)
		fig.Lost += c.Lost
		fig.Dup += c.Duplicated
	}
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("s0 held %d while full for %v", heldFull, freedAt.Sub(fullAt).Round(time.Second)),
		fmt.Sprintf("archive errors counted %v -> %v", errorsBefore, errorsFull),
		fmt.Sprintf("health Store %s (%v)", storeHealth, herr),
		fmt.Sprintf("log line %q", truncate(logLine, 160)))
	t.Log(fig)
	if errorsFull <= errorsBefore {
		t.Errorf("s0 counted no archive error while its disk was full (%v before, %v after)", errorsBefore, errorsFull)
	}
	if logLine == "" {
		t.Errorf("s0 logged no line naming the full disk")
	}
	if !strings.HasPrefix(storeHealth, "NOT_READY") {
		t.Errorf("s0's /health Store entry while its disk was full: %s, want NOT_READY with a reason", storeHealth)
	}
}

// archiveErrors sums n's archive error counters (waku_archive_errors_total
// of every type).
func archiveErrors(t *testing.T, n *netlab.Node) float64 {
	t.Helper()
	m, err := n.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "waku_archive_errors_total") {
			sum += v
		}
	}
	return sum
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
