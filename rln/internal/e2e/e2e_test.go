package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/relay"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/keystore"
	"github.com/couriernet/courier/rln/membership"
)

const (
	cluster      = 66
	topic        = "/waku/2/rs/66/0"
	contentTopic = "/courier/1/rln-e2e/proto"
	epochSec     = 600
)

// TestRLNRelayEndToEnd runs RLN relay with real binaries over a membership
// contract on a chain served over HTTP JSON-RPC, the path
// --rln-relay-eth-client-address takes: A's membership is registered by
// `courier generateRlnKeystore` (with its approval step), B's, C's and the
// in-test peer D's directly; A, B and C run `courier node --rln-relay` in
// a line A–B–C with their keystores. Messages published over REST on A get
// A's proofs, reach B and C and are archived; A's REST refuses the message
// over its limit with nwaku's text and C's a message with a broken proof.
// A light client pushes to C with lightpush: C attaches its proofs, and
// answers the push over its limit 504 OUT_OF_RLN_PROOF with nwaku's text.
// D, a relay peer without RLN connected to B alone, sends a valid message,
// a second one with the same message id in the epoch (over its limit of
// one), one whose proof is not for its content and one without a proof:
// B drops each of the last three, counts it under its reason, and D's
// gossipsub score on B falls below zero.
func TestRLNRelayEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds courier and runs node processes over a served chain")
	}
	chaintest.Require(t)
	circuits := circuitDir(t)
	bin := buildCourier(t)

	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	chain.Mine(t, 200*time.Millisecond)
	srv := chain.Serve(t)
	contract := d.Membership.Hex()
	chainFlags := []string{"--rln-relay-eth-client-address=" + srv.URL(), "--rln-relay-eth-contract-address=" + contract,
		"--rln-relay-chain-id=" + chaintest.ChainID.String()}
	dir := t.TempDir()

	// A: courier's own generateRlnKeystore registers and saves, approving
	// the deposit from the same account.
	d.Mint(t, chaintest.Address(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil))
	ksA := filepath.Join(dir, "a.json")
	out := runCourier(t, bin, append([]string{"generateRlnKeystore", "--execute", "--rln-relay-approve-deposit",
		"--rln-relay-eth-private-key=" + hex.EncodeToString(crypto.FromECDSA(chaintest.Key(1))), "--rln-relay-user-message-limit=2",
		"--rln-relay-cred-path=" + ksA, "--rln-relay-cred-password=pw-a"}, chainFlags...)...)
	for _, want := range []string{"Deposit approved", `msg="Your membership has been registered on-chain."`, "membershipIndex=0", "userMessageLimit=2", "credentials persisted"} {
		if !strings.Contains(out, want) {
			t.Fatalf("generateRlnKeystore: no %q in its output:\n%s", want, out)
		}
	}
	ksB := addMember(t, d, 2, 10, filepath.Join(dir, "b.json"), "pw-b")
	ksC := addMember(t, d, 3, 2, filepath.Join(dir, "c.json"), "pw-c")
	dMember := register(t, d, srv.URL(), 4, 1)

	node := func(name, ks, pw string, extra ...string) *nodeProc {
		args := append([]string{"node", "--listen-address=127.0.0.1", "--tcp-port=0", "--rest", "--rest-address=127.0.0.1", "--rest-port=0",
			"--rest-admin", "--metrics-server", "--metrics-server-address=127.0.0.1", "--metrics-server-port=0", "--store",
			"--data-dir=" + t.TempDir(), fmt.Sprintf("--cluster-id=%d", cluster), "--shard=0", "--rln-relay", "--rln-relay-dynamic",
			"--rln-relay-cred-path=" + ks, "--rln-relay-cred-password=" + pw, fmt.Sprintf("--rln-relay-epoch-sec=%d", epochSec),
			"--rln-relay-circuit-dir=" + circuits}, chainFlags...)
		return startNode(t, bin, name, append(args, extra...)...)
	}
	a := node("A", ksA, "pw-a")
	b := node("B", ksB, "pw-b", "--staticnode="+a.addr)
	c := node("C", ksC, "pw-c", "--staticnode="+b.addr, "--lightpush")
	for _, n := range []*nodeProc{a, b, c} {
		waitFor(t, 30*time.Second, n.name+"'s Rln Relay READY and relay peers", func() bool {
			return n.rlnHealth(t) == "READY" && len(n.relayPeers(t)) > 0
		})
	}
	// B forwards what it accepts to its mesh peers: A's messages reach C
	// at once when C is in B's mesh, not at a later heartbeat's gossip.
	waitFor(t, 30*time.Second, "A and C in B's mesh", func() bool { return len(b.meshPeers(t)) == 2 })

	// A publishes over REST: each message gets one of A's two message ids
	// of the epoch; the third is refused with nwaku's answer.
	ts := time.Now().UnixNano()
	var published, pushed []string
	for i := range 3 {
		payload := fmt.Sprintf("from A over REST, %d", i)
		code, body := a.post(t, "/relay/v1/messages/"+url.PathEscape(topic), map[string]any{
			"payload": base64.StdEncoding.EncodeToString([]byte(payload)), "contentTopic": contentTopic, "timestamp": ts + int64(i)})
		switch {
		case i < 2 && (code != http.StatusOK || body != "OK"):
			t.Fatalf("A: publish %d: %d %q", i, code, body)
		case i == 2 && (code != http.StatusInternalServerError || !strings.HasPrefix(body,
			"Failed to publish: error appending RLN proof to message: could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: 2 & nonceLimit: 2")):
			t.Fatalf("A: publish over the limit: %d %q", code, body)
		}
		if i < 2 {
			published = append(published, payload)
		}
	}
	t.Logf("A's REST publishes, with A's proofs, took %v", time.Since(time.Unix(0, ts)).Round(time.Millisecond))
	// A proof that is not one: C's REST refuses it as nwaku does.
	code, body := c.post(t, "/relay/v1/messages/"+url.PathEscape(topic), map[string]any{
		"payload": base64.StdEncoding.EncodeToString([]byte("bad proof")), "contentTopic": contentTopic,
		"proof": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x0a, 0x02, 1, 2}, 4))})
	if code != http.StatusBadRequest || body != "Failed to publish: RLN validation failed" {
		t.Fatalf("C: publish with a broken proof: %d %q", code, body)
	}

	// A light client pushes to C with lightpush v3 messages without a
	// proof: C attaches its proofs, two in the epoch, and answers the third
	// 504 OUT_OF_RLN_PROOF with nwaku's text.
	lp := lightpush.NewClient(testHost(t, c), lightpush.ClientConfig{})
	for i := range 3 {
		payload := fmt.Sprintf("to C over lightpush, %d", i)
		resp, err := lp.Push(context.Background(), c.id(t), topic, &message.Message{Payload: []byte(payload), ContentTopic: contentTopic})
		if err != nil {
			t.Fatalf("lightpush %d to C: %v", i, err)
		}
		switch {
		case i < 2 && resp.StatusCode != lightpush.StatusOK:
			t.Fatalf("lightpush %d to C: %d %q", i, resp.StatusCode, resp.StatusDesc)
		case i == 2 && (resp.StatusCode != lightpush.StatusOutOfRLNProof || resp.StatusDesc !=
			"could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: 2 & nonceLimit: 2"):
			t.Fatalf("lightpush over C's limit: %d %q", resp.StatusCode, resp.StatusDesc)
		}
		if i < 2 {
			pushed = append(pushed, payload)
		}
	}

	// D, an in-test relay without RLN, connected to B only.
	dRelay, dID := testPeer(t, b)
	waitFor(t, 30*time.Second, "D among B's relay peers", func() bool { return b.relayPeer(t, dID) != nil })
	prover, err := rln.NewProver(rln.ProverConfig{Dir: circuits})
	if err != nil {
		t.Fatal(err)
	}
	// The proofs cover the timestamp, so it is set before they are made,
	// and they are made here, in the test's process: under -race on a
	// loaded machine two take 5-30 s. B's validator refuses a message
	// 21 s or more from its clock, and its archive one more than 20 s
	// away, so a timestamp of before the proving ages the valid message
	// out of B's archive, or all four out of the validator. D stamps its
	// messages dLead ahead instead, as a sender does that stamps the time
	// it expects to send: they are within the window when sent anywhere
	// between at once and dLead+20 s after proving began.
	const dLead = 15 * time.Second
	start := time.Now()
	now := start.Add(dLead).UnixNano()
	d1 := dMember.message(t, prover, "from D, message id 0", now, 0)
	d2 := dMember.message(t, prover, "from D, message id 0 again: over the limit", now, 0)
	proving := time.Since(start)
	t.Logf("D's two proofs took %v", proving.Round(time.Millisecond))
	if proving > dLead+19*time.Second {
		t.Fatalf("D's two proofs took %v: their messages, stamped %v ahead, would be too old for B's archive (20 s) or validator (21 s)", proving, dLead)
	}
	d3 := *d1
	d3.Payload = []byte("from D, with the proof of another message")
	d4 := &message.Message{Payload: []byte("from D, without a proof"), ContentTopic: contentTopic, Timestamp: now, Present: message.HasTimestamp}
	for _, m := range []*message.Message{d1, d2, &d3, d4} {
		if _, err := dRelay.Publish(context.Background(), topic, m); err != nil {
			t.Fatal(err)
		}
	}

	// The counted drops on B, and D's score there.
	var metrics string
	waitFor(t, 30*time.Second, "B's counts of D's messages", func() bool {
		metrics = b.metricsText(t)
		return metricValue(metrics, `courier_rln_messages_total{reason="spam",result="reject"}`) == 1 &&
			metricValue(metrics, `courier_rln_messages_total{reason="invalid_proof",result="reject"}`) == 1 &&
			metricValue(metrics, `courier_rln_messages_total{reason="no_proof",result="reject"}`) == 1 &&
			metricValue(metrics, `courier_rln_messages_total{reason="valid",result="accept"}`) == 5
	})
	for metric, want := range map[string]float64{
		`waku_rln_spam_messages_total_total`:                          1,
		`waku_rln_invalid_messages_total_total{type="invalid_proof"}`: 1,
		`waku_rln_proof_verification_total_total`:                     7, // A's two, C's two, D's valid one, its spam and the one for other content; not the one without a proof
		`waku_rln_number_registered_memberships`:                      4,
	} {
		if got := metricValue(metrics, metric); got != want {
			t.Errorf("B: %s = %v, want %v", metric, got, want)
		}
	}
	t.Logf("B's /metrics, RLN lines:\n%s", grepLines(metrics, "rln"))
	waitFor(t, 30*time.Second, "D's gossipsub score on B below zero", func() bool {
		p := b.relayPeer(t, dID)
		return p != nil && p.Score != nil && *p.Score < 0
	})
	t.Logf("D's score on B: %v", *b.relayPeer(t, dID).Score)

	// A's and the light client's messages reached B and C and are
	// archived there; D's valid one is archived on B.
	wantC := append(append([]string(nil), published...), pushed...)
	wantB := append(append([]string(nil), wantC...), string(d1.Payload)+"|"+string(d2.Payload))
	var missingB, missingC []string
	waitForReport(t, 30*time.Second, "A's and the light client's messages archived on B and C", func() bool {
		missingB, missingC = unarchived(t, b, wantB), unarchived(t, c, wantC)
		return len(missingB) == 0 && len(missingC) == 0
	}, func() string {
		return fmt.Sprintf("missing on B: %q\nmissing on C: %q\nB's /metrics, RLN, archive and relay lines:\n%s\nC's:\n%s",
			missingB, missingC, grepLines(b.metricsText(t), "rln", "archive", "relay"), grepLines(c.metricsText(t), "rln", "archive", "relay"))
	})
	for _, n := range []*nodeProc{a, b, c} {
		n.stop(t)
	}
}

