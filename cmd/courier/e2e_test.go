//go:build unix

package main

// End-to-end tests of the built courier binary: nodes run as separate
// processes on 127.0.0.1 and are driven only through their command line,
// logs, REST API, metrics and, after they exit, their archive directories.
//
//	go test -race -run E2E -v ./cmd/courier/
//
// The binary is built once per run with `go build` (without -race: the race
// detector is on the test process; COURIER_E2E_RACE=1 builds the binary with
// -race too). Every port is chosen by the node (--tcp-port 0, --rest-port 0)
// and read from its log, so there is no race for free ports.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
)

const (
	e2eTopic        = "/waku/2/rs/0/0"
	e2eContentTopic = "/courier/1/e2e/proto"
	// e2eCLITopic is the content topic of the `courier publish` messages,
	// which `courier subscribe --content-topic` reads from a cache of its own.
	e2eCLITopic = "/courier/1/e2e-cli/proto"
	// e2eStopTimeout is how long a node may take to exit after SIGTERM.
	e2eStopTimeout = 30 * time.Second
)

var e2eHTTP = &http.Client{Timeout: 10 * time.Second}

// TestE2E builds the binary once and runs the end-to-end subtests with it.
func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds the binary and runs node processes")
	}
	bin := buildCourier(t)
	t.Run("MessageHash", func(t *testing.T) { testE2EMessageHash(t, bin) })
	t.Run("RelayLine", func(t *testing.T) { testE2ERelayLine(t, bin) })
	t.Run("NwakuCommandLine", func(t *testing.T) { testE2ENwakuCommandLine(t, bin) })
	t.Run("StoreSync", func(t *testing.T) { testE2EStoreSync(t, bin, "") })
	t.Run("StoreSyncPostgres", func(t *testing.T) { testE2EStoreSync(t, bin, pgtest.DB(t)) })
	t.Run("LightClients", func(t *testing.T) { testE2ELightClients(t, bin) })
	t.Run("Discovery", func(t *testing.T) { testE2EDiscovery(t, bin) })
	t.Run("PortInUse", func(t *testing.T) { testE2EPortInUse(t, bin) })
	t.Run("ExitCodes", func(t *testing.T) { testE2EExitCodes(t, bin) })
	t.Run("SecretsHidden", func(t *testing.T) { testE2ESecretsHidden(t, bin) })
	t.Run("StopDuringStart", func(t *testing.T) { testE2EStopDuringStart(t, bin) })
	t.Run("StopAtOnce", func(t *testing.T) { testE2EStopAtOnce(t, bin) })
	t.Run("SilentDatabase", func(t *testing.T) { testE2ESilentDatabase(t, bin) })
}

// buildCourier builds the package in the current directory (the test's
// package directory) into a temporary directory.
func buildCourier(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "courier")
	args := []string{"build", "-o", bin}
	if os.Getenv("COURIER_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = wd
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// childEnv is the test's environment without COURIER_* and WAKUNODE2_*
// variables, which would otherwise set node flags.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COURIER_") && !strings.HasPrefix(kv, "WAKUNODE2_") {
			env = append(env, kv)
		}
	}
	return env
}

// ---------------------------------------------------------------------------
// courier message hash

func testE2EMessageHash(t *testing.T, bin string) {
	run := func(stdin string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"message", "hash"}, args...)...)
		cmd.Env = childEnv()
		cmd.Stdin = strings.NewReader(stdin)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("run courier message hash: %v", err)
			}
		}
		return o.String(), e.String(), cmd.ProcessState.ExitCode()
	}

	// 14/WAKU2-MESSAGE test vector (rfc-index 14/message.md): meta "super-secret".
	const vector = `{"payload":"AQIDBFRFU1QFBgcI","contentTopic":"/waku/2/default-content/proto","timestamp":1681964442000000000,"meta":"c3VwZXItc2VjcmV0"}`
	out, errOut, code := run(vector, "--pubsub-topic", "/waku/2/default-waku/proto")
	if code != 0 || out != "64cce733fed134e83da02b02c6f689814872b1a0ac97ea56b76095c3c72bfe05\n" || errOut != "" {
		t.Errorf("spec vector: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// nwaku's vector on /waku/2/rs/0/0 (the default --pubsub-topic), meta 12 B.
	out, errOut, code = run(vector)
	if code != 0 || out != "b9b4852f9d8c489846e8bfc6c5ca6a1a8d460a40d28832a966e029eb39619199\n" || errOut != "" {
		t.Errorf("nwaku vector: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	for _, tc := range []struct{ name, in string }{
		{"fractional timestamp", `{"payload":"AQIDBFRFU1QFBgcI","contentTopic":"/waku/2/default-content/proto","timestamp":1.5}`},
		{"missing payload", `{"contentTopic":"/waku/2/default-content/proto","timestamp":1681964442000000000}`},
		{"not JSON", `payload=AQIDBFRFU1QFBgcI`},
		{"empty input", ``},
	} {
		out, errOut, code := run(tc.in)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code == 0 || out != "" || errOut == "" || !strings.HasSuffix(errOut, "\n") || len(lines) != 1 ||
			!strings.HasPrefix(errOut, "courier message: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a non-zero exit and one line on stderr", tc.name, code, out, errOut)
		} else {
			t.Logf("%s: exit %d: %s", tc.name, code, lines[0])
		}
	}
}

// ---------------------------------------------------------------------------
// Node processes

// logBuf collects a process's output as lines; it is the process's Stderr.
type logBuf struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// snapshot returns the complete lines so far.
func (l *logBuf) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + "\n" + string(l.partial)
}

