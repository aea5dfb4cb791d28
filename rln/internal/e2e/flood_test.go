//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/netlab"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/internal/chaintest"
)

// The RLN flood scenario's parameters.
const (
	// floodEpochSec is the nodes' --rln-relay-epoch-sec: short, so that
	// the flooder's messages can span two epochs within the 20 s clock gap
	// a validator allows.
	floodEpochSec = 10
	// floodLimit is the flooder's user message limit: message ids 0 and 1
	// in each epoch.
	floodLimit = 2
	// floodEpochs is how many epochs the flooder's messages are in.
	floodEpochs = 2
	// floodPerID is how many messages the flooder proves for each message
	// id of each epoch, each with its own payload: one within its limit,
	// the others over it (the same nullifier with another share).
	floodPerID = 10
	// floodRepeats is how many times the flooder sends each proved message
	// again with other meta bytes: another message hash, so gossipsub
	// does not find it seen, with the same signal and proof (the same
	// nullifier and share, nwaku's spam too).
	floodRepeats = 50
	// floodBatch is the messages in one of the flooder's RPCs.
	floodBatch = 10
	// honestRate is a's publishing rate, per second; honestLimit its
	// membership's limit, twice what the rate needs in an epoch.
	honestRate  = 2.0
	honestLimit = 2 * honestRate * floodEpochSec
	// floodPhase is the length of each measured phase of a's traffic.
	floodPhase = 20 * time.Second
	// floodStamp is how far each epoch's messages are stamped from the
	// epoch boundary between them (before it and after it), so that all
	// are within the clock gap (20 s, in whole seconds) of a node when
	// sent anywhere within 19 s of the boundary.
	floodStamp = 500 * time.Millisecond
	// chainAddr is where each node's namespace reaches the chain's
	// JSON-RPC endpoint (netlab Forward to the test's server); nwaku's
	// default port.
	chainAddr = "127.0.0.1:8540"
	// floodTopic is the content topic of the flooder's messages.
	floodTopic = "/netlab/1/rlnflood/proto"
)

