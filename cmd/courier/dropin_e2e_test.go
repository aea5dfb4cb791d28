//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// nwakuLine is the README's typical nwaku v0.38.1 command line, with the
// ports left to the system (0) so that tests do not race for them.
var nwakuLine = []string{
	"--relay=true", "--store=true", "--cluster-id=0", "--shard=0",
	"--listen-address=127.0.0.1", "--tcp-port=0", "--nat=none", "--keep-alive=true",
	"--rest=true", "--rest-address=127.0.0.1", "--rest-port=0", "--rest-admin=true",
	"--metrics-server=true", "--metrics-server-address=127.0.0.1", "--metrics-server-port=0",
	"--rln-relay=false", "--log-level=INFO", "--log-format=TEXT",
}

// startNwakuLine runs bin with nwakuLine plus extra and no subcommand, in
// a fresh working directory (no --data-dir: the archive's index is
// ./store.sqlite3, nwaku's default --store-message-db-url, with its
// segments in ./store.sqlite3.segments).
func startNwakuLine(t *testing.T, bin, name string, extra ...string) *nodeProc {
	t.Helper()
	dir := t.TempDir()
	n := &nodeProc{proc: startProcIn(t, name, dir, bin, append(slices.Clone(nwakuLine), extra...)...), dataDir: dir}
	m := n.waitLog(t, reListen, 15*time.Second)
	n.addr, n.id = m[1], m[2]
	n.rest = "http://" + n.waitLog(t, reREST, time.Second)[1]
	n.metrics = "http://" + n.waitLog(t, reMetric, time.Second)[1]
	t.Logf("%s: %s, REST %s, metrics %s", name, n.addr, n.rest, n.metrics)
	return n
}