// member is a membership the test holds the secrets of.
type member struct {
	id     *rln.IdentityCredential
	limit  uint64
	path   rln.MerklePath
	client *membership.Client
}

// register registers a new identity from account i with limit messages
// per epoch, and reads its Merkle path over the JSON-RPC endpoint.
func register(t *testing.T, d *chaintest.Deployment, endpoint string, i int, limit uint32) *member {
	t.Helper()
	id, err := rln.NewIdentityCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	index := d.Register(t, chaintest.Key(i), id.Commitment.Big(), limit)
	c, err := membership.Dial(context.Background(), membership.Config{Endpoints: []string{endpoint}, Contract: d.Membership})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	siblings, err := c.MerkleProof(context.Background(), index)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{id: id, limit: uint64(limit), path: rln.MerklePath{Index: uint64(index)}, client: c}
	for j, s := range siblings {
		m.path.Siblings[j] = rln.Field(s)
	}
	return m
}

// message makes a message with a proof of m for message id.
func (m *member) message(t *testing.T, p *rln.Prover, payload string, ts int64, id uint64) *message.Message {
	t.Helper()
	msg := &message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: ts, Present: message.HasTimestamp | message.HasRateLimitProof}
	proof, err := p.Prove(rln.Signal{Payload: msg.Payload, ContentTopic: contentTopic, Timestamp: ts},
		&rln.Member{SecretHash: m.id.SecretHash, UserMessageLimit: m.limit, Path: m.path}, id, rln.EpochAt(ts, epochSec))
	if err != nil {
		t.Fatal(err)
	}
	msg.RateLimitProof = proof.Marshal()
	return msg
}