// TestFaultsRLNFlood: three courier nodes with RLN relay over a served
// membership contract, a - b - c in network namespaces over 20 ms ± 5 ms
// links, each reaching the chain on its own loopback through a netlab
// Forward. a publishes 2 messages a second with proofs of its membership
// (limit 40 an epoch of 10 s), c delivers them. An in-test libp2p host
// attached to b holds a registered membership with a limit of 2 and sends
// b, as fast as it can over a raw gossipsub stream, 40 messages with valid
// proofs in two epochs (10 per message id: 4 within its limit, 36 over
// it), then each of them again with other meta bytes, 50 times. b accepts
// one message per message id and epoch, 4 in all, which c and every
// archive hold, rejects the others as spam (waku_rln_spam_messages_total),
// scores the flooder below the graylist threshold with nwaku's weights and
// disconnects it; c delivers every one of a's messages. The rate and
// latency a to c are reported before and during the flood.
func TestFaultsRLNFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("fault scenario: builds courier and runs RLN relay nodes in network namespaces over a served chain")
	}
	testStart := time.Now()
	netlab.Require(t)
	chaintest.Require(t)
	circuits := circuitDir(t)
	bin := buildCourier(t)
	prover := buildProver(t)

	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	chain.Mine(t, 200*time.Millisecond)
	srv := chain.Serve(t)
	ksA := addMember(t, d, 1, honestLimit, filepath.Join(t.TempDir(), "a.json"), "pw-a")
	flooder := register(t, d, srv.URL(), 2, floodLimit)

	l := netlab.New(t, netlab.Config{Name: "rlnflood", Link: netlab.LinkSpec{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}})
	hosts := []*netlab.Host{l.AddHost("a"), l.AddHost("b"), l.AddHost("c")}
	attacker := l.AddHost("x")
	rpc := strings.TrimPrefix(srv.URL(), "http://")
	keys, ids := make([]string, 3), make([]string, 3)
	for i, h := range hosts {
		h.Forward(chainAddr, rpc)
		var err error
		if keys[i], ids[i], err = netlab.NodeKey(); err != nil {
			t.Fatal(err)
		}
	}
	rlnFlags := []string{"--store", "--rln-relay", "--rln-relay-dynamic", "--rln-relay-eth-client-address=http://" + chainAddr,
		"--rln-relay-eth-contract-address=" + d.Membership.Hex(), "--rln-relay-chain-id=" + chaintest.ChainID.String(),
		fmt.Sprintf("--rln-relay-epoch-sec=%d", floodEpochSec)}
	// a - b - c: a dials b, b dials c; a alone has a membership.
	flags := [][]string{
		{"--staticnode", hosts[1].Multiaddr(ids[1]), "--rln-relay-cred-path=" + ksA, "--rln-relay-cred-password=pw-a", "--rln-relay-circuit-dir=" + circuits},
		{"--staticnode", hosts[2].Multiaddr(ids[2])},
		nil,
	}
	nodes := make([]*netlab.Node, 3)
	for i, h := range hosts {
		nodes[i] = h.StartNode(bin, t.TempDir(), append(append([]string{"--nodekey", keys[i]}, rlnFlags...), flags[i]...)...)
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	for _, n := range nodes {
		waitFor(t, 60*time.Second, n.Host.Name+"'s Rln Relay READY", func() bool { return rlnReady(n) })
	}
	waitFor(t, 30*time.Second, "gossipsub meshes a-b-c", func() bool {
		ka, _ := a.MeshPeers()
		kb, _ := b.MeshPeers()
		kc, _ := c.MeshPeers()
		return ka == 1 && kb == 2 && kc == 1
	})
	t.Logf("lab up %v after the start", time.Since(testStart).Round(100*time.Millisecond))

	// c's REST relay cache is polled for a's messages, and a's own for
	// when a had proved and relayed each: the part of the latency that is
	// a's proof.
	h := netlab.NewHistory()
	stop := h.Poll([]*netlab.Node{a, c}, 20*time.Millisecond)
	type phase struct {
		n        int
		p50, p99 time.Duration
		proof50  int // p50 of a's own delivery, ms
	}
	measure := func() phase {
		before := h.Count()
		if failed := h.PublishLoop(t, "rlnflood", []*netlab.Node{a}, int(floodPhase.Seconds()*honestRate), 256, honestRate); failed > 0 {
			t.Errorf("%d publishes refused", failed)
		}
		time.Sleep(2 * time.Second)
		var lat, own []time.Duration
		for _, x := range h.PublishedHashes()[before:] {
			p, _ := h.PublishedAt(x)
			if d, ok := h.FirstDelivery("c", x); ok {
				lat = append(lat, d.At.Sub(p.At))
			}
			if d, ok := h.FirstDelivery("a", x); ok {
				own = append(own, d.At.Sub(p.At))
			}
		}
		slices.Sort(lat)
		slices.Sort(own)
		return phase{n: len(lat), p50: netlab.Percentile(lat, 50), p99: netlab.Percentile(lat, 99),
			proof50: int(netlab.Percentile(own, 50).Milliseconds())}
	}
	base := measure()

	// The flooder connects to b, then proves its messages. Their
	// timestamps are around the epoch boundary nearest to when proving
	// will be done, as a pair of proofs now takes.
	peer := attacker.NewPeer()
	dialCtx, dialCancel := context.WithTimeout(context.Background(), 10*time.Second)
	g, err := netlab.DialGossip(dialCtx, peer, b)
	dialCancel()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	waitFor(t, 10*time.Second, "the flooder among b's relay peers", func() bool {
		_, ok, _ := b.RelayPeerScore(peer.ID().String())
		return ok
	})
	proveStart := time.Now()
	_, warm := prove(t, prover, circuits, flooder, floodMessages(proveStart)[:2])
	flood := floodMessages(nearestBoundary(time.Now().Add(warm * floodEpochs * floodLimit * floodPerID / 2 * 5 / 4)))
	boundary := time.Unix(0, flood[0].msg.Timestamp).Add(floodStamp)
	proofs, took := prove(t, prover, circuits, flooder, flood)
	for i := range flood {
		flood[i].msg.RateLimitProof = proofs[i]
	}
	batches := floodBatches(flood)
	total := 0
	for _, bt := range batches {
		total += len(bt)
	}
	if early := time.Until(boundary.Add(-19 * time.Second)); early > 0 {
		time.Sleep(early)
	}
	if late := time.Since(boundary.Add(19 * time.Second)); late > 0 {
		t.Fatalf("%d proofs took %v (a pair %v before): their messages, stamped %v from an epoch boundary %v ago, are outside the 20 s clock gap",
			len(flood), took, warm, floodStamp, time.Since(boundary))
	}
	when := fmt.Sprintf("%v away", time.Until(boundary).Round(100*time.Millisecond))
	if !time.Now().Before(boundary) {
		when = fmt.Sprintf("%v ago", time.Since(boundary).Round(100*time.Millisecond))
	}
	t.Logf("the flooder's %d proofs took %v (a pair %v before); %d messages to send, stamped %v from an epoch boundary %s",
		len(flood), took.Round(100*time.Millisecond), warm.Round(10*time.Millisecond), total, floodStamp, when)

	// The flood, while a publishes.
	ctx, cancel := context.WithTimeout(context.Background(), floodPhase)
	defer cancel()
	type floodResult struct {
		sent     int
		took     time.Duration
		cutAfter time.Duration
		err      error
	}
	res := make(chan floodResult, 1)
	floodStart := time.Now()
	go func() {
		var r floodResult
		r.sent, r.err = sendFlood(g, batches)
		r.took = time.Since(floodStart)
		for g.Connected() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if !g.Connected() {
			r.cutAfter = time.Since(floodStart)
		}
		res <- r
	}()
	during := measure()
	fr := <-res
	cancel()
	stop()
	peak := netlab.PeakRSS(t, nodes)

	if fr.err != nil {
		t.Errorf("flood: %v", fr.err)
	}
	disconnect := "never"
	if fr.cutAfter == 0 {
		t.Errorf("b did not disconnect the flooder within %v (%d messages sent); nwaku disconnects peers below the graylist threshold", floodPhase, fr.sent)
	} else {
		disconnect = fr.cutAfter.Round(10 * time.Millisecond).String()
	}
	minScore, logged := lowestScore(b, peer.ID().String())

	// What b counted.
	honest := h.Count()
	mb, err := b.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	mc, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	results := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if r, ok := strings.CutPrefix(k, "courier_rln_messages_total{"); ok && v != 0 {
				out[strings.TrimSuffix(r, "}")] = v
			}
		}
		return out
	}
	rb, rc := results(mb), results(mc)
	accepted := floodLimit * floodEpochs
	spam := rb[`reason="spam",result="reject"`] + rb[`reason="duplicate",result="reject"`]
	validated := 0.0
	for k, v := range rb {
		validated += v
		if k != `reason="valid",result="accept"` && k != `reason="spam",result="reject"` && k != `reason="duplicate",result="reject"` {
			t.Errorf("b: courier_rln_messages_total{%s} = %v; the flooder's proofs are valid, its messages only over its limit", k, v)
		}
	}
	if got, want := rb[`reason="valid",result="accept"`], float64(honest+accepted); got != want {
		t.Errorf("b accepted %v messages with valid proofs, want a's %d and the flooder's %d (its limit of %d in each of %d epochs)", got, honest, accepted, floodLimit, floodEpochs)
	}
	// Every other message of the flooder b validated is spam, as nwaku
	// counts it; at least 11 of them, since nwaku's weight of -100 an
	// invalid message, squared, puts a peer below -10,000 at the 11th.
	if got, want := mb["waku_rln_spam_messages_total_total"], validated-float64(honest+accepted); got != spam || got != want || got < 11 {
		t.Errorf("b: waku_rln_spam_messages_total_total = %v, courier_rln_messages_total spam and duplicate %v; want both %v, the flooder's messages validated and not accepted, at least 11", got, spam, want)
	}
	graylisted := mb[`courier_drops_total{reason="graylisted_peer"}`]
	// gossipsub refuses a peer's RPCs only while its score is below the
	// graylist threshold, so graylisted drops show it was there even when
	// a decay (every 12 s) lifted it back above before the heartbeat that
	// disconnected it.
	if !logged || minScore > -10000 && graylisted == 0 {
		t.Errorf("b's lowest score for the flooder %.0f, %v of its messages refused as graylisted (disconnect logged: %v); want below the graylist threshold -10000, or messages refused for it, and a disconnect for it", minScore, graylisted, logged)
	}
	queueFull := mb[`courier_drops_total{reason="validation_queue_full"}`] + mb[`courier_drops_total{reason="validation_throttled"}`]
	counted := int(validated) - honest + int(graylisted) + int(queueFull)
	if counted > fr.sent || counted < len(flood) {
		t.Errorf("b counted %d of the flooder's messages (%v validated, %v graylisted, %v queue full) of %d sent; want all %d proved ones at least",
			counted, validated-float64(honest), graylisted, queueFull, fr.sent, len(flood))
	}
	// c saw none of the spam: b relayed only what it accepted.
	if got, want := rc[`reason="valid",result="accept"`], float64(honest+accepted); got != want || mc["waku_rln_spam_messages_total_total"] != 0 || len(rc) != 1 {
		t.Errorf("c's RLN results %v, spam %v; want only %v valid", rc, mc["waku_rln_spam_messages_total_total"], want)
	}

	// Which of the flooder's messages were accepted: one for each message
	// id and epoch, the same on b's, a's and c's archives and in c's
	// deliveries, with all of a's.
	floodHashes := map[message.Hash]floodMsg{}
	for _, bt := range batches {
		for _, m := range bt {
			floodHashes[m.hash] = m
		}
	}
	arcB, err := b.StoreHashes()
	if err != nil {
		t.Fatal(err)
	}
	want := h.Set()
	perNullifier := map[[2]int]int{}
	for _, x := range arcB {
		if m, ok := floodHashes[x]; ok && !want[x] {
			want[x] = true
			perNullifier[[2]int{m.epoch, m.id}]++
		}
	}
	if len(perNullifier) != accepted {
		t.Errorf("b's archive holds the flooder's messages of %d (epoch, message id) pairs, want %d: %v", len(perNullifier), accepted, perNullifier)
	}
	for k, n := range perNullifier {
		if n != 1 {
			t.Errorf("b's archive holds %d of the flooder's messages of epoch %d, message id %d; a limit allows one", n, k[0], k[1])
		}
	}
	var checks []netlab.SetCheck
	for _, n := range nodes {
		hs, err := n.StoreHashes()
		if err != nil {
			t.Fatal(err)
		}
		ch := netlab.CheckSet(n.Host.Name+"'s archive", want, hs)
		checks = append(checks, ch)
		if !ch.OK() {
			t.Errorf("%s", ch)
		}
	}
	dc := netlab.CheckSet("c's deliveries", want, h.Delivered("c"))
	if !dc.OK() {
		t.Errorf("%s", dc)
	}

	fig := netlab.Figures{Scenario: "RLNFlood", Published: honest, Delivered: dc.Got - len(perNullifier), Archived: checks[2].Got,
		Lost: dc.Lost, Dup: dc.Duplicated, MemPeak: peak}
	fig.Extra = append(fig.Extra,
		fmt.Sprintf("flooder (limit %d, epochs of %d s) proved %d in %v, sent %d in %v (%.0f/s), disconnected after %s, lowest score %.0f",
			floodLimit, floodEpochSec, len(flood), took.Round(100*time.Millisecond), fr.sent, fr.took.Round(10*time.Millisecond),
			float64(fr.sent)/fr.took.Seconds(), disconnect, minScore),
		fmt.Sprintf("b accepted %d of them, rejected %.0f (waku_rln_spam_messages_total %.0f: %.0f spam, %.0f duplicate), dropped %.0f from the graylisted peer and %.0f on a full queue; %d were not read before the disconnect",
			len(perNullifier), spam, mb["waku_rln_spam_messages_total_total"], rb[`reason="spam",result="reject"`], rb[`reason="duplicate",result="reject"`],
			graylisted, queueFull, fr.sent-counted),
		fmt.Sprintf("a to c before: %d in %v (%.1f/s) p50 %v p99 %v (a's proof and publish p50 %d ms)", base.n, floodPhase, float64(base.n)/floodPhase.Seconds(),
			base.p50.Round(time.Millisecond), base.p99.Round(time.Millisecond), base.proof50),
		fmt.Sprintf("during: %d (%.1f/s) p50 %v p99 %v (a's proof and publish p50 %d ms)", during.n, float64(during.n)/floodPhase.Seconds(),
			during.p50.Round(time.Millisecond), during.p99.Round(time.Millisecond), during.proof50),
		fmt.Sprintf("run time %v", time.Since(testStart).Round(time.Second)))
	t.Log(fig)
}

