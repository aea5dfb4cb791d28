package rln

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/couriernet/courier/rln/internal/zerokitjs"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/vectors.json from zerokit (needs Node.js)")

const vectorsFile = "testdata/vectors.json"

type hx = zerokitjs.Hex

// vectors are test vectors of the wire and math, each value computed by
// zerokit v0.8.0's rln-wasm (npm @waku/zerokit-rln-wasm 0.2.1) or, for
// nwaku's compositions of zerokit's primitives (signal, epoch, external
// nullifier, protobuf), by JavaScript written from nwaku's sources
// (internal/zerokitjs/peer.mjs). TestVectors checks this package against
// them; TestZerokit checks them against zerokit again.
type vectors struct {
	Source      string           `json:"source"`
	Poseidon    []poseidonVector `json:"poseidon"`
	HashToField []struct {
		Data   hx `json:"data"`
		Output hx `json:"output"`
	} `json:"hashToField"`
	Signals []struct {
		Payload      hx     `json:"payload"`
		ContentTopic string `json:"contentTopic"`
		Timestamp    int64  `json:"timestamp"`
		Signal       hx     `json:"signal"`
		X            hx     `json:"x"`
	} `json:"signals"`
	Epochs []struct {
		Timestamp int64  `json:"timestamp"`
		EpochSec  uint64 `json:"epochSec"`
		Epoch     hx     `json:"epoch"`
	} `json:"epochs"`
	RLNIdentifier struct {
		Bytes hx `json:"bytes"`
		Hash  hx `json:"hash"`
	} `json:"rlnIdentifier"`
	ExternalNullifiers []struct {
		Epoch         hx `json:"epoch"`
		RLNIdentifier hx `json:"rlnIdentifier"`
		Output        hx `json:"output"`
	} `json:"externalNullifiers"`
	Identities []struct {
		Seed       hx `json:"seed"`
		Trapdoor   hx `json:"trapdoor"`
		Nullifier  hx `json:"nullifier"`
		SecretHash hx `json:"secretHash"`
		Commitment hx `json:"commitment"`
	} `json:"identities"`
	RateCommitments []struct {
		Commitment       hx     `json:"commitment"`
		UserMessageLimit uint64 `json:"userMessageLimit"`
		Output           hx     `json:"output"`
	} `json:"rateCommitments"`
	Proofs []proofVector `json:"proofs"`
}

type poseidonVector struct {
	Inputs []hx `json:"inputs"`
	Output hx   `json:"output"`
}

// proofVector is a proof zerokit made for a message, with the inputs it
// was made from and the public values zerokit computed.
type proofVector struct {
	Payload          hx     `json:"payload"`
	ContentTopic     string `json:"contentTopic"`
	Timestamp        int64  `json:"timestamp"`
	EpochSec         uint64 `json:"epochSec"`
	IdentitySeed     hx     `json:"identitySeed"`
	SecretHash       hx     `json:"secretHash"`
	UserMessageLimit uint64 `json:"userMessageLimit"`
	MessageID        uint64 `json:"messageId"`
	Index            uint64 `json:"index"`
	Siblings         []hx   `json:"siblings"`
	// PublicInputs in the circuit's order: y, root, nullifier, x,
	// external nullifier.
	PublicInputs   []hx `json:"publicInputs"`
	RateLimitProof hx   `json:"rateLimitProof"`
}

func (v *proofVector) signal() Signal {
	return Signal{Payload: v.Payload, ContentTopic: v.ContentTopic, Timestamp: v.Timestamp}
}

func (v *proofVector) path(t testing.TB) MerklePath {
	p := MerklePath{Index: v.Index}
	for i := range p.Siblings {
		p.Siblings[i] = field(t, v.Siblings[i])
	}
	return p
}

func field(t testing.TB, b []byte) Field {
	t.Helper()
	if len(b) != FieldSize {
		t.Fatalf("vector field of %d bytes", len(b))
	}
	return Field(b)
}

func loadVectors(t testing.TB) *vectors {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	v := new(vectors)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
	if len(v.Poseidon) == 0 || len(v.Proofs) == 0 {
		t.Fatalf("%s has no vectors", vectorsFile)
	}
	return v
}

func writeVectors(t testing.TB, v *vectors) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(vectorsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vectorsFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func eq(t testing.TB, what string, got []byte, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %x\nwant %x", what, got, want)
	}
}