// find returns the submatches of the first line matching re.
func (l *logBuf) find(re *regexp.Regexp) []string {
	for _, line := range l.snapshot() {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	return nil
}

// count returns the number of lines containing every one of subs.
func (l *logBuf) count(subs ...string) int {
	n := 0
	for _, line := range l.snapshot() {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			n++
		}
	}
	return n
}

// proc is a running courier process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	log     *logBuf // stderr
	out     *logBuf // stdout
	done    chan struct{}
	waitErr error // set before done is closed
}

func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	return startProcIn(t, name, "", bin, args...)
}

// startProcIn is startProc in the working directory dir ("" for the
// test's).
func startProcIn(t *testing.T, name, dir, bin string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, dir, bin, nil, args...)
}

// startProcEnv is startProcIn with env added to childEnv.
func startProcEnv(t *testing.T, name, dir, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: new(logBuf), out: new(logBuf), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(childEnv(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				t.Errorf("%s: still running 10 s after SIGKILL", name)
			}
		}
		if t.Failed() {
			t.Logf("--- %s (%s) stderr:\n%s--- %s stdout:\n%s", name, strings.Join(args, " "), p.log, name, p.out)
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitLog waits until a line of the process's stdout, where a node logs,
// matches re and returns its submatches. It fails at once if the process exits first.
func (p *proc) waitLog(t *testing.T, re *regexp.Regexp, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m := p.out.find(re); m != nil {
			return m
		}
		if p.exited() {
			t.Fatalf("%s exited (%v) before logging %q", p.name, p.waitErr, re)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %v", p.name, re, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the process to exit; it returns how long
// the exit took. A non-zero exit code, a signal death or a process still
// running after e2eStopTimeout fail the test.
func (p *proc) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(e2eStopTimeout):
		t.Fatalf("%s still running %v after SIGTERM", p.name, e2eStopTimeout)
	}
	took := time.Since(start)
	if st := p.cmd.ProcessState; !st.Exited() || st.ExitCode() != 0 {
		t.Fatalf("%s after SIGTERM: %v (want exit code 0)", p.name, p.waitErr)
	}
	return took
}

var (
	reListen = regexp.MustCompile(`msg=listening addr=(/ip4/127\.0\.0\.1/tcp/\d+/p2p/(\w+))`)
	reREST   = regexp.MustCompile(`msg="serving REST API" addr=(127\.0\.0\.1:\d+)`)
	reMetric = regexp.MustCompile(`msg="serving metrics" addr=(127\.0\.0\.1:\d+)`)
)

// nodeProc is a `courier node` process with its addresses.
type nodeProc struct {
	*proc
	dataDir string
	dbURL   string // the Postgres archive's URL, "" for the embedded one
	addr    string // libp2p multiaddr with /p2p/<id>
	id      string // peer id
	rest    string // REST base URL
	metrics string // metrics base URL, "" when off
}

// startNode runs `courier node` on 127.0.0.1 with free ports, the REST API
// and a fresh data directory, plus extra flags, and waits until it logs its
// addresses.
func startNode(t *testing.T, bin, name string, extra ...string) *nodeProc {
	t.Helper()
	return startNodeIn(t, bin, name, t.TempDir(), extra...)
}

// startNodeIn is startNode with the data directory dir.
func startNodeIn(t *testing.T, bin, name, dir string, extra ...string) *nodeProc {
	t.Helper()
	args := append([]string{"node",
		"--listen-address", "127.0.0.1", "--tcp-port", "0",
		"--rest", "--rest-address", "127.0.0.1", "--rest-port", "0", "--rest-admin",
		"--num-shards-in-network", "1", "--data-dir", dir, "--log-level", "DEBUG"}, extra...)
	n := &nodeProc{proc: startProc(t, name, bin, args...), dataDir: dir}
	m := n.waitLog(t, reListen, 15*time.Second)
	n.addr, n.id = m[1], m[2]
	n.rest = "http://" + n.waitLog(t, reREST, time.Second)[1]
	if slices.Contains(extra, "--metrics-server") {
		n.metrics = "http://" + n.waitLog(t, reMetric, time.Second)[1]
	}
	t.Logf("%s: %s, REST %s", name, n.addr, n.rest)
	return n
}

// ---------------------------------------------------------------------------
// HTTP helpers

// httpDo sends a request with an optional JSON body and returns the status
// and the response body.
func httpDo(method, u string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e2eHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// mustHTTP is httpDo that fails the test unless the status is 200.
func mustHTTP(t *testing.T, method, u string, body any) []byte {
	t.Helper()
	code, out, err := httpDo(method, u, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, u, code, out)
	}
	return out
}

// restPeer is one element of GET /admin/v1/peers.
type restPeer struct {
	Multiaddr string   `json:"multiaddr"`
	Protocols []string `json:"protocols"`
	Shards    []uint16 `json:"shards"`
	Connected string   `json:"connected"`
	Agent     string   `json:"agent"`
	Origin    string   `json:"origin"`
}

func (p restPeer) id() string {
	i := strings.LastIndex(p.Multiaddr, "/p2p/")
	if i < 0 {
		return ""
	}
	return p.Multiaddr[i+len("/p2p/"):]
}

// peers returns n's /admin/v1/peers keyed by peer id.
func (n *nodeProc) peers() (map[string]restPeer, error) {
	code, body, err := httpDo(http.MethodGet, n.rest+"/admin/v1/peers", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /admin/v1/peers: %d %s", code, body)
	}
	var list []restPeer
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /admin/v1/peers: %w: %s", err, body)
	}
	out := map[string]restPeer{}
	for _, p := range list {
		out[p.id()] = p
	}
	return out, nil
}

// restMessage is the REST JSON message (nwaku RelayWakuMessage), declared
// here rather than taken from package rest so that the wire shape is what
// is tested.
type restMessage struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Version      uint32 `json:"version,omitempty"`
	Timestamp    int64  `json:"timestamp"`
	Meta         []byte `json:"meta,omitempty"`
	Ephemeral    bool   `json:"ephemeral,omitempty"`
}