// testE2ENwakuCommandLine runs two nodes with nwaku's command line and no
// subcommand, one through a link named wakunode2: B keeps A as a static
// node, A publishes over REST and B's REST cache, pre-subscribed to shard
// 0 by --shard=0, returns the message without any POST of a subscription.
// Then it checks refusals of the real binary: one line, exit code 1.
func testE2ENwakuCommandLine(t *testing.T, bin string) {
	link := filepath.Join(t.TempDir(), "wakunode2")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	a := startNwakuLine(t, link, "A")
	// B is given keystore flags with --rln-relay=false: ignored, as nwaku
	// ignores them, with a warning that names them.
	b := startNwakuLine(t, bin, "B", "--staticnode="+a.addr, "--rln-relay-cred-path=keystore.json", "--rln-relay-cred-password=s3cret")
	if b.out.count("level=WARN", "--rln-relay-cred-path, --rln-relay-cred-password given without --rln-relay: ignored") != 1 || b.out.count("s3cret") != 0 {
		t.Errorf("B: want one warning naming the ignored --rln-relay-cred-* flags, without the password; logged:\n%s", strings.Join(b.out.snapshot(), "\n"))
	}
	if a.out.count("given without --rln-relay") != 0 {
		t.Errorf("A: warning about RLN flags it was not given")
	}
	for _, n := range []*nodeProc{a, b} {
		if lines := n.log.snapshot(); len(lines) != 0 {
			t.Errorf("%s: node logs on stderr, want them on stdout as nwaku's: %q", n.name, lines)
		}
		if n.out.count("relaying shard 0") != 0 {
			t.Errorf("%s: start note about shard 0 although --shard=0 was given", n.name)
		}
		if _, err := os.Stat(filepath.Join(n.dataDir, "store.sqlite3")); err != nil {
			t.Errorf("%s: --store=true without a data directory: %v", n.name, err)
		}
	}
	testEnvOnly(t, bin, a)
	waitFor(t, 20*time.Second, "B sees A connected with shard 0", func() (bool, string) {
		peers, err := b.peers()
		if err != nil {
			return false, err.Error()
		}
		p, ok := peers[a.id]
		return ok && p.Connected == "Connected" && slices.Contains(p.Shards, 0), spew(peers)
	})

	want := restMessage{Payload: []byte("hello from an nwaku command line"), ContentTopic: e2eContentTopic, Timestamp: time.Now().UnixNano()}
	var got []receivedMsg
	waitFor(t, 30*time.Second, "B receives A's message", func() (bool, string) {
		if code, body, err := a.publish(want); err != nil || code != http.StatusOK {
			return false, "publish: " + string(body)
		}
		got = append(got, b.drain(t)...)
		return len(got) > 0, "nothing yet"
	})
	for _, m := range got {
		if !bytes.Equal(m.msg.Payload, want.Payload) || m.msg.ContentTopic != want.ContentTopic || m.msg.Timestamp != want.Timestamp {
			t.Errorf("B received %s, want %+v", m.raw, want)
		}
	}
	t.Logf("B received: %s", got[0].raw)
	health := string(mustHTTP(t, http.MethodGet, b.rest+"/health", nil))
	t.Logf("GET B/health: %s", health)
	for _, want := range []string{`{"nodeHealth":"READY","connectionStatus":"PartiallyConnected","protocolsHealth":[{"Relay":"READY"},`, `{"Store":"READY"}`, `{"Rln Relay":"NOT_MOUNTED"}]}`} {
		if !strings.Contains(health, want) {
			t.Errorf("GET B/health: %s, want %s in it", health, want)
		}
	}
	logMetrics(t, b)

	// The admin API changes the running node (nwaku
	// waku/rest_api/endpoint/admin/handlers.nim).
	if got := string(mustHTTP(t, http.MethodPost, b.rest+"/admin/v1/log-level/DEBUG", nil)); got != "OK" {
		t.Errorf("POST /admin/v1/log-level/DEBUG: %q", got)
	}
	if got := string(mustHTTP(t, http.MethodPost, b.rest+"/admin/v1/peers", []string{a.addr})); got != "OK" {
		t.Errorf("POST /admin/v1/peers: %q", got)
	}
	if code, body, err := httpDo(http.MethodGet, b.rest+"/admin/v1/peer/"+a.id, nil); err != nil || code != http.StatusOK || !strings.Contains(string(body), `"connected":"Connected"`) {
		t.Errorf("GET /admin/v1/peer/%s: %d %s %v", a.id, code, body, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rln-relay=true"}, "courier node: node: invalid config: --rln-relay needs --rln-relay-eth-contract-address (rlnRelay.ethContractAddress is not specified)\n"},
		{[]string{"--preset=twn", "--rln-relay-cred-path=keystore.json"}, "courier node: node: invalid config: --rln-relay-cred-path without --rln-relay-cred-password (RLN Relay Credential Password is not specified but path is)\n"},
		{[]string{"--cluster-id=1", "--relay=true", "--rln-relay-eth-client-address=ftp://x"}, "courier node: node: invalid config: --rln-relay-eth-client-address \"ftp://x\": scheme \"ftp\"; want http, https, ws or wss\n"},
		{[]string{"--cluster-id=1", "--relay=true", "--rln-relay-eth-client-address=https://linea-sepolia.infura.io:v3/0123456789abcdef"},
			"courier node: node: invalid config: --rln-relay-eth-client-address \"https://linea-sepolia.infura.io:v3/<redacted>\": not a URL: invalid port \":v3\" after host\n"},
		{[]string{"--cluster-id=2"}, "courier node: --cluster-id=2: the Logos Dev Network (nwaku runs cluster 2 as --preset=logos.dev) needs kademlia discovery, which this node does not support\n"},
		// Start-up checks of the configuration are usage errors too.
		{[]string{"--tcp-port=99999"}, "courier node: --tcp-port=99999: \"99999\" is out of range: want 0..65535\n"},
		{[]string{"--cluster-id=3", "--shard=1024"}, "courier node: --shard=1024: \"1024\" is out of range: want 0..1023\n"},
		{[]string{"--cluster-id=3", "--num-shards-in-network=8", "--shard=8"}, "courier node: node: invalid config: --shard 8: validateShards invalid shard: 8 when numShardsInCluster: 8\n"},
		{[]string{"--cluster-id=abc"}, "courier node: --cluster-id=abc: \"abc\" is not a number\n"},
		{[]string{"--rest-address=notanip"}, "courier node: --rest-address=notanip: not an IP address\n"},
		{[]string{"--staticnode=garbage"}, "courier node: node: invalid config: --staticnode \"garbage\": failed to parse multiaddr \"garbage\": must begin with /\n"},
		{[]string{"--dns-discovery-url=enrtree://bad@x"}, "courier node: node: invalid config: --dns-discovery-url \"enrtree://bad@x\": invalid link entry: invalid public key (want enrtree://<base32 public key>@<domain>)\n"},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = childEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 1 || stderr.String() != c.want {
			t.Errorf("courier %s: exit %d (%v), stderr %q; want exit 1, %q", strings.Join(c.args, " "), code, err, stderr.String(), c.want)
		}
	}
}

// logMetrics logs the waku_ and libp2p_peers lines of n's /metrics and
// checks that nwaku v0.38.1's names, types and labels are there
// (waku/node/peer_manager/peer_manager.nim, waku/node/waku_node.nim,
// waku/waku_archive/archive_metrics.nim, waku/waku_relay/protocol.nim) with
// go-libp2p's own metrics on the same registry.
func logMetrics(t *testing.T, n *nodeProc) {
	t.Helper()
	body := string(mustHTTP(t, http.MethodGet, n.metrics+"/metrics", nil))
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "waku_") || strings.Contains(l, "libp2p_peers") {
			lines = append(lines, l)
		}
	}
	t.Logf("GET %s/metrics (waku_ and libp2p_peers lines):\n%s", n.name, strings.Join(lines, "\n"))
	for _, want := range []string{
		"# TYPE waku_connected_peers gauge",
		`waku_connected_peers{direction="Out",protocol="/vac/waku/relay/2.0.0"} 1`,
		"# TYPE waku_archive_insert_duration_seconds histogram",
		`waku_archive_insert_duration_seconds_bucket{le="+Inf"}`,
		`waku_version{version="`,
		"# TYPE waku_node_errors_total counter",
		`waku_node_errors_total{type="publish_failure"} 0`,
		"# TYPE waku_peer_store_size gauge",
		"# TYPE waku_relay_network_bytes_total counter",
		`waku_relay_network_bytes_total{direction="in",topic="/waku/2/rs/0/0",type="net"}`,
		`waku_relay_total_msg_bytes_per_shard{shard="/waku/2/rs/0/0"}`,
		`waku_relay_avg_msg_bytes_per_shard{shard="/waku/2/rs/0/0"}`,
		`waku_relay_max_msg_bytes_per_shard{shard="/waku/2/rs/0/0"}`,
		`waku_relay_network_bytes_total{direction="in",topic="/waku/2/rs/0/0",type="gross"}`,
		`waku_relay_network_bytes_total{direction="out",topic="/waku/2/rs/0/0",type="net"}`,
		"# TYPE waku_histogram_message_size histogram",
		`waku_histogram_message_size_bucket{le="1000"}`,
		"# TYPE waku_archive_query_duration_seconds histogram",
		`waku_archive_errors_total{type="retpolicy_failure"} 0`,
		"# TYPE waku_streams_peers gauge",
		`waku_connected_peers_per_shard{shard="0"} 1`,
		"libp2p_peers 1",
		"# TYPE libp2p_identify_",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET %s/metrics: no %q", n.name, want)
		}
	}
}