// rlnReady reports whether n's /health lists Rln Relay READY.
func rlnReady(n *netlab.Node) bool {
	hl, err := n.Health()
	if err != nil {
		return false
	}
	for _, p := range hl.ProtocolsHealth {
		if p["Rln Relay"] == "READY" {
			return true
		}
	}
	return false
}

// floodMsg is one of the flooder's messages.
type floodMsg struct {
	epoch, id, n int // epoch index, message id, payload number
	msg          *message.Message
	hash         message.Hash
}

// floodMessages returns the flooder's messages to prove, without their
// proofs: for each of floodEpochs epochs, floodPerID for each message id
// below floodLimit, with payloads of their own. The first epoch's are
// stamped floodStamp before boundary, the next ones floodStamp after it
// and then an epoch apart.
func floodMessages(boundary time.Time) []floodMsg {
	var out []floodMsg
	for e := range floodEpochs {
		ts := boundary.Add(time.Duration(e-1)*floodEpochSec*time.Second + floodStamp).UnixNano()
		if e == 0 {
			ts = boundary.Add(-floodStamp).UnixNano()
		}
		for id := range floodLimit {
			for n := range floodPerID {
				m := &message.Message{Payload: fmt.Appendf(nil, "flood epoch %d message id %d, number %d", e, id, n), ContentTopic: floodTopic,
					Timestamp: ts, Present: message.HasTimestamp | message.HasRateLimitProof}
				out = append(out, floodMsg{epoch: e, id: id, n: n, msg: m})
			}
		}
	}
	return out
}

