package rln

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestFieldCanonical(t *testing.T) {
	r := Field(decimalFieldBytes("21888242871839275222246405745257275088548364400416034343698204186575808495617"))
	rMinus1 := Field(decimalFieldBytes("21888242871839275222246405745257275088548364400416034343698204186575808495616"))
	for _, tc := range []struct {
		f    Field
		want bool
	}{{Field{}, true}, {FieldFromUint64(1), true}, {rMinus1, true}, {r, false}, {Field(bytes.Repeat([]byte{0xff}, 32)), false}} {
		if got := tc.f.IsCanonical(); got != tc.want {
			t.Errorf("%s canonical: %v, want %v", tc.f, got, tc.want)
		}
	}
	be := rMinus1.BigEndian()
	if f, err := FieldFromBigEndian(be); err != nil || f != rMinus1 {
		t.Fatalf("big-endian round trip: %s %v", f, err)
	}
	if _, err := FieldFromBigEndian(r.BigEndian()); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("r from big-endian: %v", err)
	}
	// nwaku's inHex: most significant byte first
	if s := FieldFromUint64(0x0102).String(); s != "0000000000000000000000000000000000000000000000000000000000000102" {
		t.Fatalf("String: %s", s)
	}
}

func TestEpoch(t *testing.T) {
	e := EpochFromUint64(0x0102030405060708)
	if !bytes.Equal(e[:9], []byte{8, 7, 6, 5, 4, 3, 2, 1, 0}) || e.Uint64() != 0x0102030405060708 {
		t.Fatalf("epoch bytes % x", e[:9])
	}
	for _, tc := range []struct {
		ts   int64
		sec  uint64
		want uint64
	}{{-1, 600, 0}, {1e18, 0, 0}, {599_999_999_999, 600, 0}, {600_000_000_000, 600, 1}, {1764590000123456789, 1, 1764590000}} {
		if got := EpochAt(tc.ts, tc.sec).Uint64(); got != tc.want {
			t.Errorf("EpochAt(%d, %d) = %d, want %d", tc.ts, tc.sec, got, tc.want)
		}
	}
}

func TestSignalHash(t *testing.T) {
	m := Signal{Payload: []byte("p"), ContentTopic: "/t", Timestamp: -2}
	if got, want := m.Hash(), HashToField(signalBytes(m)); got != want {
		t.Fatalf("SignalHash %s, HashToField of the signal %s", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { m.Hash() }); n != 0 {
		t.Fatalf("SignalHash allocates %v times", n)
	}
}

func TestIdentityCredential(t *testing.T) {
	rnd := rand.NewChaCha8([32]byte{7})
	c, err := NewIdentityCredential(rnd)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if d, _ := NewIdentityCredential(rnd); *d == *c {
		t.Fatal("two credentials are equal")
	}
	if commitment, err := IdentityCommitment(c.SecretHash); err != nil || commitment != c.Commitment {
		t.Fatalf("IdentityCommitment: %s %v", commitment, err)
	}
	for name, f := range map[string]func(*IdentityCredential){
		"commitment": func(c *IdentityCredential) { c.Commitment[0] ^= 1 },
		"secret":     func(c *IdentityCredential) { c.SecretHash[0] ^= 1 },
		"trapdoor":   func(c *IdentityCredential) { c.Trapdoor[0] ^= 1 },
		"nullifier":  func(c *IdentityCredential) { copy(c.Nullifier[:], addR(c.Nullifier[:])) },
	} {
		bad := *c
		f(&bad)
		if err := bad.Check(); !errors.Is(err, ErrIdentity) {
			t.Errorf("changed %s: %v, want ErrIdentity", name, err)
		}
	}
	if _, err := NewIdentityCredential(bytes.NewReader(nil)); !errors.Is(err, ErrIdentity) {
		t.Fatalf("no randomness: %v", err)
	}
	if _, err := RateCommitment(Field(bytes.Repeat([]byte{0xff}, 32)), 1); !errors.Is(err, ErrIdentity) {
		t.Fatalf("non-canonical commitment: %v", err)
	}
}

func TestMerklePathRoot(t *testing.T) {
	// a tree of two leaves at 0 and 1: root over the empty subtrees
	a, b := FieldFromUint64(5), FieldFromUint64(6)
	pa, pb := zeroPath(t, 0), zeroPath(t, 1)
	pa.Siblings[0], pb.Siblings[0] = b, a
	ra, err := pa.Root(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := pb.Root(b)
	want := poseidonFields(t, a, b)
	for i := 1; i < TreeDepth; i++ {
		want = poseidonFields(t, want, pa.Siblings[i])
	}
	if ra != want || rb != want {
		t.Fatalf("roots %s %s, want %s", ra, rb, want)
	}
	if _, err := (&MerklePath{Index: 1 << TreeDepth}).Root(a); !errors.Is(err, ErrPath) {
		t.Fatalf("index past the tree: %v", err)
	}
	bad := pa
	bad.Siblings[19] = Field(bytes.Repeat([]byte{0xff}, 32))
	if _, err := bad.Root(a); !errors.Is(err, ErrPath) {
		t.Fatalf("non-canonical sibling: %v", err)
	}
}
