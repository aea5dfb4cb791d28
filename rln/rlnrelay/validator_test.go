package rlnrelay

import (
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

var (
	verifierOnce sync.Once
	verifier     *rln.Verifier
)

func testVerifier(t testing.TB) *rln.Verifier {
	t.Helper()
	verifierOnce.Do(func() {
		v, err := rln.NewVerifier(rln.VerifierConfig{})
		if err != nil {
			t.Fatal(err)
		}
		verifier = v
	})
	return verifier
}

// fixedClock is a settable clock for Config.Now.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// newTestValidator returns a validator over the golden roots at the golden
// clock, and the clock.
func newTestValidator(t testing.TB, mod func(*Config)) (*Validator, *fixedClock) {
	t.Helper()
	g := loadGolden(t)
	clock := &fixedClock{t: time.Unix(0, g.Now)}
	cfg := Config{Verifier: testVerifier(t), Roots: goldenRoots(t), EpochSec: g.EpochSec, Now: clock.now}
	if mod != nil {
		mod(&cfg)
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v, clock
}

// withProofField returns the encoding of the proof in m with field num
// replaced by value (written as a bytes field, last, so it wins).
func withProofField(m *message.Message, num protowire.Number, value []byte) *message.Message {
	out := *m
	b := append([]byte(nil), m.RateLimitProof...)
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendBytes(b, value)
	out.RateLimitProof = b
	return &out
}

// plusModulus returns f + r in little-endian bytes: the same element,
// not canonical.
func plusModulus(f rln.Field) []byte {
	le := f[:]
	be := make([]byte, 32)
	for i := range le {
		be[31-i] = le[i]
	}
	n := new(big.Int).SetBytes(be)
	n.Add(n, fr.Modulus())
	out := make([]byte, 32)
	nb := n.Bytes()
	for i := range nb {
		out[i] = nb[len(nb)-1-i]
	}
	return out
}

func decodeProof(t testing.TB, m *message.Message) *rln.RateLimitProof {
	t.Helper()
	p, err := rln.DecodeRateLimitProof(m.RateLimitProof)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateReasons runs one message through a fresh validator for each
// outcome, in the validator's order, and checks the reason, the gossipsub
// result and that the proof was verified exactly when it reached the
// verification.
func TestValidateReasons(t *testing.T) {
	g := loadGolden(t)
	now := time.Unix(0, g.Now)
	a0 := goldenMsg(t, "a0")
	p0 := decodeProof(t, a0)
	for _, tc := range []struct {
		name     string
		msg      func() *message.Message
		mod      func(*Config)
		clock    time.Time
		want     Reason
		result   pubsub.ValidationResult
		verified bool
	}{
		{"valid", func() *message.Message { return a0 }, nil, now, Valid, pubsub.ValidationAccept, true},
		{"valid at the clock gap's edge, 20.9 s ahead", func() *message.Message { return a0 }, nil,
			time.Unix(0, a0.Timestamp+20_900_000_000), Valid, pubsub.ValidationAccept, true},
		{"valid at the clock gap's edge, 20.9 s behind", func() *message.Message { return a0 }, nil,
			time.Unix(0, a0.Timestamp-20_900_000_000), Valid, pubsub.ValidationAccept, true},
		{"malformed proof bytes", func() *message.Message { m := *a0; m.RateLimitProof = []byte{0x0a, 0x05, 1}; return &m }, nil, now,
			ReasonMalformed, pubsub.ValidationReject, false},
		{"clock gap: 21 s behind", func() *message.Message { return a0 }, nil,
			time.Unix(0, a0.Timestamp+21_000_000_000), ReasonClockGap, pubsub.ValidationReject, false},
		{"clock gap: 21 s ahead", func() *message.Message { return a0 }, nil,
			time.Unix(0, a0.Timestamp-21_000_000_000), ReasonClockGap, pubsub.ValidationReject, false},
		{"clock gap before no proof", func() *message.Message { m := *a0; m.RateLimitProof = nil; return &m }, nil,
			time.Unix(0, a0.Timestamp+time.Hour.Nanoseconds()), ReasonClockGap, pubsub.ValidationReject, false},
		{"no proof", func() *message.Message {
			m := *a0
			m.RateLimitProof = nil
			m.Present &^= message.HasRateLimitProof
			return &m
		}, nil, now,
			ReasonNoProof, pubsub.ValidationReject, false},
		{"a proof of no fields is nwaku's zero proof: wrong epoch", func() *message.Message { m := *a0; m.RateLimitProof = []byte{0x40, 0x01}; return &m }, nil, now,
			ReasonEpoch, pubsub.ValidationReject, false},
		{"epoch: the proof's is one before the timestamp's", func() *message.Message {
			e := rln.EpochFromUint64(p0.Epoch.Uint64() - 1)
			return withProofField(a0, 3, e[:])
		}, nil, now, ReasonEpoch, pubsub.ValidationReject, false},
		{"epoch: timestamp in the next epoch", func() *message.Message {
			m := *a0
			m.Timestamp += 600 * int64(time.Second)
			return &m
		}, nil, time.Unix(0, a0.Timestamp+600*int64(time.Second)), ReasonEpoch, pubsub.ValidationReject, false},
		{"root not in the window", func() *message.Message { return a0 }, func(c *Config) { c.Roots = goldenRoots(t)[1:] }, now,
			ReasonRoot, pubsub.ValidationReject, false},
		{"payload changed: share_x is not the signal's", func() *message.Message {
			m := *a0
			m.Payload = append([]byte("x"), a0.Payload...)
			return &m
		}, nil, now, ReasonProof, pubsub.ValidationReject, true},
		{"proof bytes changed", func() *message.Message {
			proof := p0.Proof
			proof[40] ^= 1
			return withProofField(a0, 1, proof[:])
		}, nil, now, ReasonProof, pubsub.ValidationReject, true},
		{"share_y changed", func() *message.Message {
			y := p0.ShareY
			y[0] ^= 1
			return withProofField(a0, 5, y[:])
		}, nil, now, ReasonProof, pubsub.ValidationReject, true},
		{"nullifier changed", func() *message.Message {
			n := p0.Nullifier
			n[3] ^= 1
			return withProofField(a0, 6, n[:])
		}, nil, now, ReasonProof, pubsub.ValidationReject, true},
		{"non-canonical nullifier (+r) of a valid proof", func() *message.Message {
			return withProofField(a0, 6, plusModulus(p0.Nullifier))
		}, nil, now, ReasonNonCanonical, pubsub.ValidationIgnore, true},
		{"non-canonical share_y (+r) of a valid proof", func() *message.Message {
			return withProofField(a0, 5, plusModulus(p0.ShareY))
		}, nil, now, ReasonNonCanonical, pubsub.ValidationIgnore, true},
		{"non-canonical encoding of an invalid proof", func() *message.Message {
			m := withProofField(a0, 6, plusModulus(p0.Nullifier))
			m.Payload = []byte("other")
			return m
		}, nil, now, ReasonProof, pubsub.ValidationReject, true},
		{"non-canonical encoding with a root outside the window", func() *message.Message {
			return withProofField(a0, 5, plusModulus(p0.ShareY))
		}, func(c *Config) { c.Roots = goldenRoots(t)[1:] }, now, ReasonRoot, pubsub.ValidationReject, false},
		{"proof for another rln_identifier", func() *message.Message { return goldenMsg(t, "other-id") }, nil, now,
			ReasonRLNIdentifier, pubsub.ValidationIgnore, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, clock := newTestValidator(t, tc.mod)
			clock.set(tc.clock)
			m := tc.msg()
			proofProof, res := v.ValidateMessage(goldenTopic, m)
			if res != tc.result {
				t.Fatalf("result %v, want %v", res, tc.result)
			}
			if (proofProof != nil) != (tc.want == Valid) {
				t.Fatalf("proof %v returned with result %v", proofProof, res)
			}
			s := v.Stats()
			if s.Reasons[tc.want] != 1 {
				t.Fatalf("reasons %v, want one %v", s.Reasons, tc.want)
			}
			var total uint64
			for _, n := range s.Reasons {
				total += n
			}
			if total != 1 {
				t.Fatalf("reasons %v count %d messages, want 1", s.Reasons, total)
			}
			if want := uint64(map[bool]int{false: 0, true: 1}[tc.verified]); s.Verifications != want {
				t.Fatalf("%d verifications, want %d", s.Verifications, want)
			}
			if want := uint64(map[bool]int{false: 1, true: 0}[tc.want == ReasonMalformed]); s.Messages != want {
				t.Fatalf("waku_rln_messages_total %d, want %d", s.Messages, want)
			}
			if got := s.ValidByTopic[goldenTopic]; got != uint64(map[bool]int{true: 1}[tc.want == Valid]) {
				t.Fatalf("valid on topic: %d", got)
			}
			if tc.want == Valid && s.LogEntries != 1 || tc.want != Valid && s.LogEntries != 0 {
				t.Fatalf("log entries %d after %v", s.LogEntries, tc.want)
			}
		})
	}
}

// TestValidateLog: the nullifier log finds a second message with one
// message id (spam, with the secret recovered), the same message again in
// other bytes (duplicate), and lets the other ids of the epoch through.
func TestValidateLog(t *testing.T) {
	var spams []Spam
	v, _ := newTestValidator(t, func(c *Config) { c.OnSpam = func(s Spam) { spams = append(spams, s) } })
	a0 := goldenMsg(t, "a0")
	meta := *a0
	meta.Meta, meta.Present = []byte("other bytes"), meta.Present|message.HasMeta
	for _, step := range []struct {
		name string
		m    *message.Message
		want Reason
	}{
		{"a0", a0, Valid},
		{"a1: the next id", goldenMsg(t, "a1"), Valid},
		{"a0 with meta: same signal and id", &meta, ReasonDuplicate},
		{"a0 again, another proof of its signal and id", goldenMsg(t, "a0-again"), ReasonDuplicate},
		{"a0-spam: id 0 again for another signal", goldenMsg(t, "a0-spam"), ReasonSpam},
		{"a0-spam again: still spam", goldenMsg(t, "a0-spam"), ReasonSpam},
		{"b00: another member", goldenMsg(t, "b00"), Valid},
	} {
		if r := v.Validate(step.m); r.Reason != step.want {
			t.Fatalf("%s: %v (%v), want %v", step.name, r.Reason, r.Err, step.want)
		}
	}
	a, _, _ := goldenMembers(t)
	wantCommitment, err := rln.IdentityCommitment(a.SecretHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(spams) != 2 {
		t.Fatalf("%d spam reports, want 2", len(spams))
	}
	p0 := decodeProof(t, a0)
	if s := spams[0]; s.SecretHash != a.SecretHash || s.Commitment != wantCommitment || s.Nullifier != p0.Nullifier || s.Epoch != p0.Epoch {
		t.Fatalf("spam evidence %+v, want A's secret %s and commitment %s", s, a.SecretHash, wantCommitment)
	}
	s := v.Stats()
	if s.Verifications != 7 || s.LogEntries != 3 || s.LogEpochs != 1 {
		t.Fatalf("stats %+v: want 7 verifications, 3 entries in 1 epoch", s)
	}
}

// TestLogBoundedBySize: a full log Ignores new nullifiers but still finds
// duplicates and spam of the ones it holds.
func TestLogBoundedBySize(t *testing.T) {
	v, _ := newTestValidator(t, func(c *Config) { c.MaxLogEntries = 2 })
	for _, step := range []struct {
		name string
		want Reason
	}{
		{"b00", Valid}, {"b01", Valid}, {"b02", ReasonLogFull}, {"b03", ReasonLogFull},
		{"b00", ReasonDuplicate},
	} {
		if r := v.Validate(goldenMsg(t, step.name)); r.Reason != step.want {
			t.Fatalf("%s: %v, want %v", step.name, r.Reason, step.want)
		}
	}
	if r := ReasonLogFull.Result(); r != pubsub.ValidationIgnore {
		t.Fatalf("log full result %v", r)
	}
	if s := v.Stats(); s.LogEntries != 2 {
		t.Fatalf("%d entries, want 2", s.LogEntries)
	}
}

// TestLogBoundedByEpoch: the log drops an epoch once no message accepted
// now can be in it, and only then (the previous epoch survives the
// boundary while the clock gap still admits its messages).
func TestLogBoundedByEpoch(t *testing.T) {
	const sec = 600
	l := newNullifierLog(100)
	clockRange := func(now time.Duration) (lo, hi uint64) {
		ns := int64(now)
		return rln.EpochAt(ns-int64(maxAcceptedGap), sec).Uint64(), rln.EpochAt(ns+int64(maxAcceptedGap), sec).Uint64()
	}
	base := 5000 * sec * time.Second
	nullifier := func(i int) rln.Field { return rln.FieldFromUint64(uint64(i)) }
	// Epoch 5000: three nullifiers, logged 100 s into it.
	lo, hi := clockRange(base + 100*time.Second)
	for i := range 3 {
		if o, _ := l.insert(lo, hi, 5000, nullifier(i), shares{}); o != logNew {
			t.Fatalf("insert %d: %v", i, o)
		}
	}
	// 10 s into epoch 5001: epoch 5000's messages are still accepted.
	lo, hi = clockRange(base + sec*time.Second + 10*time.Second)
	if o, _ := l.insert(lo, hi, 5001, nullifier(0), shares{}); o != logNew {
		t.Fatalf("epoch 5001: %v", o)
	}
	if o, _ := l.insert(lo, hi, 5000, nullifier(1), shares{}); o != logDuplicate {
		t.Fatalf("epoch 5000 forgotten 10 s after its end: %v", o)
	}
	if e, n := l.size(); e != 2 || n != 4 {
		t.Fatalf("log %d epochs %d entries, want 2, 4", e, n)
	}
	// 21 s into epoch 5001: epoch 5000 is out of reach and dropped.
	lo, hi = clockRange(base + sec*time.Second + 21*time.Second)
	if o, _ := l.insert(lo, hi, 5001, nullifier(1), shares{}); o != logNew {
		t.Fatalf("epoch 5001: %v", o)
	}
	if e, n := l.size(); e != 1 || n != 2 {
		t.Fatalf("log %d epochs %d entries, want 1, 2", e, n)
	}
	// Epochs of 1 s: the log holds the 43 epochs of 42 s at most.
	l = newNullifierLog(1000)
	for s := range 100 {
		now := time.Duration(7_000_000+s) * time.Second
		lo, hi := rln.EpochAt(int64(now-maxAcceptedGap), 1).Uint64(), rln.EpochAt(int64(now+maxAcceptedGap), 1).Uint64()
		l.insert(lo, hi, uint64(7_000_000+s), nullifier(s), shares{})
	}
	if e, n := l.size(); e != 22 || n != 22 {
		t.Fatalf("1 s epochs: %d epochs %d entries, want the 22 from now−21 s to now", e, n)
	}
}

// TestValidateConcurrent validates the golden messages from many
// goroutines at once, each message several times and A's two messages with
// id 0 against each other: each nullifier is accepted exactly once, and
// every other copy is a duplicate or spam, whatever the interleaving.
func TestValidateConcurrent(t *testing.T) {
	v, _ := newTestValidator(t, nil)
	const copies = 3
	var names []string
	for i := range goldenBatch {
		names = append(names, "b"+twoDigits(i))
	}
	names = append(names, "a0", "a0-spam")
	results := make([][copies]Reason, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		for c := range copies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i][c] = v.Validate(goldenMsg(t, name)).Reason
			}()
		}
	}
	wg.Wait()
	valid := 0
	for i, rs := range results {
		for _, r := range rs {
			switch {
			case r == Valid:
				valid++
			case r == ReasonDuplicate:
			case r == ReasonSpam && (names[i] == "a0" || names[i] == "a0-spam"):
			default:
				t.Fatalf("%s: %v", names[i], r)
			}
		}
	}
	if valid != goldenBatch+1 {
		t.Fatalf("%d accepted, want one per nullifier: %d", valid, goldenBatch+1)
	}
	s := v.Stats()
	if s.Reasons[ReasonSpam] != copies || s.Verifications != uint64(len(names)*copies) || s.LogEntries != goldenBatch+1 {
		t.Fatalf("stats %+v", s)
	}
}