// addMember registers a new identity from account i and saves it in a
// keystore at path, with a low work factor.
func addMember(t *testing.T, d *chaintest.Deployment, i int, limit uint32, path, password string) string {
	t.Helper()
	id, err := rln.NewIdentityCredential(nil)
	if err != nil {
		t.Fatal(err)
	}
	index := d.Register(t, chaintest.Key(i), id.Commitment.Big(), limit)
	m := keystore.Membership{Contract: keystore.MembershipContract{ChainID: chaintest.ChainID.String(), Address: d.Membership.Hex()},
		TreeIndex: uint64(index), UserMessageLimit: uint64(limit),
		Identity: keystore.IdentityCredential{IDTrapdoor: id.Trapdoor, IDNullifier: id.Nullifier, IDSecretHash: id.SecretHash, IDCommitment: id.Commitment}}
	if _, err := keystore.AddMembership(path, password, m, keystore.RLN(), keystore.EncryptOptions{Iterations: 1000}); err != nil {
		t.Fatal(err)
	}
	return path
}

// testHost starts a libp2p host with the metadata protocol of the nodes'
// cluster, connected to n.
func testHost(t *testing.T, n *nodeProc) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	md, err := metadata.New(h, metadata.Config{ClusterID: cluster, Shards: func() []uint16 { return []uint16{0} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { md.Close() })
	pi, err := peer.AddrInfoFromString(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(context.Background(), *pi); err != nil {
		t.Fatal(err)
	}
	return h
}

// testPeer starts D: a host of testHost connected to n with a relay
// without RLN, subscribed to the topic.
func testPeer(t *testing.T, n *nodeProc) (*relay.Relay, peer.ID) {
	t.Helper()
	h := testHost(t, n)
	r, err := relay.New(h, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Subscribe(topic, relay.OwnerConfig); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "B on D's topic", func() bool { return len(r.TopicPeers(topic)) > 0 })
	return r, h.ID()
}

// id returns n's peer id, from its listen address.
func (n *nodeProc) id(t *testing.T) peer.ID {
	t.Helper()
	pi, err := peer.AddrInfoFromString(n.addr)
	if err != nil {
		t.Fatal(err)
	}
	return pi.ID
}

// unarchived returns the payloads of want that n's archive does not hold
// (all of them when the store does not answer); "x|y" wants one of x and
// y.
func unarchived(t *testing.T, n *nodeProc, want []string) []string {
	t.Helper()
	var resp struct {
		Messages []struct {
			Message struct {
				Payload []byte `json:"payload"`
			} `json:"message"`
		} `json:"messages"`
	}
	code, body := n.get(t, "/store/v3/messages?includeData=true&pageSize=100&pubsubTopic="+url.QueryEscape(topic))
	if code != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil {
		t.Logf("%s: store answered %d %q", n.name, code, body)
		return want
	}
	have := map[string]bool{}
	for _, m := range resp.Messages {
		have[string(m.Message.Payload)] = true
	}
	var missing []string
	for _, w := range want {
		found := false
		for _, alt := range strings.Split(w, "|") {
			found = found || have[alt]
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

// circuitDir finds the RLN circuit files (internal/testcircuit: skipped
// when they are absent, failed under CI=true) and returns their directory
// as an absolute path, for node processes with another working directory.
func circuitDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(testcircuit.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// buildCourier builds cmd/courier into a temporary directory.
func buildCourier(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "courier")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "github.com/couriernet/courier/cmd/courier")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

// childEnv is the test's environment without the variables that set
// courier's flags.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COURIER_") && !strings.HasPrefix(kv, "WAKUNODE2_") {
			env = append(env, kv)
		}
	}
	return env
}

// runCourier runs courier to the end and returns its output; a failure
// fails the test.
func runCourier(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("courier %s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

// syncBuf is a bytes.Buffer safe for the process's writes and the test's
// reads.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nodeProc is a `courier node` process with its addresses.
type nodeProc struct {
	name                string
	cmd                 *exec.Cmd
	out                 *syncBuf
	done                chan struct{}
	addr, rest, metrics string
}

var (
	reListen  = regexp.MustCompile(`msg=listening addr=(/ip4/127\.0\.0\.1/tcp/\d+/p2p/\w+)`)
	reREST    = regexp.MustCompile(`msg="serving REST API" addr=(127\.0\.0\.1:\d+)`)
	reMetrics = regexp.MustCompile(`msg="serving metrics" addr=(127\.0\.0\.1:\d+)`)
)

// startNode starts courier with args and waits for its addresses.
func startNode(t *testing.T, bin, name string, args ...string) *nodeProc {
	t.Helper()
	n := &nodeProc{name: name, cmd: exec.Command(bin, args...), out: new(syncBuf), done: make(chan struct{})}
	n.cmd.Env = childEnv()
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		select {
		case <-n.done:
		default:
			n.cmd.Process.Kill()
			<-n.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, n.out)
		}
	})
	find := func(re *regexp.Regexp) string {
		var m []string
		waitFor(t, 60*time.Second, name+" logging "+re.String(), func() bool {
			select {
			case <-n.done:
				t.Fatalf("%s exited: %v\n%s", name, n.cmd.ProcessState, n.out)
			default:
			}
			m = re.FindStringSubmatch(n.out.String())
			return m != nil
		})
		return m[1]
	}
	n.addr, n.rest, n.metrics = find(reListen), "http://"+find(reREST), "http://"+find(reMetrics)
	t.Logf("%s: %s, REST %s", name, n.addr, n.rest)
	return n
}

// stop sends SIGTERM and wants exit code 0 within 30 s.
func (n *nodeProc) stop(t *testing.T) {
	t.Helper()
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after SIGTERM", n.name)
	}
	if code := n.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("%s exited with %d after SIGTERM", n.name, code)
	}
}

