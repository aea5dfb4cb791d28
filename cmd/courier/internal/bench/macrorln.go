package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/membership"
)

// macro-rln: the macro scenario with RLN relay on B (17/WAKU2-RLN-RELAY).
// A, a node without RLN, publishes (Node.Publish) messages that carry
// proofs made before the timed phase by one member whose user message
// limit covers every message of one epoch; B checks each with the RLN
// validator (one Groth16 verification per message) before it archives and
// hands it on. The same messages without proofs, B without RLN, make the
// baseline row, macro-rln-base, from the same run; the notes give
// macro-rln's msg/s and CPU per message as ratios of it, B's verifications
// per message, and A's proofs per second.
//
// B follows a membership contract whose root() answers the member's root
// (rootChain, reached through rln/membership's Dial hook): the node's own
// RLN relay, from the chain client to the validator, without a chain or a
// JSON-RPC server. The
// prover needs zerokit's circuit files (rln.DefaultCircuitDir).
const (
	// rlnMaxMeasured and rlnMaxWarmup bound the messages of macro-rln, each
	// of which is proved beforehand (some 0.1-0.2 s of a core each).
	rlnMaxMeasured = 200
	rlnMaxWarmup   = 20
	// rlnEpochSec is macro-rln's epoch: all its messages carry timestamps
	// nanoseconds apart in one epoch.
	rlnEpochSec = 3600
	// rlnClockGap is how far from the messages' timestamp the timed phase
	// may run: the validator's clock gap (20 s) less a margin.
	rlnClockGap = 18 * time.Second
)

// runMacroRLN runs macro-rln-base and macro-rln on one set of prepared
// messages and returns both rows.
func runMacroRLN(ctx context.Context, cfg Config, w *Workload, name string) ([]Row, error) {
	prof, err := ParseProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	w = NewWorkload(prof, cfg.Seed, min(w.Warmup, rlnMaxWarmup), min(w.N, rlnMaxMeasured), w.ContentTopic)
	prep, err := prepareRLN(ctx, w, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Out, "%s: A's prover made %d proofs in %.1f s with %d workers: %.2f proofs/s (%d warm-up and %d measured messages, user message limit %d, epoch %d s)\n",
		name, w.Total(), prep.proveTime.Seconds(), prep.workers, float64(w.Total())/prep.proveTime.Seconds(), w.Warmup, w.N, w.Total(), rlnEpochSec)
	// The validator accepts a timestamp within 20 s of its clock: the
	// timed phases run in that window around the messages' timestamp.
	if err := sleepUntil(ctx, time.Unix(0, prep.ts).Add(-rlnClockGap)); err != nil {
		return nil, err
	}
	base, err := runRLNPair(ctx, cfg, w, name+"-base", prep, false)
	if err != nil {
		return nil, err
	}
	row, err := runRLNPair(ctx, cfg, w, name, prep, true)
	if err != nil {
		return []Row{base}, err
	}
	if late := time.Since(time.Unix(0, prep.ts)); late > rlnClockGap {
		return []Row{base}, fmt.Errorf("bench: %s ended %v after its messages' timestamp, outside the validator's clock gap", name, late.Round(time.Millisecond))
	}
	fmt.Fprintf(cfg.Out, "%s: %.3f× %s's msg/s, %.2f× its CPU per message (%.0f µs against %.0f µs); %.3f proof verifications per message on B\n",
		name, row.MsgPerS/base.MsgPerS, base.Scenario, row.CPUNsPerMsg/base.CPUNsPerMsg, row.CPUNsPerMsg/1e3, base.CPUNsPerMsg/1e3, prep.verifiedPerMsg)
	return []Row{base, row}, nil
}

// rlnPrep is macro-rln's input: every message of the workload with its
// proof, all with timestamps ns apart from ts, and the contract B follows.
type rlnPrep struct {
	msgs      []*message.Message
	ts        int64
	chain     *rootChain
	contract  common.Address
	proveTime time.Duration
	workers   int
	// verifiedPerMsg is B's proof verifications per measured message in
	// the last RLN run.
	verifiedPerMsg float64
}

