package rln

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/couriernet/courier/internal/testcircuit"
)

var (
	proverOnce sync.Once
	prover     *Prover
	proverErr  error
)

// testProver loads the circuit files once per test binary.
func testProver(t testing.TB) *Prover {
	t.Helper()
	dir := testcircuit.Dir(t)
	proverOnce.Do(func() { prover, proverErr = NewProver(ProverConfig{Dir: dir}) })
	if proverErr != nil {
		t.Fatal(proverErr)
	}
	return prover
}

func testMember(t testing.TB, seed string, limit uint64, index uint64) (*IdentityCredential, *Member) {
	id := SeededIdentityCredential([]byte(seed))
	path := zeroPath(t, index)
	path.Siblings[3] = HashToField([]byte(seed))
	return id, &Member{SecretHash: id.SecretHash, UserMessageLimit: limit, Path: path}
}

func TestProve(t *testing.T) {
	p := testProver(t)
	v := newVerifier(t)
	for _, tc := range []struct {
		name         string
		limit, msgID uint64
		index        uint64
	}{
		{"first leaf", 10, 0, 0},
		{"last leaf, last id", 100, 99, 1<<TreeDepth - 1},
		{"limit 1", 1, 0, 0x5a5a5},
		{"largest limit", MaxUserMessageLimit, MaxUserMessageLimit - 1, 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, member := testMember(t, tc.name, tc.limit, tc.index)
			m := Signal{Payload: []byte(tc.name), ContentTopic: "/courier/1/prove/proto", Timestamp: 1764590000000000000}
			epoch := EpochAt(m.Timestamp, 600)
			rp, err := p.Prove(m, member, tc.msgID, epoch)
			if err != nil {
				t.Fatal(err)
			}
			leaf, _ := RateCommitment(id.Commitment, tc.limit)
			root, _ := member.Path.Root(leaf)
			x := m.Hash()
			ext := ExternalNullifier(epoch, DefaultRLNIdentifier())
			y, nullifier := shares(t, id.SecretHash, ext, x, tc.msgID)
			want := RateLimitProof{Proof: rp.Proof, MerkleRoot: root, Epoch: epoch, ShareX: x, ShareY: y,
				Nullifier: nullifier, RLNIdentifier: DefaultRLNIdentifier()}
			if *rp != want {
				t.Fatalf("proof values %+v, want %+v", rp, want)
			}
			d, err := DecodeRateLimitProof(rp.Marshal())
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Verify(m, d); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProveOtherIdentifier(t *testing.T) {
	var id RLNIdentifier
	copy(id[:], "another/app/v1")
	p, err := NewProver(ProverConfig{Dir: testcircuit.Dir(t), RLNIdentifier: id, Tasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, member := testMember(t, "other app", 2, 3)
	m := Signal{Payload: []byte("x"), ContentTopic: "/a/1/b/proto", Timestamp: 5}
	rp, err := p.Prove(m, member, 1, EpochFromUint64(8))
	if err != nil {
		t.Fatal(err)
	}
	if rp.RLNIdentifier != id || rp.PublicInputs().ExternalNullifier != ExternalNullifier(EpochFromUint64(8), id) {
		t.Fatal("proof not made for the configured identifier")
	}
	if err := newVerifier(t).Verify(m, rp); !errors.Is(err, ErrRLNIdentifier) {
		t.Fatalf("Waku's verifier: %v, want ErrRLNIdentifier", err)
	}
	other, err := NewVerifier(VerifierConfig{RLNIdentifier: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Verify(m, rp); err != nil {
		t.Fatalf("the application's verifier: %v", err)
	}
}

func TestProveErrors(t *testing.T) {
	p := testProver(t)
	m := Signal{Payload: []byte("x"), ContentTopic: "/a/1/b/proto"}
	_, member := testMember(t, "errors", 5, 1)
	with := func(f func(*Member)) *Member { c := *member; f(&c); return &c }
	for _, tc := range []struct {
		name   string
		member *Member
		msgID  uint64
		path   bool
	}{
		{"message id at the limit", member, 5, false},
		{"message id over the limit", member, 6, false},
		{"limit 0", with(func(m *Member) { m.UserMessageLimit = 0 }), 0, false},
		{"limit over the circuit's", with(func(m *Member) { m.UserMessageLimit = MaxUserMessageLimit + 1 }), 0, false},
		{"non-canonical secret", with(func(m *Member) { copy(m.SecretHash[:], addR(m.SecretHash[:])) }), 0, false},
		{"index past the tree", with(func(m *Member) { m.Path.Index = 1 << TreeDepth }), 0, true},
		{"non-canonical sibling", with(func(m *Member) {
			m.Path.Siblings[7] = Field(decimalFieldBytes("21888242871839275222246405745257275088548364400416034343698204186575808495617"))
		}), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := p.Prove(m, tc.member, tc.msgID, EpochFromUint64(1))
			if !errors.Is(err, ErrProve) || rp != nil || errors.Is(err, ErrPath) != tc.path {
				t.Fatalf("got %v, %v; want ErrProve (path %v)", rp, err, tc.path)
			}
		})
	}
}

// TestRecoverSecret makes two proofs with one message id in one epoch:
// their nullifiers match and their shares give the member's secret away.
func TestRecoverSecret(t *testing.T) {
	p := testProver(t)
	id, member := testMember(t, "double signal", 3, 9)
	epoch := EpochFromUint64(42)
	m1 := Signal{Payload: []byte("one"), ContentTopic: "/a/1/b/proto", Timestamp: 1}
	m2 := Signal{Payload: []byte("two"), ContentTopic: "/a/1/b/proto", Timestamp: 2}
	p1, err := p.Prove(m1, member, 2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := p.Prove(m2, member, 2, epoch)
	if err != nil {
		t.Fatal(err)
	}
	p3, err := p.Prove(m2, member, 1, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if p1.Nullifier != p2.Nullifier || p1.Nullifier == p3.Nullifier {
		t.Fatal("nullifiers do not follow the message id")
	}
	s, err := RecoverSecret(p1.ShareX, p1.ShareY, p2.ShareX, p2.ShareY)
	if err != nil {
		t.Fatal(err)
	}
	if s != id.SecretHash {
		t.Fatalf("recovered %s, want %s", s, id.SecretHash)
	}
	if s, _ := RecoverSecret(p1.ShareX, p1.ShareY, p3.ShareX, p3.ShareY); s == id.SecretHash {
		t.Fatal("shares of two message ids reveal the secret")
	}
	if _, err := RecoverSecret(p1.ShareX, p1.ShareY, p1.ShareX, p1.ShareY); !errors.Is(err, ErrIdentity) {
		t.Fatalf("same x: %v, want ErrIdentity", err)
	}
}

func TestProveConcurrent(t *testing.T) {
	p := testProver(t)
	v := newVerifier(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			_, member := testMember(t, "concurrent", 4, uint64(i))
			m := Signal{Payload: []byte{byte(i)}, ContentTopic: "/a/1/b/proto", Timestamp: int64(i)}
			rp, err := p.Prove(m, member, uint64(i), EpochFromUint64(3))
			if err == nil {
				err = v.Verify(m, rp)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("proof %d: %v", i, err)
		}
	}
}

func TestNewProverCircuitFiles(t *testing.T) {
	src := testcircuit.Dir(t)
	if _, err := NewProver(ProverConfig{Dir: t.TempDir()}); !errors.Is(err, ErrCircuitFiles) {
		t.Fatalf("empty dir: %v, want ErrCircuitFiles", err)
	}
	dir := t.TempDir()
	for _, f := range []string{ZkeyFile, GraphFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == GraphFile {
			b[len(b)/2] ^= 1 // one bit off
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewProver(ProverConfig{Dir: dir}); !errors.Is(err, ErrCircuitFiles) {
		t.Fatalf("changed graph: %v, want ErrCircuitFiles", err)
	}
	t.Setenv(CircuitDirEnv, src)
	if DefaultCircuitDir() != src {
		t.Fatalf("DefaultCircuitDir ignores $%s", CircuitDirEnv)
	}
	if _, err := NewProver(ProverConfig{Rand: rand.NewChaCha8([32]byte{})}); err != nil {
		t.Fatalf("default dir from $%s: %v", CircuitDirEnv, err)
	}
}

func TestDefaultCircuitDir(t *testing.T) {
	t.Setenv(CircuitDirEnv, "")
	t.Setenv("XDG_DATA_HOME", "/data")
	if d := DefaultCircuitDir(); d != "/data/courier/rln" {
		t.Fatalf("with XDG_DATA_HOME: %s", d)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/op")
	if d := DefaultCircuitDir(); d != "/home/op/.local/share/courier/rln" {
		t.Fatalf("with HOME: %s", d)
	}
}