func (n *nodeProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(n.rest + path)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", n.name, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (n *nodeProc) post(t *testing.T, path string, v any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := http.Post(n.rest+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: POST %s: %v", n.name, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// rlnHealth returns the "Rln Relay" entry's health in /health.
func (n *nodeProc) rlnHealth(t *testing.T) string {
	t.Helper()
	var h struct {
		Protocols []map[string]string `json:"protocolsHealth"`
	}
	code, body := n.get(t, "/health")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
		return ""
	}
	for _, p := range h.Protocols {
		if s, ok := p["Rln Relay"]; ok {
			return s
		}
	}
	return ""
}

// relayPeer is one peer of /admin/v1/peers/relay.
type relayPeer struct {
	Multiaddr string   `json:"multiaddr"`
	Score     *float64 `json:"score"`
}

// relayPeers returns the peers of the topic's shard in
// /admin/v1/peers/relay.
func (n *nodeProc) relayPeers(t *testing.T) []relayPeer {
	t.Helper()
	return n.shardPeers(t, "/admin/v1/peers/relay")
}

// shardPeers returns the peers of shard 0 in path's []PeersOfShard.
func (n *nodeProc) shardPeers(t *testing.T, path string) []relayPeer {
	t.Helper()
	var shards []struct {
		Shard uint16      `json:"shard"`
		Peers []relayPeer `json:"peers"`
	}
	code, body := n.get(t, path)
	if code != http.StatusOK || json.Unmarshal([]byte(body), &shards) != nil {
		return nil
	}
	for _, s := range shards {
		if s.Shard == 0 {
			return s.Peers
		}
	}
	return nil
}

