package rlnrelay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

// idProver is a Prover that writes the message id and epoch into the
// proof, so that a test sees which id each proof used.
type idProver struct {
	mu    sync.Mutex
	calls int
	fail  bool
}

func (p *idProver) Prove(s rln.Signal, m *rln.Member, id uint64, epoch rln.Epoch) (*rln.RateLimitProof, error) {
	p.mu.Lock()
	p.calls++
	fail := p.fail
	p.mu.Unlock()
	if fail {
		return nil, errors.New("prover failed")
	}
	var out rln.RateLimitProof
	binary.LittleEndian.PutUint64(out.Proof[:], id)
	out.Epoch = epoch
	out.ShareX = s.Hash()
	return &out, nil
}

func proofID(p *rln.RateLimitProof) uint64 { return binary.LittleEndian.Uint64(p.Proof[:]) }

// staticPath is a PathSource with a fixed path, or an error.
type staticPath struct {
	path rln.MerklePath
	err  error
}

func (s staticPath) MerklePath() (rln.MerklePath, error) { return s.path, s.err }

func testIdentity() *rln.IdentityCredential {
	return rln.SeededIdentityCredential([]byte("publisher test"))
}

func newTestPublisher(t *testing.T, path string, prover Prover, limit, epochSec uint64, now func() time.Time) *Publisher {
	t.Helper()
	p, err := NewPublisher(PublisherConfig{Prover: prover, Path: staticPath{}, Identity: testIdentity(),
		UserMessageLimit: limit, EpochSec: epochSec, CounterPath: path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPublisherAttach: ids per epoch of the message's timestamp, up to the
// limit with nwaku's refusal; the copy carries the proof and m is left as
// it was; the refusals spend nothing.
func TestPublisherAttach(t *testing.T) {
	now := time.Unix(1764600000, 0) // 1 s epochs
	prover := &idProver{}
	p := newTestPublisher(t, filepath.Join(t.TempDir(), "ids"), prover, 2, 1, func() time.Time { return now })
	msg := func(offset time.Duration) *message.Message {
		return &message.Message{Payload: []byte("hello"), ContentTopic: "/courier/1/publisher/proto",
			Timestamp: now.Add(offset).UnixNano(), Present: message.HasTimestamp}
	}
	for i, tc := range []struct {
		offset time.Duration
		id     uint64
		err    error
	}{
		{0, 0, nil}, {100 * time.Millisecond, 1, nil}, {200 * time.Millisecond, 0, ErrLimit},
		{-time.Second, 0, nil},    // the epoch before: its own ids
		{5 * time.Second, 0, nil}, // a later epoch within the gap
		{21 * time.Second, 0, ErrTimestamp},
		{-25 * time.Second, 0, ErrTimestamp},
	} {
		m := msg(tc.offset)
		out, proof, err := p.Attach(m)
		if tc.err != nil {
			if !errors.Is(err, tc.err) || !errors.Is(err, ErrNoProof) || out != nil || proof != nil {
				t.Fatalf("message %d: %v, want %v", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if proofID(proof) != tc.id || proof.Epoch != rln.EpochAt(m.Timestamp, 1) {
			t.Fatalf("message %d: id %d epoch %d, want %d %d", i, proofID(proof), proof.Epoch.Uint64(), tc.id, rln.EpochAt(m.Timestamp, 1).Uint64())
		}
		if string(out.RateLimitProof) != string(proof.Marshal()) || out.Present&message.HasRateLimitProof == 0 ||
			string(out.Payload) != "hello" || out.Timestamp != m.Timestamp || m.RateLimitProof != nil {
			t.Fatalf("message %d: copy %+v of %+v", i, out, m)
		}
		if d, err := rln.DecodeRateLimitProof(out.RateLimitProof); err != nil && !errors.Is(err, rln.ErrNonCanonical) || *d != *proof {
			t.Fatalf("message %d: the copy's proof decodes to %v, %v", i, d, err)
		}
	}
	if _, _, err := p.Attach(&message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Timestamp: now.UnixNano(), RateLimitProof: []byte{1}}); !errors.Is(err, ErrHasProof) {
		t.Fatalf("message with a proof: %v", err)
	}
	if prover.calls != 4 {
		t.Fatalf("%d proofs made, want 4", prover.calls)
	}
	s := p.Stats()
	if s.Generated != 4 || s.Refused != 1 || s.Remaining != 0 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
	// A failing prover spends the id it was given.
	prover.fail = true
	if _, _, err := p.Attach(msg(2 * time.Second)); err == nil || !errors.Is(err, ErrNoProof) {
		t.Fatalf("failing prover: %v", err)
	}
	prover.fail = false
	if _, proof, err := p.Attach(msg(2 * time.Second)); err != nil || proofID(proof) != 1 {
		t.Fatalf("after a failed proof: %v, id %d, want 1", err, proofID(proof))
	}
	if s := p.Stats(); s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPublisherPathError(t *testing.T) {
	now := time.Unix(1764600000, 0)
	prover := &idProver{}
	p, err := NewPublisher(PublisherConfig{Prover: prover, Path: staticPath{err: errors.New("path unknown")}, Identity: testIdentity(),
		UserMessageLimit: 1, EpochSec: 1, CounterPath: filepath.Join(t.TempDir(), "ids"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := &message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Timestamp: now.UnixNano()}
	if _, _, err := p.Attach(m); !errors.Is(err, ErrNoProof) || prover.calls != 0 {
		t.Fatalf("no path: %v", err)
	}
	if p.ids.used(rln.EpochAt(now.UnixNano(), 1).Uint64()) != 0 {
		t.Fatal("an id was spent without a path")
	}
}

func TestNewPublisherConfigErrors(t *testing.T) {
	ok := PublisherConfig{Prover: &idProver{}, Path: staticPath{}, Identity: testIdentity(), UserMessageLimit: 1, EpochSec: 1,
		CounterPath: filepath.Join(t.TempDir(), "ids")}
	bad := *testIdentity()
	bad.Commitment[0] ^= 1
	for name, mod := range map[string]func(*PublisherConfig){
		"no prover":       func(c *PublisherConfig) { c.Prover = nil },
		"no path":         func(c *PublisherConfig) { c.Path = nil },
		"no identity":     func(c *PublisherConfig) { c.Identity = nil },
		"bad identity":    func(c *PublisherConfig) { c.Identity = &bad },
		"limit 0":         func(c *PublisherConfig) { c.UserMessageLimit = 0 },
		"limit too large": func(c *PublisherConfig) { c.UserMessageLimit = rln.MaxUserMessageLimit + 1 },
		"epoch 0":         func(c *PublisherConfig) { c.EpochSec = 0 },
		"no counter path": func(c *PublisherConfig) { c.CounterPath = "" },
	} {
		c := ok
		mod(&c)
		if _, err := NewPublisher(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	c := ok
	c.CounterPath = filepath.Join(t.TempDir(), "missing-dir", "ids")
	if _, err := NewPublisher(c); !errors.Is(err, ErrCounterFile) {
		t.Errorf("counter in a missing directory: %v", err)
	}
}

// Environment of the crash test's child process.
const (
	crashChildEnv = "RLNRELAY_CRASH_CHILD" // the counter file
	crashNowEnv   = "RLNRELAY_CRASH_NOW"   // the child's clock, Unix ns
	crashSeedEnv  = "RLNRELAY_CRASH_SEED"
)

// TestCrashKeepsIDs kills a publishing child process (this test binary,
// run again) in the middle of a burst, many times over, and checks that
// no message id handed out is ever handed out again in its epoch: every id
// a proof got reached the disk first. The child makes proofs with
// timestamps spread over the clock gap, so over some 40 epochs of 1 s.
func TestCrashKeepsIDs(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(t, path)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "ids")
	now := time.Unix(1764600000, 0).UnixNano()
	seen := map[[2]uint64]int{} // (epoch, id) -> round
	rng := rand.New(rand.NewPCG(1, 2))
	const rounds = 12
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKeepsIDs$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path, crashNowEnv+"="+strconv.FormatInt(now, 10),
			crashSeedEnv+"="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kill := 20 + rng.IntN(60) // lines to read before the kill
		sc := bufio.NewScanner(out)
		lines := 0
		for sc.Scan() {
			var epoch, id uint64
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &epoch, &id); err != nil {
				continue // the test framework's own output
			}
			key := [2]uint64{epoch, id}
			if r, dup := seen[key]; dup {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: id %d of epoch %d handed out again (first in round %d)", round, id, epoch, r)
			}
			seen[key] = round
			if lines++; lines == kill {
				cmd.Process.Kill() // SIGKILL: no deferred close, no flush
				break
			}
		}
		cmd.Wait()
		if lines < kill {
			t.Fatalf("round %d: the child stopped after %d proofs", round, lines)
		}
	}
	if len(seen) < rounds*20 {
		t.Fatalf("only %d proofs seen", len(seen))
	}
}

// crashChild publishes until killed, printing "epoch id" for every proof
// as it comes out of Attach.
func crashChild(t *testing.T, path string) {
	now, err := strconv.ParseInt(os.Getenv(crashNowEnv), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := strconv.Atoi(os.Getenv(crashSeedEnv))
	clock := time.Unix(0, now)
	p, err := NewPublisher(PublisherConfig{Prover: &idProver{}, Path: staticPath{}, Identity: testIdentity(),
		UserMessageLimit: rln.MaxUserMessageLimit, EpochSec: 1, CounterPath: path, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for i := 0; ; i++ {
		ts := now + rng.Int64N(40e9) - 20e9
		m := &message.Message{Payload: []byte(strconv.Itoa(i)), ContentTopic: "/courier/1/crash/proto", Timestamp: ts}
		_, proof, err := p.Attach(m)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(os.Stdout, "%d %d\n", proof.Epoch.Uint64(), proofID(proof))
	}
}

// TestPublisherRealProofs makes proofs with the real prover for golden
// member A (limit 4) and checks that the validator accepts each, that the
// limit is enforced, and that a new Publisher on the same file (a restart)
// goes on with the next id.
func TestPublisherRealProofs(t *testing.T) {
	dir := testcircuit.Dir(t)
	prover, err := rln.NewProver(rln.ProverConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	g := loadGolden(t)
	now := time.Unix(0, g.Now)
	ida := rln.SeededIdentityCredential([]byte("rlnrelay golden A"))
	a, _, _ := goldenMembers(t)
	counter := filepath.Join(t.TempDir(), "ids")
	open := func() *Publisher {
		p, err := NewPublisher(PublisherConfig{Prover: prover, Path: staticPath{path: a.Path}, Identity: ida,
			UserMessageLimit: a.UserMessageLimit, EpochSec: g.EpochSec, CounterPath: counter, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	v, _ := newTestValidator(t, nil)
	p := open()
	publish := func(p *Publisher, i int) (*message.Message, error) {
		m := &message.Message{Payload: []byte(fmt.Sprint("published ", i)), ContentTopic: goldenTopic, Timestamp: now.UnixNano() + int64(i)}
		out, _, err := p.Attach(m)
		return out, err
	}
	for i := range 2 {
		out, err := publish(p, i)
		if err != nil {
			t.Fatal(err)
		}
		if r := v.Validate(out); r.Reason != Valid {
			t.Fatalf("proof %d: %v (%v)", i, r.Reason, r.Err)
		}
	}
	p.Close()
	p = open() // restart: ids 2 and 3 are left
	defer p.Close()
	for i := 2; i < 4; i++ {
		out, err := publish(p, i)
		if err != nil {
			t.Fatal(err)
		}
		if r := v.Validate(out); r.Reason != Valid {
			t.Fatalf("proof %d after the restart: %v (%v)", i, r.Reason, r.Err)
		}
	}
	if _, err := publish(p, 4); !errors.Is(err, ErrLimit) {
		t.Fatalf("fifth message of a limit of 4: %v", err)
	}
	if s := v.Stats(); s.Reasons[Valid] != 4 || s.LogEntries != 4 {
		t.Fatalf("validator stats %+v", s)
	}
}