func spew(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// testEnvOnly runs courier with no arguments, configured by WAKUNODE2_
// variables alone as nwaku's docker image is, with JSON logs: it runs a
// node (not the usage) that logs nwaku's JSON records on stdout and
// connects to a.
func testEnvOnly(t *testing.T, bin string, a *nodeProc) {
	t.Helper()
	dir := t.TempDir()
	env := []string{"WAKUNODE2_LISTEN_ADDRESS=127.0.0.1", "WAKUNODE2_TCP_PORT=0", "WAKUNODE2_REST=TRUE",
		"WAKUNODE2_REST_PORT=0", "WAKUNODE2_CLUSTER_ID=0", "WAKUNODE2_SHARD=0", "WAKUNODE2_NAT=none",
		"WAKUNODE2_LOG_FORMAT=JSON", "WAKUNODE2_STATICNODE=" + a.addr, "WAKUNODE2_DATA_DIR=" + dir}
	c := startProcEnv(t, "C (environment only)", dir, bin, env)
	reJSON := regexp.MustCompile(`^\{"ts":"[^"]+","lvl":"INF","msg":"listening","addr":"(/ip4/127\.0\.0\.1/tcp/\d+/p2p/\w+)"\}$`)
	c.waitLog(t, reJSON, 15*time.Second)
	c.waitLog(t, regexp.MustCompile(`"msg":"connected to static node"`), 20*time.Second)
	c.stop(t)
	if lines := c.log.snapshot(); len(lines) != 0 {
		t.Errorf("C: stderr %q, want none", lines)
	}
	for _, line := range c.out.snapshot() {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["lvl"] == nil || rec["ts"] == nil || rec["msg"] == nil {
			t.Errorf("C: stdout line %q is not a JSON record with lvl, ts and msg", line)
		}
	}
}