func (m restMessage) message() *message.Message {
	return &message.Message{Payload: m.Payload, ContentTopic: m.ContentTopic, Version: m.Version,
		Timestamp: m.Timestamp, Meta: m.Meta, Ephemeral: m.Ephemeral}
}

func (m restMessage) hash() message.Hash { return m.message().Hash(e2eTopic, nil) }

// hex0x is a message hash as the REST store API writes it and courier
// publish prints it: 0x and 64 lowercase hex digits.
func hex0x(h message.Hash) string { return "0x" + hex.EncodeToString(h[:]) }

var escapedTopic = url.PathEscape(e2eTopic)

// publish posts m on n's REST API on e2eTopic.
func (n *nodeProc) publish(m restMessage) (int, []byte, error) {
	return httpDo(http.MethodPost, n.rest+"/relay/v1/messages/"+escapedTopic, m)
}

// receivedMsg is one message returned by GET /relay/v1/messages.
type receivedMsg struct {
	raw json.RawMessage
	msg restMessage
}

// drain returns the messages in n's REST cache for e2eTopic.
func (n *nodeProc) drain(t *testing.T) []receivedMsg {
	t.Helper()
	body := mustHTTP(t, http.MethodGet, n.rest+"/relay/v1/messages/"+escapedTopic, nil)
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		t.Fatalf("GET messages on %s: %v: %s", n.name, err, body)
	}
	out := make([]receivedMsg, len(raws))
	for i, r := range raws {
		out[i].raw = r
		if err := json.Unmarshal(r, &out[i].msg); err != nil {
			t.Fatalf("GET messages on %s: %v: %s", n.name, err, r)
		}
	}
	return out
}

