package rln

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// vectorProofs returns the proof vectors (made by zerokit) decoded, with
// their messages.
func vectorProofs(t testing.TB) ([]Signal, []*RateLimitProof) {
	t.Helper()
	v := loadVectors(t)
	var ms []Signal
	var ps []*RateLimitProof
	for _, pv := range v.Proofs {
		p, err := DecodeRateLimitProof(pv.RateLimitProof)
		if err != nil {
			t.Fatal(err)
		}
		ms, ps = append(ms, pv.signal()), append(ps, p)
	}
	return ms, ps
}

func newVerifier(t testing.TB) *Verifier {
	t.Helper()
	v, err := NewVerifier(VerifierConfig{Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyErrors(t *testing.T) {
	v := newVerifier(t)
	ms, ps := vectorProofs(t)
	m, good := ms[0], ps[0]
	if err := v.Verify(m, good); err != nil {
		t.Fatal(err)
	}
	var otherID RLNIdentifier
	copy(otherID[:], "another/app")
	with := func(f func(*RateLimitProof)) *RateLimitProof { c := *good; f(&c); return &c }
	for _, tc := range []struct {
		name string
		m    Signal
		p    *RateLimitProof
		want error
	}{
		{"invalid proof for another rln identifier", m, with(func(p *RateLimitProof) { p.RLNIdentifier = otherID }), ErrInvalidProof},
		{"other payload", Signal{Payload: []byte("x"), ContentTopic: m.ContentTopic, Timestamp: m.Timestamp}, good, ErrSignalMismatch},
		{"other content topic", Signal{Payload: m.Payload, ContentTopic: m.ContentTopic + "x", Timestamp: m.Timestamp}, good, ErrSignalMismatch},
		{"other epoch", m, with(func(p *RateLimitProof) { p.Epoch = EpochFromUint64(p.Epoch.Uint64() - 1) }), ErrInvalidProof},
		{"other root", m, with(func(p *RateLimitProof) { p.MerkleRoot = FieldFromUint64(5) }), ErrInvalidProof},
		{"other nullifier", m, with(func(p *RateLimitProof) { p.Nullifier = FieldFromUint64(5) }), ErrInvalidProof},
		{"other share y", m, with(func(p *RateLimitProof) { p.ShareY = FieldFromUint64(5) }), ErrInvalidProof},
		{"another proof's zkSNARK", m, with(func(p *RateLimitProof) { p.Proof = ps[1].Proof }), ErrInvalidProof},
		{"A with the other y", m, with(func(p *RateLimitProof) { p.Proof[31] ^= 0x80 }), ErrInvalidProof},
		{"A at infinity", m, with(func(p *RateLimitProof) { clear(p.Proof[:32]); p.Proof[31] = 0x40 }), ErrInvalidProof},
		{"A with both flags", m, with(func(p *RateLimitProof) { p.Proof[31] |= 0xc0 }), ErrInvalidProof},
		{"B x of 2^254-1", m, with(func(p *RateLimitProof) {
			for i := 32; i < 64; i++ {
				p.Proof[i] = 0xff
			}
			p.Proof[63] = 0x3f
		}), ErrInvalidProof},
		{"C not on the curve", m, with(func(p *RateLimitProof) { clear(p.Proof[96:]); p.Proof[96] = 4 }), ErrInvalidProof},
		{"non-canonical nullifier", m, with(func(p *RateLimitProof) { copy(p.Nullifier[:], addR(p.Nullifier[:])) }), ErrNonCanonical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Verify(tc.m, tc.p)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if errors.Is(err, ErrInvalidProof) && (errors.Is(err, ErrNonCanonical) || errors.Is(err, ErrRLNIdentifier)) {
				t.Fatalf("%v wraps more than one sentinel", err)
			}
		})
	}
}

func TestVerifierOtherIdentifier(t *testing.T) {
	var id RLNIdentifier
	copy(id[:], "another/app")
	v, err := NewVerifier(VerifierConfig{RLNIdentifier: id})
	if err != nil {
		t.Fatal(err)
	}
	ms, ps := vectorProofs(t)
	if err := v.Verify(ms[0], ps[0]); !errors.Is(err, ErrRLNIdentifier) || errors.Is(err, ErrInvalidProof) {
		t.Fatalf("a valid proof for Waku's identifier: %v, want ErrRLNIdentifier", err)
	}
	bad := *ps[1]
	bad.ShareY[0] ^= 1
	errs := v.VerifyBatch([]BatchItem{{ms[0], ps[0]}, {ms[1], &bad}, {ms[2], ps[2]}})
	if !errors.Is(errs[0], ErrRLNIdentifier) || !errors.Is(errs[1], ErrInvalidProof) || !errors.Is(errs[2], ErrRLNIdentifier) {
		t.Fatalf("batch: %v", errs)
	}
}

func TestVerifyBatch(t *testing.T) {
	v := newVerifier(t)
	ms, ps := vectorProofs(t)
	bad := *ps[1]
	bad.ShareY = FieldFromUint64(1)
	for _, tc := range []struct {
		name  string
		items []BatchItem
		bad   map[int]error
	}{
		{"empty", nil, nil},
		{"one", []BatchItem{{ms[0], ps[0]}}, nil},
		{"all valid", []BatchItem{{ms[0], ps[0]}, {ms[1], ps[1]}, {ms[2], ps[2]}, {ms[0], ps[0]}}, nil},
		{"one invalid alone", []BatchItem{{ms[1], &bad}}, map[int]error{0: ErrInvalidProof}},
		{"one invalid among valid", []BatchItem{{ms[0], ps[0]}, {ms[1], &bad}, {ms[2], ps[2]}}, map[int]error{1: ErrInvalidProof}},
		{"signal mismatch and invalid", []BatchItem{{ms[1], ps[0]}, {ms[1], &bad}, {ms[2], ps[2]}, {ms[1], ps[1]}},
			map[int]error{0: ErrSignalMismatch, 1: ErrInvalidProof}},
		{"swapped zkSNARKs", []BatchItem{{ms[0], swapped(ps[0], ps[1])}, {ms[1], swapped(ps[1], ps[0])}},
			map[int]error{0: ErrInvalidProof, 1: ErrInvalidProof}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := v.VerifyBatch(tc.items)
			if len(errs) != len(tc.items) {
				t.Fatalf("%d errors for %d items", len(errs), len(tc.items))
			}
			for i, err := range errs {
				want := tc.bad[i]
				if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
					t.Errorf("item %d: %v, want %v", i, err, want)
				}
				if single := v.Verify(tc.items[i].Signal, tc.items[i].Proof); (single == nil) != (err == nil) {
					t.Errorf("item %d: batch says %v, Verify says %v", i, err, single)
				}
			}
		})
	}
}