// meshPeers returns the peers of the topic's shard in
// /admin/v1/peers/mesh: those of the node's gossipsub mesh.
func (n *nodeProc) meshPeers(t *testing.T) []relayPeer {
	t.Helper()
	return n.shardPeers(t, "/admin/v1/peers/mesh")
}

func (n *nodeProc) relayPeer(t *testing.T, id peer.ID) *relayPeer {
	for _, p := range n.relayPeers(t) {
		if strings.HasSuffix(p.Multiaddr, "/p2p/"+id.String()) {
			return &p
		}
	}
	return nil
}

func (n *nodeProc) metricsText(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(n.metrics + "/metrics")
	if err != nil {
		t.Fatalf("%s: /metrics: %v", n.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// metricValue returns the value of the sample named (with its labels, in
// the exposition's order) in text, or -1 when there is none.
func metricValue(text, sample string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// grepLines returns the sample lines of text that contain one of subs.
func grepLines(text string, subs ...string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForReport(t, timeout, what, cond, nil)
}

// waitForReport is waitFor with report's account of what is missing in
// the failure.
func waitForReport(t *testing.T, timeout time.Duration, what string, cond func() bool, report func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			if report != nil {
				t.Fatalf("timed out after %v waiting for %s\n%s", timeout, what, report())
			}
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