// waitFor polls cond every 100 ms until it returns true, failing the test
// with cond's last explanation after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// payloadOf returns n deterministic bytes, every byte value included.
func payloadOf(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// ---------------------------------------------------------------------------
// The line A-B-C

func testE2ERelayLine(t *testing.T, bin string) {
	start := time.Now()
	step := func(what string) { t.Helper(); t.Logf("[%6.2fs] %s", time.Since(start).Seconds(), what) }

	a := startNode(t, bin, "A", "--store")
	b := startNode(t, bin, "B", "--store", "--staticnode", a.addr)
	c := startNode(t, bin, "C", "--store", "--staticnode", b.addr,
		"--metrics-server", "--metrics-server-address", "127.0.0.1", "--metrics-server-port", "0")
	step("A, B, C started")

	// Static peers in a line: A-B and B-C connected and accepted by the
	// metadata protocol (shards known), A and C never connected.
	type link struct {
		from, to  *nodeProc
		connected bool
	}
	links := []link{{a, b, true}, {b, a, true}, {b, c, true}, {c, b, true}, {a, c, false}, {c, a, false}}
	waitFor(t, 15*time.Second, "A-B-C line", func() (bool, string) {
		for _, l := range links {
			ps, err := l.from.peers()
			if err != nil {
				return false, err.Error()
			}
			p, ok := ps[l.to.id]
			isConn := ok && p.Connected == "Connected"
			if isConn != l.connected {
				return false, fmt.Sprintf("%s sees %s as %+v (present %v)", l.from.name, l.to.name, p, ok)
			}
			if l.connected && !slices.Equal(p.Shards, []uint16{0}) {
				return false, fmt.Sprintf("%s has no metadata of %s yet: %+v", l.from.name, l.to.name, p)
			}
		}
		return true, ""
	})
	ps, _ := b.peers()
	if p := ps[a.id]; p.Origin != "Static" || !strings.HasPrefix(p.Agent, "courier ") {
		t.Errorf("B's view of its static node A: %+v, want origin Static and a courier agent", p)
	}
	step("line connected")

	// C and B subscribe over REST: this registers the REST cache of the
	// topic, to which the nodes are subscribed since they started.
	for _, n := range []*nodeProc{c, b} {
		if out := mustHTTP(t, http.MethodPost, n.rest+"/relay/v1/subscriptions", []string{e2eTopic}); string(out) != "OK" {
			t.Errorf("POST /relay/v1/subscriptions on %s answered %q, want OK", n.name, out)
		}
	}

	// received collects every message C returned over REST, by hash.
	received := map[message.Hash]receivedMsg{}
	collect := func() {
		for _, r := range c.drain(t) {
			received[r.msg.hash()] = r
		}
	}
	// published are the messages published on A (probes aside), in order:
	// each node's archive must hold those published before it stopped.
	var published []restMessage
	publishOnA := func(m restMessage) {
		t.Helper()
		mustPublish(t, a, m)
		published = append(published, m)
	}

	// Gossipsub needs a heartbeat or two to graft B-C: probe until a
	// message published on A reaches C. Probes that C does not get are
	// expected nowhere (a late one may still arrive by gossip, and is then
	// checked like any message C returned).
	probe := 0
	waitFor(t, 20*time.Second, "a probe from A reaching C", func() (bool, string) {
		probe++
		mustPublish(t, a, restMessage{Payload: []byte(fmt.Sprintf("probe %d", probe)), ContentTopic: e2eContentTopic, Timestamp: time.Now().UnixNano()})
		collect()
		return len(received) > 0, fmt.Sprintf("%d probes published", probe)
	})
	step(fmt.Sprintf("mesh formed: %d probe(s) published, %d received on C", probe, len(received)))

	// Several messages, byte-exact: sizes from 1 B to 100 KiB, every byte
	// value, with and without meta and version. One ephemeral message must
	// be relayed but never archived.
	ts := time.Now().UnixNano()
	batch := []restMessage{
		{Payload: payloadOf(1, 1), ContentTopic: e2eContentTopic, Timestamp: ts + 1},
		{Payload: payloadOf(2, 256), ContentTopic: e2eContentTopic, Timestamp: ts + 2, Meta: []byte("e2e meta")},
		{Payload: payloadOf(3, 10<<10), ContentTopic: e2eContentTopic, Timestamp: ts + 3, Version: 1},
		{Payload: payloadOf(4, 100<<10), ContentTopic: e2eContentTopic, Timestamp: ts + 4, Meta: payloadOf(5, 64)},
		{Payload: []byte("same payload, other content topic"), ContentTopic: "/courier/1/e2e-other/proto", Timestamp: ts + 5},
	}
	for _, m := range batch {
		publishOnA(m)
	}
	ephemeral := restMessage{Payload: []byte("ephemeral"), ContentTopic: e2eContentTopic, Timestamp: ts + 6, Ephemeral: true}
	mustPublish(t, a, ephemeral)
	batch = append(batch, ephemeral)
	waitAll := func(what string, want []restMessage) {
		t.Helper()
		waitFor(t, 15*time.Second, what, func() (bool, string) {
			collect()
			missing := 0
			for _, m := range want {
				if _, ok := received[m.hash()]; !ok {
					missing++
				}
			}
			return missing == 0, fmt.Sprintf("%d of %d not received on C", missing, len(want))
		})
	}
	waitAll("batch received on C", batch)
	for i, m := range batch {
		got := received[m.hash()].msg
		if !bytes.Equal(got.Payload, m.Payload) || got.ContentTopic != m.ContentTopic || got.Timestamp != m.Timestamp ||
			!bytes.Equal(got.Meta, m.Meta) || got.Version != m.Version || got.Ephemeral != m.Ephemeral {
			t.Errorf("message %d received on C differs:\n got %+v\nwant %+v", i, got.message(), m.message())
		}
	}
	step(fmt.Sprintf("batch of %d received on C over REST, byte-exact", len(batch)))

	// The hash of what C returned, by the binary, is the hash computed here.
	for _, m := range batch[1:2] {
		cmd := exec.Command(bin, "message", "hash", "--pubsub-topic", e2eTopic)
		cmd.Env = childEnv()
		cmd.Stdin = bytes.NewReader(received[m.hash()].raw)
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != m.hash().String() {
			t.Errorf("courier message hash of %s: %q, %v; want %s", received[m.hash()].raw, out, err, m.hash())
		}
	}

	// What a user does: `courier subscribe` on C, `courier publish` on A.
	cliMsgs := cliPublishSubscribe(t, bin, a, c)
	published = append(published, cliMsgs...)
	step(fmt.Sprintf("courier publish on A / courier subscribe on C: %d messages", len(cliMsgs)))

	// C's health, info and metrics.
	checkObservability(t, c, len(received)-1+len(cliMsgs), 1)
	step("health, info and metrics checked on C")

	// A node of another cluster is refused.
	checkOtherCluster(t, bin, a, b)
	step("node of cluster 16 refused")

	// SIGTERM on each node right after it took a burst of messages: C and
	// B as soon as their REST API returned the burst (relayed, archive
	// writes queued, perhaps not committed), A as soon as its REST API
	// accepted the last message it publishes. No archived message is lost.
	burstNo := 0
	burst := func() []restMessage {
		burstNo++
		ts := time.Now().UnixNano()
		var out []restMessage
		for i := range 20 {
			m := restMessage{Payload: payloadOf(100*burstNo+i, 512+i), ContentTopic: e2eContentTopic, Timestamp: ts + int64(i)}
			publishOnA(m)
			out = append(out, m)
		}
		return out
	}
	stop := func(n *nodeProc) {
		t.Helper()
		took := n.stop(t)
		if n.out.count(`msg=stopped`) != 1 {
			t.Errorf("%s exited 0 without logging msg=stopped", n.name)
		}
		step(fmt.Sprintf("%s exited 0 after SIGTERM in %v", n.name, took.Round(time.Millisecond)))
	}
	waitAll("burst 1 received on C", burst())
	stop(c)
	atC := len(published)
	b.drain(t)
	burst2 := burst()
	waitFor(t, 15*time.Second, "burst 2 received on B", func() (bool, string) {
		for _, r := range b.drain(t) {
			burst2 = slices.DeleteFunc(burst2, func(m restMessage) bool { return m.hash() == r.msg.hash() })
		}
		return len(burst2) == 0, fmt.Sprintf("%d not received on B", len(burst2))
	})
	stop(b)
	atB := len(published)
	burst()
	stop(a)

	// C restarts on its data directory: same node key, its archive opens
	// after the clean shutdown, and it stops cleanly again.
	c2 := startNodeIn(t, bin, "C restarted", c.dataDir, "--store")
	if c2.id != c.id {
		t.Errorf("C restarted with peer id %s, was %s: node key not kept in --data-dir", c2.id, c.id)
	}
	if h := mustHTTP(t, http.MethodGet, c2.rest+"/health", nil); !bytes.Contains(h, []byte(`"nodeHealth":"READY"`)) {
		t.Errorf("C restarted: GET /health: %s", h)
	}
	stop(c2)

	// Every message C returned (probes, batch, CLI messages, burst 1), all
	// published on A and relayed by B, is in C's, B's and A's archives,
	// byte for byte; burst 2 is in B's and A's, burst 3 in A's. The
	// ephemeral message is in none.
	want := map[message.Hash]restMessage{}
	for _, r := range received {
		want[r.msg.hash()] = r.msg
	}
	delete(want, ephemeral.hash())
	for _, x := range []struct {
		n         *nodeProc
		published int
	}{{c, atC}, {b, atB}, {a, len(published)}} {
		for _, m := range published[:x.published] {
			want[m.hash()] = m
		}
		checkArchive(t, x.n, want, ephemeral)
		step(fmt.Sprintf("%s's archive holds all %d messages", x.n.name, len(want)))
	}
}

// mustPublish posts m on n's REST API and fails unless the answer is 200 OK.
func mustPublish(t *testing.T, n *nodeProc, m restMessage) {
	t.Helper()
	code, body, err := n.publish(m)
	if err != nil || code != http.StatusOK || string(body) != "OK" {
		t.Fatalf("publish on %s: %d %q %v", n.name, code, body, err)
	}
}

// cliPublishSubscribe runs `courier subscribe --content-topic --count 3` on
// c and three `courier publish` on a (two on the pubsub topic, one by
// autosharding), and returns the messages subscribe printed, checked
// against what publish sent and the hashes it printed.
func cliPublishSubscribe(t *testing.T, bin string, a, c *nodeProc) []restMessage {
	t.Helper()
	sub := startProc(t, "subscribe", bin, "subscribe", "--rest", c.rest,
		"--content-topic", e2eCLITopic, "--count", "3", "--interval", "100ms")
	// subscribe's first call registers the content topic's cache on C; a
	// message that arrives before it would not be kept. Until then a GET of
	// the content topic answers 404.
	waitFor(t, 10*time.Second, "courier subscribe polling C", func() (bool, string) {
		code, _, err := httpDo(http.MethodGet, c.rest+"/relay/v1/auto/messages/"+url.PathEscape(e2eCLITopic), nil)
		return err == nil && code == http.StatusOK, fmt.Sprintf("GET auto messages: %d %v", code, err)
	})
	payloads := []string{"hello from courier publish", "second message", "by autosharding"}
	printed := map[string]string{} // payload -> what publish printed
	for i, p := range payloads {
		args := []string{"publish", "--rest", a.rest, "--content-topic", e2eCLITopic}
		if i < 2 {
			args = append(args, "--pubsub-topic", e2eTopic)
		}
		cmd := exec.Command(bin, append(args, p)...)
		cmd.Env = childEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("courier %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		printed[p] = strings.TrimSpace(string(out))
	}
	select {
	case <-sub.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("courier subscribe --count 3 still running; printed:\n%s", sub.out)
	}
	if sub.waitErr != nil {
		t.Fatalf("courier subscribe: %v: %s", sub.waitErr, sub.log)
	}
	lines := sub.out.snapshot()
	if len(lines) != 3 {
		t.Fatalf("courier subscribe --count 3 printed %d lines:\n%s", len(lines), sub.out)
	}
	var got []restMessage
	for _, line := range lines {
		var m restMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("courier subscribe line %q: %v", line, err)
		}
		want, ok := printed[string(m.Payload)]
		switch {
		case !ok || m.ContentTopic != e2eCLITopic:
			t.Errorf("courier subscribe printed %s, not a message published", line)
		case string(m.Payload) == payloads[2] && want != "OK":
			t.Errorf("courier publish by autosharding printed %q, want OK", want)
		case string(m.Payload) != payloads[2] && want != hex0x(m.hash()):
			t.Errorf("courier publish printed %s, the message received hashes to %s", want, hex0x(m.hash()))
		}
		delete(printed, string(m.Payload))
		got = append(got, m)
	}
	t.Logf("courier subscribe printed:\n%s", strings.Join(lines, "\n"))
	return got
}

// checkObservability checks /health, /debug/v1/info and /metrics of c and
// logs their bodies. c has received at least stored messages to archive and
// exactly ephemeral ephemeral ones.
func checkObservability(t *testing.T, c *nodeProc, stored, ephemeral int) {
	t.Helper()
	health := mustHTTP(t, http.MethodGet, c.rest+"/health", nil)
	t.Logf("GET /health: %s", health)
	var h struct {
		NodeHealth      string              `json:"nodeHealth"`
		ProtocolsHealth []map[string]string `json:"protocolsHealth"`
	}
	if err := json.Unmarshal(health, &h); err != nil || h.NodeHealth != "READY" ||
		!slices.ContainsFunc(h.ProtocolsHealth, func(p map[string]string) bool { return p["Relay"] == "READY" }) {
		t.Errorf("GET /health: %s (%v), want nodeHealth READY and Relay READY", health, err)
	}

	info := mustHTTP(t, http.MethodGet, c.rest+"/debug/v1/info", nil)
	t.Logf("GET /debug/v1/info: %s", info)
	var i struct {
		ListenAddresses []string `json:"listenAddresses"`
	}
	if err := json.Unmarshal(info, &i); err != nil || !slices.Contains(i.ListenAddresses, c.addr) {
		t.Errorf("GET /debug/v1/info: %s (%v), want listenAddresses with %s", info, err, c.addr)
	}
	if v := mustHTTP(t, http.MethodGet, c.rest+"/debug/v1/version", nil); !strings.HasPrefix(string(v), "courier ") {
		t.Errorf("GET /debug/v1/version: %q", v)
	}

	// The archive commits in batches: wait until the gauge shows them all.
	var excerpt []string
	waitFor(t, 10*time.Second, "metrics of C", func() (bool, string) {
		code, body, err := httpDo(http.MethodGet, c.metrics+"/metrics", nil)
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("GET /metrics: %d %v", code, err)
		}
		vals := map[string]float64{}
		excerpt = excerpt[:0]
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "waku_") || strings.HasPrefix(line, "courier_") || strings.HasPrefix(line, "libp2p_peers ") {
				excerpt = append(excerpt, line)
				if k, v, ok := strings.Cut(line, " "); ok {
					vals[k], _ = strconv.ParseFloat(v, 64)
				}
			}
		}
		// >=: a probe that missed the mesh may still arrive by gossip.
		ok := vals[`libp2p_peers`] == 1 &&
			vals[`waku_archive_messages{type="stored"}`] >= float64(stored) &&
			vals[`waku_archive_messages{type="ephemeral"}`] == float64(ephemeral) &&
			vals[`waku_archive_messages{type="duplicate"}`] == 0 &&
			vals[`waku_relay_messages_total{pubsub_topic="/waku/2/rs/0/0"}`] >= float64(stored+ephemeral) &&
			vals[`courier_drops_total{reason="invalid"}`] == 0
		return ok, strings.Join(excerpt, "\n")
	})
	t.Logf("GET /metrics (courier and waku lines):\n%s", strings.Join(excerpt, "\n"))
}

