//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/testcircuit"
)

// The RLN pair of TestDashboards: C publishes with a membership of its
// own keystore, D verifies without one and archives, both on their own
// cluster, against the local chain of cmd rlntestchain.
const (
	rlnCluster      = 66
	rlnTopic        = "/waku/2/rs/66/0"
	rlnContentTopic = "/courier/1/dashboards-rln/proto"
	// rlnPublished is how many messages C publishes with its proofs: one
	// proof each, and D verifies each.
	rlnPublished = 2
)

// rlnPair is the two RLN relay nodes TestDashboards adds to its scrape.
type rlnPair struct {
	c, d *nodeProc
	// off says why the pair was not started ("" when it was): the
	// circuit files or Node.js for the contract's compiler are missing
	// and CI is not set.
	off string
}

// startRLNPair registers C's membership with `courier generateRlnKeystore`
// on the chain chain returns and starts C and D with --rln-relay. It
// returns a pair with off set when what RLN needs is missing (the circuit
// files, or the chain), and fails the test instead under CI=true.
func startRLNPair(t *testing.T, bin string, chain func() (*testChain, error)) *rlnPair {
	t.Helper()
	start := time.Now()
	circuits, err := testcircuit.Find()
	if err != nil {
		return rlnUnavailable(t, err.Error())
	}
	ch, err := chain()
	if err != nil {
		return rlnUnavailable(t, err.Error())
	}
	t.Logf("RLN: chain up after %v more", time.Since(start).Round(time.Millisecond))
	chainFlags := []string{"--rln-relay-eth-client-address=" + ch.rpc, "--rln-relay-eth-contract-address=" + ch.contract,
		"--rln-relay-chain-id=1337"}
	ks := filepath.Join(t.TempDir(), "c.json")
	reg := exec.Command(bin, append([]string{"generateRlnKeystore", "--execute", "--rln-relay-approve-deposit",
		"--rln-relay-eth-private-key=" + ch.key1, "--rln-relay-user-message-limit=10",
		"--rln-relay-cred-path=" + ks, "--rln-relay-cred-password=pw-c"}, chainFlags...)...)
	reg.Env = childEnv()
	out, err := reg.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("credentials persisted")) {
		t.Fatalf("generateRlnKeystore: %v\n%s", err, out)
	}
	t.Logf("RLN: C's membership registered at %v", time.Since(start).Round(time.Millisecond))
	common := append([]string{fmt.Sprintf("--cluster-id=%d", rlnCluster), "--shard=0", "--rln-relay", "--rln-relay-dynamic",
		"--rln-relay-epoch-sec=600", "--rln-relay-circuit-dir=" + circuits,
		"--metrics-server", "--metrics-server-address", "127.0.0.1", "--metrics-server-port", "0"}, chainFlags...)
	p := &rlnPair{}
	p.c = startNode(t, bin, "C", append([]string{"--rln-relay-cred-path=" + ks, "--rln-relay-cred-password=pw-c"}, common...)...)
	p.d = startNode(t, bin, "D", append([]string{"--store", "--staticnode", p.c.addr}, common...)...)
	for _, n := range []*nodeProc{p.c, p.d} {
		waitFor(t, 60*time.Second, n.name+"'s Rln Relay READY", func() (bool, string) {
			code, body, err := httpDo(http.MethodGet, n.rest+"/health", nil)
			return err == nil && code == http.StatusOK && bytes.Contains(body, []byte(`"Rln Relay":"READY"`)), fmt.Sprint(code, string(body), err)
		})
	}
	t.Logf("RLN: C and D READY at %v", time.Since(start).Round(time.Millisecond))
	waitFor(t, 20*time.Second, "C and D connected", func() (bool, string) {
		ps, err := p.d.peers()
		return err == nil && ps[p.c.id].Connected == "Connected", fmt.Sprint(ps, err)
	})
	return p
}

// rlnUnavailable skips the RLN part of the test with why, or fails the
// test under CI=true.
func rlnUnavailable(t *testing.T, why string) *rlnPair {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Logf("SKIP the RLN nodes, their expressions may stay empty: %s", why)
	return &rlnPair{off: why}
}

// testChain is a running rlntestchain.
type testChain struct {
	rpc, contract string
	key1          string // funded account 1's private key, hex
}

var (
	reChainRPC      = regexp.MustCompile(`RPC endpoint \(HTTP\):\s+(http://\S+)`)
	reChainContract = regexp.MustCompile(`membership contract:\s+(0x[0-9a-fA-F]{40})`)
	reChainKey1     = regexp.MustCompile(`^\s+1\s+0x[0-9a-fA-F]{40}\s+private key ([0-9a-f]{64})`)
	reChainServing  = regexp.MustCompile(`^serving until`)
)