func twoDigits(i int) string { return string([]byte{byte('0' + i/10), byte('0' + i%10)}) }

// TestCheckWithoutClock: Check skips the clock gap at the zero time, and
// neither logs nor counts.
func TestCheckWithoutClock(t *testing.T) {
	v, _ := newTestValidator(t, nil)
	a0 := goldenMsg(t, "a0")
	for range 2 {
		if r := v.Check(a0, time.Time{}); r.Reason != Valid || r.Proof == nil || r.Err != nil {
			t.Fatalf("Check at zero time: %+v", r)
		}
	}
	if r := v.Check(a0, time.Unix(0, a0.Timestamp+time.Hour.Nanoseconds())); r.Reason != ReasonClockGap {
		t.Fatalf("Check an hour later: %v", r.Reason)
	}
	if s := v.Stats(); s.Messages != 0 || s.Verifications != 0 || s.LogEntries != 0 {
		t.Fatalf("Check counted: %+v", s)
	}
}

func TestNewConfigErrors(t *testing.T) {
	ok := Config{Verifier: testVerifier(t), Roots: StaticRoots{}, EpochSec: 1}
	for name, mod := range map[string]func(*Config){
		"no verifier": func(c *Config) { c.Verifier = nil },
		"no roots":    func(c *Config) { c.Roots = nil },
		"epoch 0":     func(c *Config) { c.EpochSec = 0 },
		"negative":    func(c *Config) { c.MaxLogEntries = -1 },
	} {
		c := ok
		mod(&c)
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
}

// TestClockGapRule pins nwaku's truncation: 20.999 s passes, 21 s fails,
// both ways, and far-off or negative timestamps fail.
func TestClockGapRule(t *testing.T) {
	now := time.Unix(1764600000, 500_000_000)
	for _, tc := range []struct {
		offset time.Duration
		bad    bool
	}{
		{0, false}, {20 * time.Second, false}, {20999 * time.Millisecond, false}, {-20999 * time.Millisecond, false},
		{21 * time.Second, true}, {-21 * time.Second, true}, {time.Hour, true},
	} {
		if got := clockGapExceeded(now, now.Add(tc.offset).UnixNano()); got != tc.bad {
			t.Errorf("offset %v: exceeded %v, want %v", tc.offset, got, tc.bad)
		}
	}
	for _, ts := range []int64{0, -1, -1 << 63, 1<<63 - 1} {
		if !clockGapExceeded(now, ts) {
			t.Errorf("timestamp %d accepted", ts)
		}
	}
}

func TestReasons(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		if s := r.String(); s == "" || seen[s] {
			t.Errorf("reason %d named %q", r, s)
		} else {
			seen[s] = true
		}
	}
	if s := Reason(200).String(); s != "Reason(200)" {
		t.Errorf("out of range: %q", s)
	}
	ignored := 0
	for _, r := range Reasons() {
		if r.Result() == pubsub.ValidationIgnore {
			ignored++
		}
	}
	if ignored != 3 || Valid.Result() != pubsub.ValidationAccept || ReasonSpam.Result() != pubsub.ValidationReject {
		t.Errorf("results: %d ignored", ignored)
	}
}