// checkOtherCluster starts D on cluster 16 with A as its static node and
// checks that the metadata protocol refuses the connection: one side logs
// the cluster mismatch, neither side ever accepts the other (no shards
// known) nor keeps it connected, and A keeps B.
func checkOtherCluster(t *testing.T, bin string, a, b *nodeProc) {
	t.Helper()
	d := startNode(t, bin, "D", "--cluster-id", "16", "--staticnode", a.addr)
	refused := func() int {
		return a.out.count(`msg="disconnecting peer"`, "peer="+d.id, "another cluster") +
			d.out.count(`msg="disconnecting peer"`, "peer="+a.id, "another cluster")
	}
	waitFor(t, 10*time.Second, "cluster mismatch logged by A or D", func() (bool, string) {
		return refused() > 0, "no disconnect logged"
	})

	// D re-dials its static node; each new connection lives until the
	// metadata check closes it, a few milliseconds. Sample both views for
	// 3 s: never accepted, and never connected for 5 samples in a row.
	type view struct {
		from, to           *nodeProc
		conn, run, maxRun  int
		samples, notListed int
	}
	views := []*view{{from: a, to: d}, {from: d, to: a}}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, v := range views {
			ps, err := v.from.peers()
			if err != nil {
				t.Fatal(err)
			}
			v.samples++
			p, ok := ps[v.to.id]
			if !ok {
				v.notListed++
			}
			if len(p.Shards) > 0 {
				t.Fatalf("%s accepted %s of another cluster: %+v", v.from.name, v.to.name, p)
			}
			if p.Connected == "Connected" {
				v.conn++
				v.run++
				v.maxRun = max(v.maxRun, v.run)
			} else {
				v.run = 0
			}
		}
	}
	for _, v := range views {
		t.Logf("%s's view of %s: %d of %d samples Connected (longest run %d), %d not listed",
			v.from.name, v.to.name, v.conn, v.samples, v.maxRun, v.notListed)
		if v.maxRun >= 5 || v.conn*2 > v.samples {
			t.Errorf("%s kept %s of another cluster connected: %d of %d samples, %d in a row",
				v.from.name, v.to.name, v.conn, v.samples, v.maxRun)
		}
	}
	t.Logf("cluster mismatch disconnects logged: A %d, D %d; D dialled A %d times",
		a.out.count(`msg="disconnecting peer"`, "peer="+d.id),
		d.out.count(`msg="disconnecting peer"`, "peer="+a.id),
		d.out.count(`msg="connected to static node"`))
	if ps, _ := a.peers(); ps[b.id].Connected != "Connected" {
		t.Errorf("A lost B while refusing D: %+v", ps[b.id])
	}
	took := d.stop(t)
	t.Logf("D exited 0 after SIGTERM in %v", took.Round(time.Millisecond))
}

