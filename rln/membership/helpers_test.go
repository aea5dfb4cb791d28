//go:build unix

package membership_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/membership"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/iden3/go-iden3-crypto/poseidon"
)

// q is the BN254 scalar field modulus.
var q, _ = new(big.Int).SetString("21888242871839275222246405745257275088548364400416034343698204186575808495617", 10)

// newIDCommitment returns a random id commitment (a nonzero field
// element).
func newIDCommitment(t testing.TB) *big.Int {
	t.Helper()
	for {
		v, err := rand.Int(rand.Reader, q)
		if err != nil {
			t.Fatal(err)
		}
		if v.Sign() > 0 {
			return v
		}
	}
}

// le returns v as 32 bytes little-endian.
func le(v *big.Int) [32]byte {
	var b [32]byte
	v.FillBytes(b[:])
	slices.Reverse(b[:])
	return b
}

func unle(b [32]byte) *big.Int {
	slices.Reverse(b[:])
	return new(big.Int).SetBytes(b[:])
}

func hash2(t testing.TB, a, b *big.Int) *big.Int {
	t.Helper()
	h, err := poseidon.Hash([]*big.Int{a, b})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rateCommitment is the RLN leaf: Poseidon(idCommitment, userMessageLimit).
func rateCommitment(t testing.TB, id *big.Int, limit uint32) *big.Int {
	return hash2(t, id, big.NewInt(int64(limit)))
}

// treeRoot computes the root of the depth-20 Poseidon tree whose first
// leaves are leaves and the rest zero (circomlib Poseidon, zero leaf 0, as
// zerokit's tree and the contract's LazyIMT).
func treeRoot(t testing.TB, leaves []*big.Int) *big.Int {
	t.Helper()
	zero := big.NewInt(0)
	level := slices.Clone(leaves)
	for range membership.MerkleTreeDepth {
		next := make([]*big.Int, (len(level)+1)/2)
		for i := range next {
			right := zero
			if 2*i+1 < len(level) {
				right = level[2*i+1]
			}
			next[i] = hash2(t, level[2*i], right)
		}
		if len(level) == 0 {
			next = nil
		}
		level = next
		zero = hash2(t, zero, zero)
	}
	if len(level) == 0 {
		return zero
	}
	return level[0]
}

// foldPath hashes leaf up along p's siblings, going by the bits of
// p.Index, and returns the root it reaches.
func foldPath(t testing.TB, leaf *big.Int, p membership.MerklePath) *big.Int {
	t.Helper()
	h := leaf
	for i, s := range p.Siblings {
		if p.Index>>i&1 == 0 {
			h = hash2(t, h, unle(s))
		} else {
			h = hash2(t, unle(s), h)
		}
	}
	return h
}

// simDial dials every address to c's in-process client.
func simDial(c *chaintest.Chain) membership.DialFunc {
	return func(context.Context, string) (membership.Backend, error) { return shared{c.Client()}, nil }
}

// shared is the chain's client without its Close, which a dropped
// endpoint would call.
type shared struct{ simulated.Client }

// wrongChain is a backend that reports another chain id.
type wrongChain struct{ simulated.Client } // no Close either

func (wrongChain) ChainID(context.Context) (*big.Int, error) { return big.NewInt(5), nil }

// logBuffer collects log records for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// config returns a Config for d's contract with short timings and polls
// left to the test (PollInterval one hour).
func config(d *chaintest.Deployment, logs *logBuffer, endpoints ...string) membership.Config {
	if logs == nil {
		logs = &logBuffer{}
	}
	return membership.Config{
		Endpoints:           endpoints,
		Contract:            d.Membership,
		PollInterval:        time.Hour,
		CallTimeout:         5 * time.Second,
		StartAttempts:       1,
		RetryDelay:          10 * time.Millisecond,
		ReceiptPollInterval: 20 * time.Millisecond,
		Logger:              slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start starts a Manager closed at the end of the test.
func start(t testing.TB, cfg membership.Config) *membership.Manager {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := membership.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// member is a registered membership of a test.
type member struct {
	id    *big.Int
	limit uint32
	index uint32
}

// register registers n members from account 1 with limits 1, 2, ...
func register(t testing.TB, d *chaintest.Deployment, n int) []member {
	t.Helper()
	out := make([]member, n)
	for i := range out {
		id, limit := newIDCommitment(t), uint32(i%10+1)
		out[i] = member{id: id, limit: limit, index: d.Register(t, chaintest.Key(1), id, limit)}
	}
	return out
}

func leaves(t testing.TB, ms []member) []*big.Int {
	out := make([]*big.Int, len(ms))
	for i, m := range ms {
		out[i] = rateCommitment(t, m.id, m.limit)
	}
	return out
}

// eventually waits up to 20 s for cond.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