// swapped returns p with q's zkSNARK.
func swapped(p, q *RateLimitProof) *RateLimitProof {
	c := *p
	c.Proof = q.Proof
	return &c
}

// TestVerifyConcurrent runs verifications of several epochs on many
// goroutines (for the race detector and the external nullifier cache).
func TestVerifyConcurrent(t *testing.T) {
	v := newVerifier(t)
	ms, ps := vectorProofs(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Go(func() {
			for i := range 6 {
				k := (g + i) % len(ps)
				if err := v.Verify(ms[k], ps[k]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNonCanonicalProof: a zerokit proof with nullifier + r on the wire
// decodes with ErrNonCanonical to nwaku's reading, which verifies (nwaku
// relays it: Ignore); with a wrong share it does not (Reject).
func TestNonCanonicalProof(t *testing.T) {
	v := newVerifier(t)
	ms, ps := vectorProofs(t)
	wire := *ps[0]
	plusR := addR(wire.Nullifier[:])
	if plusR == nil {
		t.Skip("nullifier + r does not fit 32 bytes")
	}
	copy(wire.Nullifier[:], plusR)
	enc := wire.Append(nil)
	p, err := DecodeRateLimitProof(enc)
	if !errors.Is(err, ErrNonCanonical) || p == nil || *p != *ps[0] {
		t.Fatalf("decode: %v, %v", p, err)
	}
	if err := v.Verify(ms[0], p); err != nil {
		t.Fatalf("nwaku's reading of the proof: %v", err)
	}
	wire.ShareY[0] ^= 1
	p, err = DecodeRateLimitProof(wire.Append(nil))
	if !errors.Is(err, ErrNonCanonical) {
		t.Fatal(err)
	}
	if err := v.Verify(ms[0], p); !errors.Is(err, ErrInvalidProof) {
		t.Fatalf("changed share: %v, want ErrInvalidProof", err)
	}
}