// checkArchive opens n's archive (n has exited) and checks that every
// message of want is there, byte for byte, and that absent is not.
func checkArchive(t *testing.T, n *nodeProc, want map[message.Hash]restMessage, absent restMessage) {
	t.Helper()
	var arc archive.Archive
	var err error
	if n.dbURL != "" {
		arc, err = dburl.Open(context.Background(), n.dbURL, dburl.Config{})
	} else {
		arc, err = embedded.Open(filepath.Join(n.dataDir, "archive"), archive.Config{}, embedded.Options{})
	}
	if err != nil {
		t.Fatalf("open %s's archive: %v", n.name, err)
	}
	defer func() {
		if err := arc.Close(); err != nil {
			t.Errorf("close %s's archive: %v", n.name, err)
		}
	}()
	hashes := []message.Hash{absent.hash()}
	for h := range want {
		hashes = append(hashes, h)
	}
	got := map[message.Hash]archive.Stored{}
	for len(hashes) > 0 {
		chunk := hashes[:min(len(hashes), archive.MaxQueryHashes)]
		hashes = hashes[len(chunk):]
		q := archive.Query{Hashes: chunk, IncludeData: true, Forward: true, Limit: archive.MaxPageSize}
		for {
			res, err := arc.Query(context.Background(), q)
			if err != nil {
				t.Fatalf("query %s's archive: %v", n.name, err)
			}
			for _, s := range res.Messages {
				if _, dup := got[s.Hash]; dup {
					t.Errorf("%s's archive returned %s twice", n.name, s.Hash)
				}
				got[s.Hash] = s
			}
			if res.Cursor == nil {
				break
			}
			q.Cursor = res.Cursor
		}
	}
	if s, ok := got[absent.hash()]; ok {
		t.Errorf("%s's archive holds the ephemeral message %s", n.name, s.Hash)
	}
	lost := 0
	for h, m := range want {
		s, ok := got[h]
		if !ok {
			lost++
			t.Errorf("%s's archive lost %s (payload %d B, timestamp %d)", n.name, h, len(m.Payload), m.Timestamp)
			continue
		}
		wm := m.message()
		sm, err := message.Decode(s.Wire, nil)
		if err != nil || sm.Hash(e2eTopic, nil) != h {
			t.Errorf("%s's archive: wire bytes of %s do not decode to it (%v)", n.name, h, err)
			continue
		}
		if s.PubsubTopic != e2eTopic || !bytes.Equal(sm.Payload, m.Payload) ||
			sm.ContentTopic != m.ContentTopic || sm.Timestamp != m.Timestamp ||
			!bytes.Equal(sm.Meta, m.Meta) || sm.Version != m.Version || s.Timestamp != m.Timestamp {
			t.Errorf("%s's archive has %s as %+v on %q, want %+v", n.name, h, sm, s.PubsubTopic, wm)
		}
	}
	if lost == 0 && len(got) != len(want) {
		t.Errorf("%s's archive returned %d messages for %d hashes", n.name, len(got), len(want))
	}
}