// TestVectors checks the wire and math of this package against
// testdata/vectors.json (values from zerokit; see vectors).
func TestVectors(t *testing.T) {
	v := loadVectors(t)
	arity := map[int]bool{}
	for _, pv := range v.Poseidon {
		in := make([]Field, len(pv.Inputs))
		for i := range in {
			in[i] = field(t, pv.Inputs[i])
		}
		h := poseidonFields(t, in...)
		eq(t, "poseidon", h[:], pv.Output)
		arity[len(in)] = true
	}
	for _, n := range []int{1, 2, 3} {
		if !arity[n] {
			t.Errorf("no Poseidon vector of arity %d", n)
		}
	}
	for _, hv := range v.HashToField {
		h := HashToField(hv.Data)
		eq(t, "hash to field", h[:], hv.Output)
	}
	for _, sv := range v.Signals {
		m := Signal{Payload: sv.Payload, ContentTopic: sv.ContentTopic, Timestamp: sv.Timestamp}
		x := m.Hash()
		eq(t, "signal hash", x[:], sv.X)
		xs := HashToField(sv.Signal)
		eq(t, "signal bytes' hash", xs[:], sv.X)
		eq(t, "signal bytes", signalBytes(m), sv.Signal)
	}
	for _, ev := range v.Epochs {
		e := EpochAt(ev.Timestamp, ev.EpochSec)
		eq(t, "epoch", e[:], ev.Epoch)
	}
	eq(t, "rln identifier", wakuID[:], v.RLNIdentifier.Bytes)
	idh := HashToField(wakuID[:])
	eq(t, "rln identifier hash", idh[:], v.RLNIdentifier.Hash)
	for _, xv := range v.ExternalNullifiers {
		h := ExternalNullifier(Epoch(xv.Epoch), RLNIdentifier(xv.RLNIdentifier))
		eq(t, "external nullifier", h[:], xv.Output)
	}
	for _, iv := range v.Identities {
		c := SeededIdentityCredential(iv.Seed)
		eq(t, "trapdoor", c.Trapdoor[:], iv.Trapdoor)
		eq(t, "nullifier", c.Nullifier[:], iv.Nullifier)
		eq(t, "secret hash", c.SecretHash[:], iv.SecretHash)
		eq(t, "commitment", c.Commitment[:], iv.Commitment)
		if err := c.Check(); err != nil {
			t.Error(err)
		}
	}
	for _, rv := range v.RateCommitments {
		h, err := RateCommitment(field(t, rv.Commitment), rv.UserMessageLimit)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "rate commitment", h[:], rv.Output)
	}
	verifier, err := NewVerifier(VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, pv := range v.Proofs {
		checkProofVector(t, verifier, i, &pv)
	}
}

func checkProofVector(t *testing.T, verifier *Verifier, i int, pv *proofVector) {
	m := pv.signal()
	p, err := DecodeRateLimitProof(pv.RateLimitProof)
	if err != nil {
		t.Fatalf("proof %d: %v", i, err)
	}
	eq(t, "re-encoded proof", p.Marshal(), pv.RateLimitProof)
	if err := verifier.Verify(m, p); err != nil {
		t.Errorf("proof %d made by zerokit: %v", i, err)
	}
	pub := p.PublicInputs()
	for j, f := range []Field{pub.Y, pub.Root, pub.Nullifier, pub.X, pub.ExternalNullifier} {
		eq(t, "public input", f[:], pv.PublicInputs[j])
	}
	epoch := EpochAt(pv.Timestamp, pv.EpochSec)
	eq(t, "proof epoch", p.Epoch[:], epoch[:])
	x := m.Hash()
	eq(t, "x", x[:], pv.PublicInputs[3])
	ext := ExternalNullifier(epoch, DefaultRLNIdentifier())
	eq(t, "external nullifier", ext[:], pv.PublicInputs[4])
	// the root from our Merkle code, the shares and nullifier from ours
	commitment, err := IdentityCommitment(field(t, pv.SecretHash))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := RateCommitment(commitment, pv.UserMessageLimit)
	if err != nil {
		t.Fatal(err)
	}
	path := pv.path(t)
	root, err := path.Root(leaf)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "merkle root", root[:], pv.PublicInputs[1])
	y, nullifier := shares(t, field(t, pv.SecretHash), ext, x, pv.MessageID)
	eq(t, "share y", y[:], pv.PublicInputs[0])
	eq(t, "nullifier", nullifier[:], pv.PublicInputs[2])
}