// startTestChain builds and runs rlntestchain (the command of
// rln/internal/chaintest, which this package may not import) in the
// background, and returns a function that waits for it and reads the
// endpoint, the contract and account 1's key from its output, failing the
// test when the build fails. That function returns an error when the
// chain cannot be had: the command exits before it serves (no Node.js or
// npm to compile the contracts).
func startTestChain(t *testing.T) func() (*testChain, error) {
	t.Helper()
	done := make(chan error, 1)
	bin := filepath.Join(t.TempDir(), "rlntestchain")
	ctx, cancel := context.WithCancel(context.Background())
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./rln/internal/chaintest/cmd/rlntestchain")
	build.Dir = filepath.Join("..", "..")
	built := make(chan struct{})
	t.Cleanup(func() { cancel(); <-built }) // a test that ends first stops the build
	go func() {
		defer close(built)
		out, err := build.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("go build rlntestchain: %v\n%s", err, out)
		}
		done <- err
	}()
	return func() (*testChain, error) {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		p := startProc(t, "rlntestchain", bin)
		deadline := time.Now().Add(5 * time.Minute) // the first run installs solc with npm
		for p.out.find(reChainServing) == nil {
			if p.exited() {
				return nil, fmt.Errorf("rlntestchain exited (%v): %s", p.waitErr, strings.TrimSpace(p.log.String()))
			}
			if time.Now().After(deadline) {
				t.Fatalf("rlntestchain not serving after 5 minutes:\n%s\n%s", p.out, p.log)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c := &testChain{}
		for _, f := range []struct {
			re  *regexp.Regexp
			dst *string
		}{{reChainRPC, &c.rpc}, {reChainContract, &c.contract}, {reChainKey1, &c.key1}} {
			m := p.out.find(f.re)
			if m == nil {
				t.Fatalf("rlntestchain: no %q in its output:\n%s", f.re, p.out)
			}
			*f.dst = m[1]
		}
		return c, nil
	}
}

// run publishes rlnPublished messages on C, which attaches its proofs,
// waits until D archived them, and then offers D, over its REST API, one
// of them again (a duplicate, which nwaku counts as spam), its proof with
// other content (invalid_proof) and a message without a proof
// (timestamp_mismatch, as nwaku counts it): D's validator refuses each
// with nwaku's 400 "Failed to publish: RLN validation failed".
func (p *rlnPair) run(t *testing.T) {
	t.Helper()
	topic := "/relay/v1/messages/" + url.PathEscape(rlnTopic)
	start := time.Now()
	for i := range rlnPublished {
		m := restMessage{Payload: []byte(fmt.Sprintf("from C, %d", i)), ContentTopic: rlnContentTopic, Timestamp: time.Now().UnixNano()}
		if body := mustHTTP(t, http.MethodPost, p.c.rest+topic, m); string(body) != "OK" {
			t.Fatalf("C: publish %d: %q", i, body)
		}
	}
	t.Logf("C's %d publishes, with their proofs, took %v", rlnPublished, time.Since(start).Round(time.Millisecond))
	type stored struct {
		Messages []struct {
			Message struct {
				Payload      []byte `json:"payload"`
				ContentTopic string `json:"contentTopic"`
				Timestamp    int64  `json:"timestamp"`
				Proof        []byte `json:"proof"`
			} `json:"message"`
		} `json:"messages"`
	}
	var s stored
	q := url.Values{"pubsubTopic": {rlnTopic}, "contentTopics": {rlnContentTopic}, "includeData": {"true"}}
	waitFor(t, 30*time.Second, "C's messages archived on D", func() (bool, string) {
		code, body, err := httpDo(http.MethodGet, p.d.rest+"/store/v3/messages?"+q.Encode(), nil)
		s = stored{}
		return err == nil && code == http.StatusOK && json.Unmarshal(body, &s) == nil && len(s.Messages) == rlnPublished &&
			len(s.Messages[0].Message.Proof) > 0, fmt.Sprint(code, string(body), err)
	})
	// The newest one: D's validator refuses a message 21 s or more from
	// its clock as invalid_timestamp before it looks for duplicates.
	last := s.Messages[len(s.Messages)-1].Message
	offer := func(what string, m map[string]any) {
		code, body, err := httpDo(http.MethodPost, p.d.rest+topic, m)
		if err != nil || code != http.StatusBadRequest || string(body) != "Failed to publish: RLN validation failed" {
			t.Fatalf("D: publish %s: %d %q %v, want 400 %q", what, code, body, err, "Failed to publish: RLN validation failed")
		}
	}
	offer("a duplicate", map[string]any{"payload": last.Payload, "contentTopic": last.ContentTopic, "timestamp": last.Timestamp, "proof": last.Proof})
	offer("with the proof of another message", map[string]any{"payload": []byte("not what the proof is for"),
		"contentTopic": last.ContentTopic, "timestamp": last.Timestamp, "proof": last.Proof})
	offer("without a proof", map[string]any{"payload": []byte("without a proof"), "contentTopic": rlnContentTopic, "timestamp": time.Now().UnixNano()})

	for _, c := range []struct {
		n      *nodeProc
		sample string
		want   float64
	}{
		{p.c, "waku_rln_total_generated_proofs", rlnPublished},
		{p.d, "waku_rln_proof_verification_total_total", rlnPublished + 2}, // C's, the duplicate's and the other content's
		{p.d, "waku_rln_spam_messages_total_total", 1},
		{p.d, `waku_rln_invalid_messages_total_total{type="invalid_proof"}`, 1},
		{p.d, `waku_rln_invalid_messages_total_total{type="timestamp_mismatch"}`, 1},
		{p.d, "waku_rln_number_registered_memberships", 1},
	} {
		if got, ok := sampleValue(string(mustHTTP(t, http.MethodGet, c.n.metrics+"/metrics", nil)), c.sample); !ok || got != c.want {
			t.Errorf("%s: %s = %v (present %v), want %v", c.n.name, c.sample, got, ok, c.want)
		}
	}
}

// sampleValue returns the value of the sample named with its labels as
// text, in the Prometheus text exposition, writes it.
func sampleValue(text, sample string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
