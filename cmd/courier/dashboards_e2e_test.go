//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/couriernet/courier/internal/pgtest"
)

// TestDashboards runs a real Prometheus (Debian's prometheus package)
// scraping two courier nodes with the scrape configuration deploy/ ships,
// while the nodes relay, archive (A in Postgres, B in the embedded
// archive), store-sync, and serve each other store, filter, lightpush and
// peer exchange through their REST APIs, and two RLN relay nodes on the
// membership contract of a local chain (rlntestchain) that publish with
// proofs and refuse a duplicate, a proof of other content and a message
// without a proof (dashboards_rln_e2e_test.go; without the circuit files
// or Node.js they are left out, and their expressions may stay empty,
// unless CI=true, which fails the test). Then it evaluates, through
// Prometheus's HTTP API, every PromQL expression of nwaku v0.38.1's
// single-node, fleet and RLN dashboards and of courier's own dashboard,
// with the Grafana variables substituted as Grafana would, and checks
// that each returns data unless dashboardGaps says why it cannot; an
// expression listed there that returns data fails the test too, so the
// list stays true.
//
//	go test -run TestDashboards -v ./cmd/courier/
//
// The nwaku expressions come from testdata/nwaku-dashboards.jsonl;
// with COURIER_NWAKU_DASHBOARDS naming a folder holding nwaku's
// metrics/*.json, they are read from there and the file is rewritten.
func TestDashboards(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds the binary and runs node and Prometheus processes")
	}
	promBin := requirePrometheus(t)
	exprs := loadDashboards(t)
	chain := startTestChain(t) // built while courier is
	bin := buildCourier(t)
	dbURL := pgtest.DB(t)

	start := time.Now()
	common := []string{"--store", "--store-sync", "--store-sync-interval", "5", "--store-sync-relay-jitter", "1",
		"--filter", "--lightpush", "--peer-exchange", "--peer-persistence",
		"--metrics-server", "--metrics-server-address", "127.0.0.1", "--metrics-server-port", "0"}
	a := startNode(t, bin, "A", append([]string{"--store-message-db-url", dbURL}, common...)...)
	b := startNode(t, bin, "B", append([]string{"--staticnode", a.addr, "--storenode", a.addr,
		"--filternode", a.addr, "--lightpushnode", a.addr, "--peer-exchange-node", a.addr}, common...)...)
	waitFor(t, 20*time.Second, "A and B connected", func() (bool, string) {
		ps, err := a.peers()
		return err == nil && ps[b.id].Connected == "Connected", fmt.Sprint(ps, err)
	})
	targets := []scrapeTarget{
		{addr: strings.TrimPrefix(a.metrics, "http://"), instance: "node-01.local.courier"},
		{addr: strings.TrimPrefix(b.metrics, "http://"), instance: "node-02.local.courier"},
	}
	t.Logf("[%5.1fs] A and B up", time.Since(start).Seconds())
	rlnNodes := startRLNPair(t, bin, chain)
	if rlnNodes.off == "" {
		targets = append(targets,
			scrapeTarget{addr: strings.TrimPrefix(rlnNodes.c.metrics, "http://"), instance: "node-03.local.courier"},
			scrapeTarget{addr: strings.TrimPrefix(rlnNodes.d.metrics, "http://"), instance: "node-04.local.courier"})
		t.Logf("[%5.1fs] RLN nodes C and D up", time.Since(start).Seconds())
	}
	prom := startPrometheus(t, promBin, targets)
	t.Logf("[%5.1fs] Prometheus up", time.Since(start).Seconds())
	if rlnNodes.off == "" {
		rlnNodes.run(t)
		t.Logf("[%5.1fs] RLN messages done", time.Since(start).Seconds())
	}

	ctx, cancel := context.WithTimeout(context.Background(), dashboardRun)
	defer cancel()
	w := &workload{t: t, a: a, b: b}
	w.run(ctx)
	t.Logf("[%5.1fs] workload done: %s", time.Since(start).Seconds(), w.summary())
	// Two more scrapes, so that the last requests are in Prometheus.
	time.Sleep(2 * promScrapeInterval)

	vars := prom.grafanaVars(t)
	gaps := dashboardGaps
	if rlnNodes.off != "" {
		gaps = append([]gapRule{{prefix: "waku_rln_", why: "RLN relay nodes not started: " + rlnNodes.off}}, gaps...)
	}
	results := map[string]map[string]int{} // dashboard -> "data"/"empty"/"listed"
	for _, e := range exprs {
		q := substitute(e.Expr, e.Dashboard, vars)
		n, err := prom.query(q)
		if err != nil {
			t.Errorf("%s %q: %s: %v", e.Dashboard, e.Panel, q, err)
			continue
		}
		gap, listed := gapOf(e, gaps)
		if results[e.Dashboard] == nil {
			results[e.Dashboard] = map[string]int{}
		}
		switch {
		case n > 0 && !listed:
			results[e.Dashboard]["data"]++
		case n > 0 && listed:
			t.Errorf("%s %q returns data, but dashboardGaps says %q: %s", e.Dashboard, e.Panel, gap, q)
		case !listed:
			t.Errorf("%s %q returns no data: %s", e.Dashboard, e.Panel, q)
		default:
			results[e.Dashboard]["empty: "+gap]++
		}
	}
	for _, d := range slices.Sorted(mapsKeys(results)) {
		total := 0
		for _, n := range results[d] {
			total += n
		}
		t.Logf("%s: %d of %d expressions return data", d, results[d]["data"], total)
		for _, k := range slices.Sorted(mapsKeys(results[d])) {
			if k != "data" {
				t.Logf("    %2d %s", results[d][k], k)
			}
		}
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// dashboardRun is how long the workload runs before the expressions are
// evaluated: long enough for the dashboards' 1-minute windows to hold
// several samples and for store-sync rounds every 5 s.
const dashboardRun = 45 * time.Second

// promScrapeInterval is the test's scrape interval; the shipped
// configuration scrapes every 15 s.
const promScrapeInterval = 2 * time.Second

// rateInterval is what Grafana puts for $__rate_interval: four scrape
// intervals at least.
const rateInterval = "30s"

// dashboardExpr is one query of a dashboard panel.
type dashboardExpr struct {
	Dashboard string `json:"dashboard"`
	Panel     string `json:"panel"`
	Expr      string `json:"expr"`
	Hidden    bool   `json:"hidden,omitempty"`
}

// nwakuDashboards are the dashboards of nwaku v0.38.1's metrics/ folder the
// test evaluates, with their SHA-256: the network-monitor ones watch a
// network, not a node.
var nwakuDashboards = map[string]string{
	"waku-single-node-dashboard.json":           "24ed5cbfe249d6ec07b60ddf30387a9d369e5b4a023b7d6c988837c352cb27f6",
	"waku-fleet-dashboard.json":                 "a27bdb74aef10d1e3eadc5ebde56b4ea2a3c7615e90a09c6b82f78c4cc9000df",
	"waku-rln-relay-single-node-dashboard.json": "22efacdab5e90b89f0a0afefaa1f49f7db4b4e796aac43d65369bf874f71e3ba",
	"waku-rln-relay-fleet-dashboard.json":       "b7ea4a5b2106d3c1c84e922a7da682ff88fbd7be6bf3092e48cd6b7801e5dc96",
}

const dashboardsExtract = "testdata/nwaku-dashboards.jsonl"

// loadDashboards returns the expressions of nwaku's dashboards and of the
// dashboards deploy/ ships.
func loadDashboards(t *testing.T) []dashboardExpr {
	t.Helper()
	var exprs []dashboardExpr
	if dir := os.Getenv("COURIER_NWAKU_DASHBOARDS"); dir != "" {
		for _, name := range slices.Sorted(mapsKeys(nwakuDashboards)) {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != nwakuDashboards[name] {
				t.Fatalf("%s: SHA-256 %x, not nwaku v0.38.1's", name, sum)
			}
			exprs = append(exprs, grafanaExprs(t, name, raw)...)
		}
		var buf bytes.Buffer
		for _, e := range exprs {
			line, _ := json.Marshal(e)
			buf.Write(append(line, '\n'))
		}
		if err := os.WriteFile(dashboardsExtract, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		f, err := os.Open(dashboardsExtract)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e dashboardExpr
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("%s: %v", dashboardsExtract, err)
			}
			exprs = append(exprs, e)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	own, _ := filepath.Glob("../../deploy/monitoring/grafana/dashboards/*.json")
	for _, path := range own {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		exprs = append(exprs, grafanaExprs(t, filepath.Base(path), raw)...)
	}
	return exprs
}

// grafanaExprs returns the query expressions of a Grafana dashboard's
// panels, nested rows included.
func grafanaExprs(t *testing.T, name string, raw []byte) []dashboardExpr {
	t.Helper()
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
			Hide bool   `json:"hide"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []dashboardExpr
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, dashboardExpr{Dashboard: name, Panel: p.Title, Expr: tg.Expr, Hidden: tg.Hide})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// ---------------------------------------------------------------------------
// What stays empty, and why

// gapRule names what a dashboard asks for that courier does not serve,
// and why: a metric name or name prefix, or a snippet of the expression.
type gapRule struct{ metric, prefix, snippet, why string }

// dashboardGaps are the expressions that cannot return data. Every other
// expression must; one listed here that returns data fails the test too.
var dashboardGaps = []gapRule{
	{prefix: "netdata_", why: "netdata's host metrics, from a netdata agent beside the node"},
	{prefix: "nim_gc_", why: "the Nim runtime's garbage collector (Go's is go_memstats_*, go_gc_*)"},
	{metric: "waku_rln_valid_messages_total_sum", why: "a histogram of older nwakus: v0.38.1 declares a counter, served as waku_rln_valid_messages_total_total{shard}, so the panel is empty on nwaku too"},
	{metric: "waku_rln_valid_messages_total_count", why: "a histogram of older nwakus: v0.38.1 declares a counter, served as waku_rln_valid_messages_total_total{shard}, so the panel is empty on nwaku too"},
	{metric: "waku_rln_valid_messages_total_bucket", why: "a histogram of older nwakus: v0.38.1 declares a counter, served as waku_rln_valid_messages_total_total{shard}, so the panel is empty on nwaku too"},
	{metric: "waku_rln_relay_mounting_duration_seconds", why: "a name nwaku v0.38.1 no longer declares"},
	{metric: "waku_rln_registration_duration_seconds", why: "a name nwaku v0.38.1 no longer declares"},
	{metric: "waku_rln_membership_insertion_duration_seconds", why: "nwaku v0.38.1 declares this gauge but never sets it (it reads 0 there); courier serves no constant"},
	{prefix: "waku_swap_", why: "swap, which nwaku v0.38.1 no longer has"},
	{prefix: "waku_peer_swap_", why: "swap, which nwaku v0.38.1 no longer has"},
	{prefix: "waku_legacy_", why: "legacy store and filter, which nwaku v0.38.1 no longer has"},
	{snippet: `service =~"/vac/waku/store/2`, why: "store v2, which nwaku v0.38.1 no longer has"},
	{snippet: `service=~"/vac/waku/store/2`, why: "store v2, which nwaku v0.38.1 no longer has"},
	{metric: "waku_store_messages", why: "a name nwaku v0.38.1 no longer declares (now waku_archive_messages)"},
	{metric: "waku_store_query_duration_seconds_bucket", why: "a name nwaku v0.38.1 no longer declares (now waku_archive_query_duration_seconds)"},
	{metric: "waku_store_insert_duration_seconds_bucket", why: "a name nwaku v0.38.1 no longer declares (now waku_archive_insert_duration_seconds)"},
	{metric: "waku_node_filters", why: "a name nwaku v0.38.1 no longer declares"},
	{metric: "waku_filter_messages", why: "a name nwaku v0.38.1 no longer declares"},
	{metric: "waku_filter_subscribers", why: "a name nwaku v0.38.1 no longer declares (now waku_filter_subscriptions)"},
	{snippet: `instance=~"bridge`, why: "the chat2bridge's panels"},
	{metric: "waku_bridge_transfers_total", why: "the chat2bridge's panels"},
	{metric: "libp2p_autonat_reachability_confidence", why: "nim-libp2p's AutoNAT client; go-libp2p's runs for public addresses only and reports as libp2p_autonat_reachability_status_confidence"},
	{snippet: `phase="sendQuery"`, why: "nwaku v0.38.1 names this phase sendToDBQuery, so the panel is empty on nwaku too; pgx does not time the send apart"},
}

// gapOf says why e cannot return data, if one of gaps says it cannot.
func gapOf(e dashboardExpr, gaps []gapRule) (string, bool) {
	metrics := exprMetrics(e.Expr)
	for _, g := range gaps {
		if g.snippet != "" && strings.Contains(e.Expr, g.snippet) {
			return g.why, true
		}
		for _, m := range metrics {
			if m == g.metric || g.prefix != "" && strings.HasPrefix(m, g.prefix) {
				return g.why, true
			}
		}
	}
	return "", false
}

var (
	reString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	reMatchers = regexp.MustCompile(`\{[^}]*\}`)
	reRange    = regexp.MustCompile(`\[[^\]]*\]`)
	reGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	reIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

var promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true}

// exprMetrics returns the metric names a PromQL expression selects.
func exprMetrics(expr string) []string {
	s := reString.ReplaceAllString(expr, `""`)
	s = reMatchers.ReplaceAllString(s, " ")
	s = reRange.ReplaceAllString(s, " ")
	s = reGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, m := range reIdent.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promqlWords[m] {
			continue // a function or an aggregation
		}
		if _, err := strconv.ParseFloat(m, 64); err == nil {
			continue
		}
		out = append(out, m)
	}
	return out
}

// substitute replaces the Grafana variables of expr as Grafana would with
// the dashboards' defaults: host is the dashboard's default, dc and fleet
// every value Prometheus has (their "All"), $__rate_interval four scrape
// intervals or more.
func substitute(expr, dashboard string, vars map[string]string) string {
	host := "node-.*"
	if strings.Contains(dashboard, "fleet") {
		host = ".*"
	}
	r := strings.NewReplacer("[[host]]", host, "$host", host, "$instance", ".*",
		"[[dc:pipe]]", vars["datacenter"], "[[fleet:pipe]]", vars["fleet"],
		"$__rate_interval", rateInterval)
	return r.Replace(expr)
}

// ---------------------------------------------------------------------------
// Prometheus

type scrapeTarget struct{ addr, instance string }

type promProc struct {
	*proc
	base string
}

// requirePrometheus returns the path of the prometheus binary, skipping the
// test without one, or failing it when CI=true.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err == nil {
		return path
	}
	const why = "prometheus not found on PATH: install it with `apt-get install -y --no-install-recommends prometheus` (Debian)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// startPrometheus runs Prometheus on a free loopback port with the courier