// nearestBoundary returns the epoch boundary (a multiple of floodEpochSec
// in Unix time) nearest to at.
func nearestBoundary(at time.Time) time.Time {
	const epoch = int64(floodEpochSec * time.Second)
	return time.Unix(0, (at.UnixNano()+epoch/2)/epoch*epoch)
}

// prove returns the proof of member for each message's message id in the
// epoch of its timestamp, made by the rlnprove command, and how long the
// command took.
func prove(t *testing.T, prover, circuits string, member *member, msgs []floodMsg) ([][]byte, time.Duration) {
	t.Helper()
	type signal struct {
		Payload      []byte `json:"payload"`
		ContentTopic string `json:"contentTopic"`
		Timestamp    int64  `json:"timestamp"`
		MessageID    uint64 `json:"messageId"`
	}
	req := struct {
		CircuitDir string     `json:"circuitDir"`
		EpochSec   uint64     `json:"epochSec"`
		Member     rln.Member `json:"member"`
		Signals    []signal   `json:"signals"`
	}{CircuitDir: circuits, EpochSec: floodEpochSec,
		Member: rln.Member{SecretHash: member.id.SecretHash, UserMessageLimit: member.limit, Path: member.path}}
	for _, m := range msgs {
		req.Signals = append(req.Signals, signal{m.msg.Payload, m.msg.ContentTopic, m.msg.Timestamp, uint64(m.id)})
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prover)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rlnprove: %v: %s", err, stderr.Bytes())
	}
	took := time.Since(start)
	var resp struct {
		Proofs [][]byte `json:"proofs"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.Proofs) != len(msgs) {
		t.Fatalf("rlnprove: %d proofs for %d messages (%v)", len(resp.Proofs), len(msgs), err)
	}
	return resp.Proofs, took
}

// floodBatches orders the flood into RPCs of floodBatch messages: first
// one message of each message id and epoch (within the limit), then the
// other proved ones (over it), then floodRepeats rounds of every proved
// message again with meta "repeat <r>". Each carries its hash.
func floodBatches(msgs []floodMsg) [][]floodMsg {
	var first, over []floodMsg
	for _, m := range msgs {
		if m.n == 0 {
			first = append(first, m)
		} else {
			over = append(over, m)
		}
	}
	all := append(first, over...)
	for r := 1; r <= floodRepeats; r++ {
		for _, m := range msgs {
			c := *m.msg
			c.Meta, c.Present = fmt.Appendf(nil, "repeat %d", r), c.Present|message.HasMeta
			m.msg = &c
			all = append(all, m)
		}
	}
	var out [][]floodMsg
	out = append(out, all[:len(first)])
	for rest := all[len(first):]; len(rest) > 0; {
		k := min(floodBatch, len(rest))
		out = append(out, rest[:k])
		rest = rest[k:]
	}
	for _, bt := range out {
		for i := range bt {
			bt[i].hash = netlab.Message{Payload: bt[i].msg.Payload, ContentTopic: bt[i].msg.ContentTopic,
				Timestamp: bt[i].msg.Timestamp, Meta: bt[i].msg.Meta}.Hash()
		}
	}
	return out
}

// sendFlood writes the batches as fast as the stream takes them, until
// the node disconnects the flooder, and returns how many messages were
// written. A write error after the disconnect is the disconnect.
func sendFlood(g *netlab.Gossip, batches [][]floodMsg) (sent int, err error) {
	for _, bt := range batches {
		data := make([][]byte, len(bt))
		for i, m := range bt {
			data[i] = m.msg.Encode(nil)
		}
		if err := g.Publish(data...); err != nil {
			if !g.Connected() {
				return sent, nil
			}
			return sent, err
		}
		sent += len(bt)
		if !g.Connected() {
			return sent, nil
		}
	}
	return sent, nil
}

// lowestScore is the lowest gossipsub score node gave peer: its current
// one if listed, or the one its log line of the disconnect names; logged
// says whether that line is there.
func lowestScore(n *netlab.Node, peer string) (lowest float64, logged bool) {
	if s, ok, err := n.RelayPeerScore(peer); err == nil && ok {
		lowest = s
	}
	re := regexp.MustCompile(`msg="disconnecting peer below the gossipsub graylist threshold" peer=` + peer + ` score=(\S+)`)
	for _, line := range n.Lines() {
		if m := re.FindStringSubmatch(line); m != nil {
			if s, err := strconv.ParseFloat(m[1], 64); err == nil {
				lowest, logged = min(lowest, s), true
			}
		}
	}
	return lowest, logged
}

// buildProver builds the rlnprove command (without -race) into a
// temporary directory.
func buildProver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rlnprove")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "github.com/couriernet/courier/rln/internal/e2e/rlnprove")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build rlnprove: %v\n%s", err, out)
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))
	return bin
}
