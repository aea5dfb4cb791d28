//go:build unix

package rln

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254"
	"github.com/consensys/gnark-crypto/ecc/bn254/fp"
	"github.com/consensys/gnark-crypto/ecc/bn254/fr"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/rln/internal/groth16"
	"github.com/couriernet/courier/rln/internal/zerokitjs"
)

// TestZerokit checks this package against zerokit's RLN (npm
// @waku/zerokit-rln-wasm 0.2.1, zerokit v0.8.0's rln-wasm) and snarkjs in
// both directions: the vectors of testdata/vectors.json, credentials and
// proofs each side makes and the other verifies, and tampered messages and
// proofs that both refuse. Run alone: go test ./rln -run TestZerokit.
func TestZerokit(t *testing.T) {
	dir := testcircuit.Dir(t)
	peer := zerokitjs.Start(t, dir)
	prover, err := NewProver(ProverConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := NewVerifier(VerifierConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("vectors", func(t *testing.T) {
		got := makeVectors(t, peer, *updateVectors)
		if *updateVectors {
			writeVectors(t, got)
			return
		}
		want := loadVectors(t)
		proofs := want.Proofs
		want.Proofs = nil
		for i, pv := range proofs { // zerokit verifies each proof vector for its message
			c := &interopCase{peer: peer}
			p, err := DecodeRateLimitProof(pv.RateLimitProof)
			if err != nil {
				t.Fatal(err)
			}
			if v := c.zerokitVerify(t, pv.signal(), p, p.MerkleRoot); !v.Valid {
				t.Errorf("zerokit refuses proof vector %d: %+v", i, v)
			}
			k, err := peer.SeededKey(pv.IdentitySeed)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "proof vector secret", k.Secret, pv.SecretHash)
		}
		if !reflect.DeepEqual(got, want) {
			a, _ := json.MarshalIndent(got, "", " ")
			b, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("zerokit's values differ from %s:\n%s\nwant\n%s", vectorsFile, a, b)
		}
	})
	t.Run("verifying key", func(t *testing.T) {
		var vk struct {
			Alpha []string   `json:"vk_alpha_1"`
			Beta  [][]string `json:"vk_beta_2"`
			Gamma [][]string `json:"vk_gamma_2"`
			Delta [][]string `json:"vk_delta_2"`
			IC    [][]string `json:"IC"`
			N     int        `json:"nPublic"`
		}
		if err := json.Unmarshal(peer.VKey, &vk); err != nil {
			t.Fatal(err)
		}
		g2 := func(p [][]string) [4]string { return [4]string{p[0][0], p[0][1], p[1][0], p[1][1]} }
		got := keyText{Alpha: [2]string{vk.Alpha[0], vk.Alpha[1]}, Beta: g2(vk.Beta), Gamma: g2(vk.Gamma), Delta: g2(vk.Delta)}
		for _, p := range vk.IC {
			got.IC = append(got.IC, [2]string{p[0], p[1]})
		}
		if vk.N != 5 || !reflect.DeepEqual(got, rlnKey) {
			t.Fatalf("snarkjs' verification key differs from the compiled-in key:\n%+v\n%+v", got, rlnKey)
		}
	})
	t.Run("credentials", func(t *testing.T) {
		for range 3 {
			k, err := peer.NewKey()
			if err != nil {
				t.Fatal(err)
			}
			c := &IdentityCredential{Trapdoor: field(t, k.Trapdoor), Nullifier: field(t, k.Nullifier),
				SecretHash: field(t, k.Secret), Commitment: field(t, k.Commitment)}
			if err := c.Check(); err != nil {
				t.Fatalf("zerokit's credential: %v", err)
			}
			mine, err := NewIdentityCredential(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []uint64{1, 100} {
				for _, id := range []*IdentityCredential{c, mine} {
					want, err := peer.Poseidon(id.Commitment[:], FieldFromUint64(limit).bytes())
					if err != nil {
						t.Fatal(err)
					}
					got, _ := RateCommitment(id.Commitment, limit)
					eq(t, "rate commitment", got[:], want)
					wantC, _ := peer.Poseidon(id.SecretHash[:])
					eq(t, "commitment", id.Commitment[:], wantC)
				}
			}
		}
	})
	c := &interopCase{t: t, peer: peer, prover: prover, verifier: verifier}
	t.Run("witness", c.witness)
	t.Run("zerokit proves, courier verifies", c.zerokitProves)
	t.Run("courier proves, zerokit verifies", c.courierProvesZerokit)
	t.Run("snarkjs proves, courier verifies", c.snarkjsProves)
	t.Run("courier proves, snarkjs verifies", c.courierProvesSnarkjs)
}

type interopCase struct {
	t        *testing.T
	peer     *zerokitjs.Peer
	prover   *Prover
	verifier *Verifier
}

func (f Field) bytes() []byte { return f[:] }

// setup is one member and one message to prove.
type setup struct {
	id     *IdentityCredential
	member *Member
	m      Signal
	epoch  Epoch
	msgID  uint64
}

func newSetup(t testing.TB, seed string) *setup {
	id := SeededIdentityCredential([]byte(seed))
	path := MerklePath{Index: uint64(len(seed))*7919 + 13}
	for i := range path.Siblings {
		path.Siblings[i] = HashToField([]byte(fmt.Sprintf("%s/%d", seed, i)))
	}
	m := Signal{Payload: []byte("payload of " + seed), ContentTopic: "/courier/1/rln-interop/proto", Timestamp: 1764590000123456789}
	return &setup{id: id, member: &Member{SecretHash: id.SecretHash, UserMessageLimit: 100, Path: path},
		m: m, epoch: EpochAt(m.Timestamp, 600), msgID: 7}
}

func (s *setup) witness() *zerokitjs.Witness {
	w := &zerokitjs.Witness{Secret: s.id.SecretHash.bytes(), Limit: FieldFromUint64(s.member.UserMessageLimit).bytes(),
		MessageID: FieldFromUint64(s.msgID).bytes()}
	for i := range s.member.Path.Siblings {
		w.PathElements = append(w.PathElements, s.member.Path.Siblings[i].bytes())
		w.PathIndex = append(w.PathIndex, int(s.member.Path.Index>>i&1))
	}
	return w
}

// circuitInputs are the witness's inputs by name as snarkjs takes them.
func (s *setup) circuitInputs(x, ext Field) map[string]any {
	var elems, index []string
	for i := range s.member.Path.Siblings {
		elems = append(elems, s.member.Path.Siblings[i].Big().String())
		index = append(index, fmt.Sprint(s.member.Path.Index>>i&1))
	}
	return map[string]any{
		"identitySecret": s.id.SecretHash.Big().String(), "userMessageLimit": fmt.Sprint(s.member.UserMessageLimit),
		"messageId": fmt.Sprint(s.msgID), "pathElements": elems, "identityPathIndex": index,
		"x": x.Big().String(), "externalNullifier": ext.Big().String(),
	}
}

// tamper lists the changes both sides must refuse, as a message and a
// proof derived from good ones.
func tampers(m Signal, p *RateLimitProof) map[string]func() (Signal, *RateLimitProof) {
	cm := func() Signal { return m }
	cp := func() *RateLimitProof { c := *p; return &c }
	return map[string]func() (Signal, *RateLimitProof){
		"payload": func() (Signal, *RateLimitProof) {
			c := cm()
			c.Payload = append(append([]byte(nil), m.Payload...), '!')
			return c, p
		},
		"timestamp": func() (Signal, *RateLimitProof) { c := cm(); c.Timestamp++; return c, p },
		"epoch": func() (Signal, *RateLimitProof) {
			c := cp()
			c.Epoch = EpochFromUint64(p.Epoch.Uint64() + 1)
			return m, c
		},
		"nullifier": func() (Signal, *RateLimitProof) { c := cp(); c.Nullifier[0] ^= 1; return m, c },
		"root":      func() (Signal, *RateLimitProof) { c := cp(); c.MerkleRoot[0] ^= 1; return m, c },
		"share y":   func() (Signal, *RateLimitProof) { c := cp(); c.ShareY[0] ^= 1; return m, c },
		"proof A":   func() (Signal, *RateLimitProof) { c := cp(); c.Proof[0] ^= 1; return m, c },
		"proof B":   func() (Signal, *RateLimitProof) { c := cp(); c.Proof[40] ^= 1; return m, c },
		"proof C":   func() (Signal, *RateLimitProof) { c := cp(); c.Proof[100] ^= 1; return m, c },
		"proof A negated": func() (Signal, *RateLimitProof) {
			c := cp()
			c.Proof[31] ^= 0x80 // the other y
			return m, c
		},
	}
}

// zerokitVerify asks zerokit's verifyWithRoots about m and p, with the
// external nullifier recomputed from p's epoch and identifier, as nwaku's
// verifyProof does.
func (c *interopCase) zerokitVerify(t testing.TB, m Signal, p *RateLimitProof, roots ...Field) zerokitjs.Verdict {
	t.Helper()
	ext, err := c.peer.ExternalNullifier(p.Epoch[:], p.RLNIdentifier[:])
	if err != nil {
		t.Fatal(err)
	}
	rs := make([][]byte, len(roots))
	for i := range roots {
		rs[i] = roots[i].bytes()
	}
	v, err := c.peer.Verify(&zerokitjs.ProofValues{Proof: p.Proof[:], Root: p.MerkleRoot.bytes(), Ext: ext,
		X: p.ShareX.bytes(), Y: p.ShareY.bytes(), Nullifier: p.Nullifier.bytes()}, signalBytes(m), rs, 1)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (c *interopCase) zerokitProves(t *testing.T) {
	s := newSetup(t, "zerokit proves")
	signal, x, err := c.peer.Signal(s.m.Payload, s.m.ContentTopic, s.m.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "signal", signal, signalBytes(s.m))
	ext, err := c.peer.ExternalNullifier(s.epoch[:], wakuID[:])
	if err != nil {
		t.Fatal(err)
	}
	w := s.witness()
	w.X, w.Ext = x, ext
	pv, err := c.peer.Prove(w, 1)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.peer.EncodeProof(pv.Proof, pv.Root, s.epoch[:], pv.X, pv.Y, pv.Nullifier, wakuID[:])
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeRateLimitProof(enc)
	if err != nil {
		t.Fatalf("zerokit's proof in nwaku's encoding: %v", err)
	}
	eq(t, "re-encoding", p.Marshal(), enc)
	if err := c.verifier.Verify(s.m, p); err != nil {
		t.Fatalf("zerokit's proof: %v", err)
	}
	if v := c.zerokitVerify(t, s.m, p, p.MerkleRoot); !v.Valid {
		t.Fatalf("zerokit refuses its own proof: %+v", v)
	}
	leaf, _ := RateCommitment(s.id.Commitment, s.member.UserMessageLimit)
	root, _ := s.member.Path.Root(leaf)
	if root != p.MerkleRoot {
		t.Fatalf("root: courier %s, zerokit %s", root, p.MerkleRoot)
	}
	for name, f := range tampers(s.m, p) {
		m, tp := f()
		if err := c.verifier.Verify(m, tp); !errors.Is(err, ErrInvalidProof) {
			t.Errorf("tampered %s: courier says %v, want ErrInvalidProof", name, err)
		}
		if v := c.zerokitVerify(t, m, tp, tp.MerkleRoot); v.Valid {
			t.Errorf("tampered %s: zerokit accepts it", name)
		}
	}
}

func (c *interopCase) courierProvesZerokit(t *testing.T) {
	s := newSetup(t, "courier proves for zerokit")
	p, err := c.prover.Prove(s.m, s.member, s.msgID, s.epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.verifier.Verify(s.m, p); err != nil {
		t.Fatal(err)
	}
	if v := c.zerokitVerify(t, s.m, p, p.MerkleRoot); !v.Valid {
		t.Fatalf("zerokit refuses courier's proof: %+v", v)
	}
	var other Field
	other[0] = 1
	if v := c.zerokitVerify(t, s.m, p, other); v.Valid {
		t.Error("zerokit accepts a root outside its window")
	}
	for name, f := range tampers(s.m, p) {
		m, tp := f()
		if v := c.zerokitVerify(t, m, tp, tp.MerkleRoot); v.Valid {
			t.Errorf("tampered %s: zerokit accepts it", name)
		}
		if err := c.verifier.Verify(m, tp); !errors.Is(err, ErrInvalidProof) {
			t.Errorf("tampered %s: courier says %v, want ErrInvalidProof", name, err)
		}
	}
}

func (c *interopCase) snarkjsProves(t *testing.T) {
	s := newSetup(t, "snarkjs proves")
	x, ext := s.m.Hash(), ExternalNullifier(s.epoch, DefaultRLNIdentifier())
	sp, public, _, _, err := c.peer.SnarkProve(s.circuitInputs(x, ext), 1)
	if err != nil {
		t.Fatal(err)
	}
	gp := fromSnarkjs(t, &sp)
	enc := gp.Encode()
	fields := make([]Field, 5)
	for i := range fields {
		fields[i] = decimalField(t, public[i])
	}
	p := &RateLimitProof{Proof: enc, MerkleRoot: fields[1], Epoch: s.epoch, ShareX: fields[3], ShareY: fields[0],
		Nullifier: fields[2], RLNIdentifier: DefaultRLNIdentifier()}
	if fields[3] != x || fields[4] != ext {
		t.Fatalf("snarkjs' public x, external nullifier %v %v, want %v %v", fields[3], fields[4], x, ext)
	}
	if err := c.verifier.Verify(s.m, p); err != nil {
		t.Fatalf("snarkjs' proof: %v", err)
	}
	if v := c.zerokitVerify(t, s.m, p, p.MerkleRoot); !v.Valid {
		t.Fatalf("zerokit refuses snarkjs' proof: %+v", v)
	}
	for name, f := range tampers(s.m, p) {
		m, tp := f()
		if err := c.verifier.Verify(m, tp); !errors.Is(err, ErrInvalidProof) {
			t.Errorf("tampered %s: courier says %v, want ErrInvalidProof", name, err)
		}
	}
	for i, name := range []string{"y", "root", "nullifier", "x", "external nullifier"} {
		bad := append([]string(nil), public...)
		bad[i] = new(big.Int).Add(decimalField(t, bad[i]).Big(), big.NewInt(1)).String()
		if v, err := c.peer.SnarkVerify(&sp, bad, 1); err != nil || v.Valid {
			t.Errorf("tampered %s: snarkjs accepts it (%v)", name, err)
		}
	}
}

func (c *interopCase) courierProvesSnarkjs(t *testing.T) {
	s := newSetup(t, "courier proves for snarkjs")
	p, err := c.prover.Prove(s.m, s.member, s.msgID, s.epoch)
	if err != nil {
		t.Fatal(err)
	}
	pub := p.PublicInputs()
	public := []string{pub.Y.Big().String(), pub.Root.Big().String(), pub.Nullifier.Big().String(),
		pub.X.Big().String(), pub.ExternalNullifier.Big().String()}
	gp, err := groth16.DecodeProof(&p.Proof)
	if err != nil {
		t.Fatal(err)
	}
	sp := toSnarkjs(&gp)
	if v, err := c.peer.SnarkVerify(&sp, public, 1); err != nil || !v.Valid {
		t.Fatalf("snarkjs refuses courier's proof: %+v %v", v, err)
	}
	for name, f := range tampers(s.m, p) {
		m, tp := f()
		tpub := tp.PublicInputs()
		x := m.Hash()
		tpublic := []string{tpub.Y.Big().String(), tpub.Root.Big().String(), tpub.Nullifier.Big().String(),
			x.Big().String(), tpub.ExternalNullifier.Big().String()}
		tgp, err := groth16.DecodeProof(&tp.Proof)
		if err != nil {
			continue // the bytes are no longer points: nothing for snarkjs to check
		}
		tsp := toSnarkjs(&tgp)
		if v, err := c.peer.SnarkVerify(&tsp, tpublic, 1); err != nil || v.Valid {
			t.Errorf("tampered %s: snarkjs accepts it (%v)", name, err)
		}
	}
}

// witness compares the witness of the graph evaluator with circom's
// witness calculator on rln.wasm.
func (c *interopCase) witness(t *testing.T) {
	s := newSetup(t, "witness")
	x, ext := s.m.Hash(), ExternalNullifier(s.epoch, DefaultRLNIdentifier())
	want, err := c.peer.Witness(s.circuitInputs(x, ext))
	if err != nil {
		t.Fatal(err)
	}
	xe, _ := x.element()
	exte, _ := ext.element()
	got, err := c.prover.witness(s.member, s.msgID, xe, exte)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d wires, circom has %d", len(got), len(want))
	}
	for i := range got {
		if got[i].String() != want[i] {
			t.Fatalf("wire %d: %s, circom %s", i, got[i].String(), want[i])
		}
	}
}

func decimalField(t testing.TB, s string) Field {
	t.Helper()
	var e fr.Element
	b, ok := new(big.Int).SetString(s, 10)
	if !ok || b.Cmp(fr.Modulus()) >= 0 {
		t.Fatalf("bad field %q", s)
	}
	e.SetBigInt(b)
	return fieldOf(&e)
}

func fpDecimal(t testing.TB, s string) fp.Element {
	t.Helper()
	var e fp.Element
	if _, err := e.SetString(s); err != nil {
		t.Fatalf("bad coordinate %q: %v", s, err)
	}
	return e
}

// fromSnarkjs reads snarkjs' proof.json (affine, z = 1).
func fromSnarkjs(t testing.TB, sp *zerokitjs.SnarkProof) groth16.Proof {
	t.Helper()
	if sp.PiA[2] != "1" || sp.PiC[2] != "1" || sp.PiB[2][0] != "1" || sp.PiB[2][1] != "0" {
		t.Fatalf("snarkjs proof not affine: %+v", sp)
	}
	var p groth16.Proof
	p.A = bn254.G1Affine{X: fpDecimal(t, sp.PiA[0]), Y: fpDecimal(t, sp.PiA[1])}
	p.C = bn254.G1Affine{X: fpDecimal(t, sp.PiC[0]), Y: fpDecimal(t, sp.PiC[1])}
	p.B.X.A0, p.B.X.A1 = fpDecimal(t, sp.PiB[0][0]), fpDecimal(t, sp.PiB[0][1])
	p.B.Y.A0, p.B.Y.A1 = fpDecimal(t, sp.PiB[1][0]), fpDecimal(t, sp.PiB[1][1])
	if !p.A.IsOnCurve() || !p.B.IsInSubGroup() || !p.C.IsOnCurve() {
		t.Fatal("snarkjs proof points not on the curves")
	}
	return p
}

func toSnarkjs(p *groth16.Proof) zerokitjs.SnarkProof {
	return zerokitjs.SnarkProof{
		PiA:      []string{p.A.X.String(), p.A.Y.String(), "1"},
		PiB:      [][]string{{p.B.X.A0.String(), p.B.X.A1.String()}, {p.B.Y.A0.String(), p.B.Y.A1.String()}, {"1", "0"}},
		PiC:      []string{p.C.X.String(), p.C.Y.String(), "1"},
		Protocol: "groth16", Curve: "bn128",
	}
}

// BenchmarkZerokit measures zerokit's npm wasm build (and snarkjs) on this
// machine, beside BenchmarkVerify and BenchmarkProve: ns/op is the mean
// the Node.js process timed for one call of verifyWithRoots, of witness
// calculation plus generateRLNProofWithWitness, or of snarkjs' verify and
// fullProve, without the test's own IPC.
func BenchmarkZerokit(b *testing.B) {
	dir := testcircuit.Dir(b)
	peer := zerokitjs.Start(b, dir)
	b.Logf("zerokit newRLN (loading the zkey): %.0f ms", peer.LoadMs)
	c := &interopCase{peer: peer}
	s := newSetup(b, "bench")
	x, ext := s.m.Hash(), ExternalNullifier(s.epoch, DefaultRLNIdentifier())
	w := s.witness()
	w.X, w.Ext = x.bytes(), ext.bytes()
	pv, err := peer.Prove(w, 1)
	if err != nil {
		b.Fatal(err)
	}
	p := &RateLimitProof{MerkleRoot: Field(pv.Root), Epoch: s.epoch, ShareX: x, ShareY: Field(pv.Y),
		Nullifier: Field(pv.Nullifier), RLNIdentifier: DefaultRLNIdentifier()}
	copy(p.Proof[:], pv.Proof)
	sp, public, _, _, err := peer.SnarkProve(s.circuitInputs(x, ext), 1)
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, f func(n int) (ms, cpuMs float64)) {
		b.Run(name, func(b *testing.B) {
			ms, cpuMs := f(b.N)
			b.ReportMetric(ms*1e6, "ns/op")
			b.ReportMetric(cpuMs*1e6, "cpu-ns/op")
		})
	}
	run("verify", func(n int) (float64, float64) {
		v := c.zerokitVerifyN(b, s.m, p, n)
		if !v.Valid {
			b.Fatal("zerokit refuses its proof")
		}
		return v.Ms, v.CPUMs
	})
	run("prove", func(n int) (float64, float64) {
		out, err := peer.Prove(w, n)
		if err != nil {
			b.Fatal(err)
		}
		return out.Ms, out.CPUMs
	})
	run("snarkjs-verify", func(n int) (float64, float64) {
		v, err := peer.SnarkVerify(&sp, public, n)
		if err != nil || !v.Valid {
			b.Fatalf("snarkjs refuses its proof: %v", err)
		}
		return v.Ms, v.CPUMs
	})
	run("snarkjs-prove", func(n int) (float64, float64) {
		_, _, ms, cpuMs, err := peer.SnarkProve(s.circuitInputs(x, ext), n)
		if err != nil {
			b.Fatal(err)
		}
		return ms, cpuMs
	})
}

func (c *interopCase) zerokitVerifyN(t testing.TB, m Signal, p *RateLimitProof, n int) zerokitjs.Verdict {
	t.Helper()
	ext := ExternalNullifier(p.Epoch, p.RLNIdentifier)
	v, err := c.peer.Verify(&zerokitjs.ProofValues{Proof: p.Proof[:], Root: p.MerkleRoot.bytes(), Ext: ext.bytes(),
		X: p.ShareX.bytes(), Y: p.ShareY.bytes(), Nullifier: p.Nullifier.bytes()}, signalBytes(m), [][]byte{p.MerkleRoot.bytes()}, n)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