// job of deploy/monitoring/prometheus.yml, its targets replaced by
// targets and its interval by promScrapeInterval, and waits until it is
// ready.
func startPrometheus(t *testing.T, bin string, targets []scrapeTarget) *promProc {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/monitoring/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "check", "config", "--syntax-only", "../../deploy/monitoring/prometheus.yml").CombinedOutput(); err != nil {
			t.Fatalf("promtool check config deploy/monitoring/prometheus.yml: %v\n%s", err, out)
		}
	}
	var cfg struct {
		Global        map[string]any `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string          `yaml:"targets"`
				Labels  map[string]string `yaml:"labels"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("deploy/monitoring/prometheus.yml: %v", err)
	}
	var labels map[string]string
	for _, j := range cfg.ScrapeConfigs {
		if j.JobName == "courier" && len(j.StaticConfigs) > 0 {
			labels = j.StaticConfigs[0].Labels
		}
	}
	if labels == nil {
		t.Fatal("deploy/monitoring/prometheus.yml: no courier job")
	}
	var statics []map[string]any
	for _, tg := range targets {
		l := map[string]string{}
		for k, v := range labels {
			l[k] = v
		}
		l["instance"] = tg.instance
		statics = append(statics, map[string]any{"targets": []string{tg.addr}, "labels": l})
	}
	interval := promScrapeInterval.String()
	out, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": interval, "evaluation_interval": interval},
		"scrape_configs": []any{map[string]any{"job_name": "courier", "static_configs": statics}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, out, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &promProc{base: "http://" + addr}
	p.proc = startProcIn(t, "prometheus", dir, bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	waitFor(t, 30*time.Second, "Prometheus ready", func() (bool, string) {
		if p.exited() {
			t.Fatalf("prometheus exited: %v\n%s", p.waitErr, p.log)
		}
		code, body, err := httpDo(http.MethodGet, p.base+"/-/ready", nil)
		return err == nil && code == http.StatusOK, fmt.Sprint(code, string(body), err)
	})
	waitFor(t, 30*time.Second, "both targets scraped", func() (bool, string) {
		n, err := p.query(`up == 1`)
		return err == nil && n == len(targets), fmt.Sprint(n, err)
	})
	return p
}

// query evaluates q at the current time and returns the number of series
// (or 1 for a scalar) in its result.
func (p *promProc) query(q string) (int, error) {
	code, body, err := httpDo(http.MethodGet, p.base+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%d %s: %w", code, body, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%d: %s", code, r.Error)
	}
	if r.Data.ResultType == "scalar" {
		return 1, nil
	}
	return len(r.Data.Result), nil
}

