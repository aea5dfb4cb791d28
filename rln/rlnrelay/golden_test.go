package rlnrelay

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json with fresh proofs (needs the circuit files)")

const goldenPath = "testdata/golden.json"

// The golden messages' clock: every timestamp sits in the epoch of
// goldenT0 (epochs of goldenEpochSec), 100 s after its start, and the tests
// run with local time goldenNow.
const (
	goldenEpochSec = 600
	goldenT0       = int64(2941000*goldenEpochSec+100) * int64(time.Second)
	goldenNow      = goldenT0 + 5*int64(time.Second)
	goldenTopic    = "/courier/1/rlnrelay-test/proto"
	goldenBatch    = 32 // member B's messages, ids 0 to 31
)

// golden is testdata/golden.json: messages with real proofs made by two
// members (A with limit 4, B with limit 64) in one tree, and the roots.
type golden struct {
	EpochSec uint64                   `json:"epochSec"`
	Now      int64                    `json:"now"`
	Roots    []string                 `json:"roots"` // hex of the 32 wire bytes
	Messages map[string]goldenMessage `json:"messages"`
}

// goldenMessage is a message in the REST JSON shape.
type goldenMessage struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Timestamp    int64  `json:"timestamp"`
	Proof        []byte `json:"proof"`
}

func (g goldenMessage) message() *message.Message {
	m := &message.Message{Payload: g.Payload, ContentTopic: g.ContentTopic, Timestamp: g.Timestamp,
		RateLimitProof: g.Proof, Present: message.HasTimestamp}
	if len(g.Proof) > 0 {
		m.Present |= message.HasRateLimitProof
	}
	return m
}

var (
	goldenOnce sync.Once
	goldenData golden
	goldenErr  error
)

// loadGolden reads testdata/golden.json once.
func loadGolden(t testing.TB) golden {
	t.Helper()
	goldenOnce.Do(func() {
		b, err := os.ReadFile(goldenPath)
		if err != nil {
			goldenErr = err
			return
		}
		goldenErr = json.Unmarshal(b, &goldenData)
	})
	if goldenErr != nil {
		t.Fatal(goldenErr)
	}
	return goldenData
}

// goldenMsg returns a fresh copy of golden message name.
func goldenMsg(t testing.TB, name string) *message.Message {
	t.Helper()
	g, ok := loadGolden(t).Messages[name]
	if !ok {
		t.Fatalf("no golden message %q", name)
	}
	return g.message()
}

func goldenRoots(t testing.TB) StaticRoots {
	t.Helper()
	var out StaticRoots
	for _, h := range loadGolden(t).Roots {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != rln.FieldSize {
			t.Fatalf("golden root %q", h)
		}
		out = append(out, rln.Field(b))
	}
	return out
}

// goldenMembers are the members of the golden messages: A (limit 4) and
// B (limit 64), each in a tree of its own whose other nodes are fixed
// values, so the window of acceptable roots holds both roots.
func goldenMembers(t testing.TB) (a, b *rln.Member, roots []rln.Field) {
	t.Helper()
	member := func(seed string, limit, index uint64) *rln.Member {
		id := rln.SeededIdentityCredential([]byte(seed))
		leaf, err := rln.RateCommitment(id.Commitment, limit)
		if err != nil {
			t.Fatal(err)
		}
		path := rln.MerklePath{Index: index}
		for i := range path.Siblings {
			path.Siblings[i] = rln.HashToField([]byte(fmt.Sprint(seed, " sibling ", i)))
		}
		root, err := path.Root(leaf)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
		return &rln.Member{SecretHash: id.SecretHash, UserMessageLimit: limit, Path: path}
	}
	a = member("rlnrelay golden A", 4, 5)
	b = member("rlnrelay golden B", 64, 70000)
	return a, b, roots
}

// TestMakeGolden rewrites testdata/golden.json with -update.
func TestMakeGolden(t *testing.T) {
	if !*update {
		t.Skip("run with -update to rewrite " + goldenPath)
	}
	dir := testcircuit.Dir(t)
	p, err := rln.NewProver(rln.ProverConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var other rln.RLNIdentifier
	copy(other[:], "another application")
	po, err := rln.NewProver(rln.ProverConfig{Dir: dir, RLNIdentifier: other})
	if err != nil {
		t.Fatal(err)
	}
	a, b, roots := goldenMembers(t)
	g := golden{EpochSec: goldenEpochSec, Now: goldenNow, Messages: map[string]goldenMessage{}}
	for _, r := range roots {
		g.Roots = append(g.Roots, hex.EncodeToString(r[:]))
	}
	make1 := func(name string, pr *rln.Prover, mem *rln.Member, id uint64, payload string, ts int64) {
		s := rln.Signal{Payload: []byte(payload), ContentTopic: goldenTopic, Timestamp: ts}
		proof, err := pr.Prove(s, mem, id, rln.EpochAt(ts, goldenEpochSec))
		if err != nil {
			t.Fatal(err)
		}
		g.Messages[name] = goldenMessage{Payload: s.Payload, ContentTopic: s.ContentTopic, Timestamp: ts, Proof: proof.Marshal()}
	}
	make1("a0", p, a, 0, "A's message 0", goldenT0)
	make1("a1", p, a, 1, "A's message 1", goldenT0+1)
	make1("a0-spam", p, a, 0, "A's second message with id 0", goldenT0+2)
	make1("a0-again", p, a, 0, "A's message 0", goldenT0) // a0's signal and id, another proof
	make1("other-id", po, a, 2, "A's message for another application", goldenT0+3)
	for i := range goldenBatch {
		make1(fmt.Sprintf("b%02d", i), p, b, uint64(i), fmt.Sprintf("B's message %d", i), goldenT0+int64(10+i))
	}
	out, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