// prepareRLN makes the member, its contract and every message's proof.
// The timestamp is set so that the proofs are done before it comes within
// rlnClockGap, from the time the first proof takes.
func prepareRLN(ctx context.Context, w *Workload, cfg Config) (*rlnPrep, error) {
	prover, err := rln.NewProver(rln.ProverConfig{Tasks: 1})
	if err != nil {
		return nil, fmt.Errorf("bench: macro-rln proves its messages and needs zerokit's RLN circuit files (see docs/rln.md): %w", err)
	}
	id := rln.SeededIdentityCredential([]byte("courier bench macro-rln member"))
	limit := uint64(w.Total())
	leaf, err := rln.RateCommitment(id.Commitment, limit)
	if err != nil {
		return nil, err
	}
	member := &rln.Member{SecretHash: id.SecretHash, UserMessageLimit: limit, Path: rln.MerklePath{Index: 0}}
	root, err := member.Path.Root(leaf)
	if err != nil {
		return nil, err
	}
	p := &rlnPrep{msgs: make([]*message.Message, w.Total()), workers: runtime.GOMAXPROCS(0)}
	p.contract = common.HexToAddress("0x000000000000000000000000000000000000c0de")
	p.chain = newRootChain(p.contract, root)
	prove := func(i int, ts int64) (*message.Message, error) {
		payload := make([]byte, w.Size(i))
		w.FillPayload(payload, i)
		m := &message.Message{Payload: payload, ContentTopic: w.ContentTopic, Timestamp: ts + int64(i), Present: message.HasTimestamp | message.HasRateLimitProof}
		proof, err := prover.Prove(rln.Signal{Payload: m.Payload, ContentTopic: m.ContentTopic, Timestamp: m.Timestamp}, member, uint64(i), rln.EpochAt(m.Timestamp, rlnEpochSec))
		if err != nil {
			return nil, err
		}
		m.RateLimitProof = proof.Marshal()
		return m, nil
	}
	// One proof, timed, plans the timestamp: the rest in parallel, with
	// the estimate again to spare, and rlnClockGap after. Proving that ends
	// later than planned is measured and done again, up to three times.
	start := time.Now()
	if _, err := prove(0, start.UnixNano()); err != nil {
		return nil, err
	}
	perProof := time.Since(start) / time.Duration(p.workers)
	for attempt := 1; ; attempt++ {
		est := perProof * time.Duration(w.Total())
		p.ts = time.Now().Add(2*est + rlnClockGap + time.Second).UnixNano()
		if rln.EpochAt(p.ts, rlnEpochSec) != rln.EpochAt(p.ts+int64(w.Total()), rlnEpochSec) {
			p.ts += int64(w.Total()) // past the epoch's boundary
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, p.workers)
		start = time.Now()
		for k := range p.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < w.Total() && ctx.Err() == nil && errs[k] == nil; i = int(next.Add(1) - 1) {
					p.msgs[i], errs[k] = prove(i, p.ts)
				}
			}()
		}
		wg.Wait()
		p.proveTime = time.Since(start)
		if err := errors.Join(append(errs, ctx.Err())...); err != nil {
			return nil, err
		}
		if time.Until(time.Unix(0, p.ts)) > 0 {
			break
		}
		if attempt == 3 {
			return nil, fmt.Errorf("bench: macro-rln: proving %d messages took %v, longer than planned three times", w.Total(), p.proveTime.Round(time.Millisecond))
		}
		perProof = p.proveTime / time.Duration(w.Total())
		fmt.Fprintf(cfg.Progress, "macro-rln: proving took %v, longer than planned; proving again for a later timestamp\n", p.proveTime.Round(time.Millisecond))
	}
	return p, nil
}

// runRLNPair runs one macro run of the prepared messages: A publishes them
// (without their proofs unless withRLN), B relays, archives and runs the
// handlers, with RLN relay when withRLN.
func runRLNPair(ctx context.Context, cfg Config, w *Workload, name string, prep *rlnPrep, withRLN bool) (Row, error) {
	row := NewRow(name, cfg.Profile, w.N)
	configure := func(_, b *node.Config) {
		if !withRLN {
			return
		}
		b.RLNRelay = node.RLNRelayConfig{Enabled: true, EthClientAddresses: []string{"http://simulated.invalid/"}, EthContractAddress: prep.contract.Hex(),
			EpochSec: rlnEpochSec, Membership: membership.Config{HistoryBlocks: -1,
				Dial: func(context.Context, string) (membership.Backend, error) { return prep.chain, nil }}}
	}
	pair, err := startPair(ctx, cfg, w, pairConfig{dirName: "macro-rln", window: window, configure: configure})
	defer pair.close()
	if err != nil {
		return row, err
	}
	a, b, t := pair.a, pair.b, pair.t
	publish := func(i int) (int64, error) {
		m := *prep.msgs[i] // the message's fields; its slices are shared, and only read
		if !withRLN {
			m.RateLimitProof, m.Present = nil, m.Present&^message.HasRateLimitProof
		}
		_, err := a.Publish(ctx, cfg.PubsubTopic, &m)
		return 0, err
	}
	var p phase
	var v0 float64
	stop := startProgress(cfg.Progress, name, t)
	err = drive(ctx, cfg, w, t, &p, publish, pair.losses, func() { v0 = verifications(b); p.begin(pair.proc(), pair.cb.Snapshot(), pair.msgIDs()) })
	p.end(pair.proc(), pair.cb.Snapshot(), pair.msgIDs())
	stop()
	if withRLN {
		prep.verifiedPerMsg = (verifications(b) - v0) / float64(w.N)
	}
	if err == nil {
		err = pair.checkDrops(name)
	}
	p.fill(&row, w, t)
	row.WireBytesPerMsg = float64(p.recv1.DecodedBytes-p.recv0.DecodedBytes) / float64(w.N)
	row.Trace.CacheBoundBytes = cacheBound(row, 2, p.sent)
	return row, err
}

// verifications reads B's waku_rln_proof_verification_total_total, 0
// without RLN relay.
func verifications(n *node.Node) float64 {
	mfs, err := n.Registry().Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == "waku_rln_proof_verification_total_total" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