// grafanaVars are the values of the dashboards' dc and fleet variables,
// label_values(libp2p_peers, datacenter) and label_values(libp2p_peers,
// fleet), joined with | as Grafana's :pipe format does.
func (p *promProc) grafanaVars(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, label := range []string{"datacenter", "fleet"} {
		body := mustHTTP(t, http.MethodGet, p.base+"/api/v1/label/"+label+"/values?match[]=libp2p_peers", nil)
		var r struct {
			Data []string `json:"data"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Data) == 0 {
			t.Fatalf("label_values(libp2p_peers, %s): %s %v", label, body, err)
		}
		out[label] = strings.Join(r.Data, "|")
	}
	return out
}

// ---------------------------------------------------------------------------
// The workload

// workload drives A and B through their REST APIs: both publish, B asks A
// for history, pushes through A with lightpush v3 and legacy, and
// subscribes with A's filter; A asks B for history.
type workload struct {
	t    *testing.T
	a, b *nodeProc

	mu     sync.Mutex
	counts map[string]int
}

func (w *workload) count(what string, code int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[string]int{}
	}
	key := what + " " + strconv.Itoa(code)
	if err != nil {
		key = what + " error"
	}
	w.counts[key]++
}

func (w *workload) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, k := range slices.Sorted(mapsKeys(w.counts)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, w.counts[k]))
	}
	return strings.Join(parts, ", ")
}

func (w *workload) call(what, method, u string, body any) {
	code, _, err := httpDo(method, u, body)
	w.count(what, code, err)
}

func (w *workload) run(ctx context.Context) {
	const ct = "/courier/1/dashboards/proto"
	sub := map[string]any{"requestId": "s1", "pubsubTopic": e2eTopic, "contentFilters": []string{ct}}
	w.call("filter subscribe", http.MethodPost, w.b.rest+"/filter/v2/subscriptions", sub)
	storeQuery := func(from, to *nodeProc) string {
		v := url.Values{"peerAddr": {to.addr}, "pubsubTopic": {e2eTopic}, "contentTopics": {ct},
			"includeData": {"true"}, "pageSize": {"5"}}
		return from.rest + "/store/v3/messages?" + v.Encode()
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		msg := func() restMessage {
			return restMessage{Payload: payloadOf(i, 100+i%2000), ContentTopic: ct, Timestamp: time.Now().UnixNano()}
		}
		w.call("A publish", http.MethodPost, w.a.rest+"/relay/v1/messages/"+escapedTopic, msg())
		w.call("B publish", http.MethodPost, w.b.rest+"/relay/v1/messages/"+escapedTopic, msg())
		if i%4 != 0 {
			continue
		}
		w.call("B store query to A", http.MethodGet, storeQuery(w.b, w.a), nil)
		w.call("A store query to B", http.MethodGet, storeQuery(w.a, w.b), nil)
		push := map[string]any{"pubsubTopic": e2eTopic, "message": msg()}
		w.call("B lightpush v3", http.MethodPost, w.b.rest+"/lightpush/v3/message", push)
		w.call("B lightpush v1", http.MethodPost, w.b.rest+"/lightpush/v1/message", push)
		// A shard A does not relay: A refuses it (waku_lightpush_errors).
		refused := map[string]any{"pubsubTopic": "/waku/2/rs/0/5", "message": msg()}
		w.call("B lightpush v1 to an unrelayed shard", http.MethodPost, w.b.rest+"/lightpush/v1/message", refused)
		w.call("B filter ping", http.MethodGet, w.b.rest+"/filter/v2/subscriptions/p"+strconv.Itoa(i), nil)
		if i%40 == 20 {
			w.call("B filter unsubscribe", http.MethodDelete, w.b.rest+"/filter/v2/subscriptions", sub)
			w.call("B filter subscribe", http.MethodPost, w.b.rest+"/filter/v2/subscriptions", sub)
		}
	}
}
