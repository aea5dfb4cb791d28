//go:build unix

package rln

import (
	"fmt"
	"testing"

	"github.com/couriernet/courier/rln/internal/zerokitjs"
)

// makeVectors computes every vector with zerokit (and nwaku's compositions
// in JavaScript) for inputs chosen here. Without prove, the proof vectors
// are left out (proving in the wasm build takes seconds each).
func makeVectors(t *testing.T, peer *zerokitjs.Peer, prove bool) *vectors {
	t.Helper()
	must := func(b []byte, err error) hx {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v := &vectors{Source: "zerokit v0.8.0 rln-wasm (npm @waku/zerokit-rln-wasm 0.2.1); signal, epoch, external nullifier and protobuf as nwaku v0.38.1 composes them (rln_relay.nim, conversion_utils.nim, rln/wrappers.nim, protocol_types.nim)"}

	rMinus1 := decimalField(t, "21888242871839275222246405745257275088548364400416034343698204186575808495616")
	ha, hb, hc := HashToField([]byte("a")), HashToField([]byte("b")), HashToField([]byte("c"))
	for _, in := range [][]Field{
		{FieldFromUint64(0)}, {FieldFromUint64(1)}, {rMinus1}, {ha},
		{FieldFromUint64(0), FieldFromUint64(0)}, {FieldFromUint64(1), FieldFromUint64(2)}, {ha, hb}, {rMinus1, ha},
		{FieldFromUint64(1), FieldFromUint64(2), FieldFromUint64(3)}, {ha, hb, hc},
	} {
		pv := poseidonVector{}
		args := make([][]byte, len(in))
		for i := range in {
			pv.Inputs = append(pv.Inputs, in[i].bytes())
			args[i] = in[i].bytes()
		}
		pv.Output = must(peer.Poseidon(args...))
		v.Poseidon = append(v.Poseidon, pv)
	}

	long := make([]byte, 1000)
	for i := range long {
		long[i] = byte(i * 7)
	}
	ff := make([]byte, 32)
	for i := range ff {
		ff[i] = 0xff
	}
	for _, data := range [][]byte{{}, {0}, []byte("hello"), ff, long} {
		v.HashToField = append(v.HashToField, struct {
			Data   hx `json:"data"`
			Output hx `json:"output"`
		}{data, must(peer.Hash(data))})
	}

	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	for _, s := range []struct {
		payload []byte
		topic   string
		ts      int64
	}{
		{[]byte("hello"), "/courier/1/rln/proto", 1700000000123456789},
		{[]byte{}, "/waku/2/default-content/proto", 0},
		{bin, "/ü/1/tøpic/proto", -1},
		{long, "/app/1/x/json", 9223372036854775807},
	} {
		sig, x, err := peer.Signal(s.payload, s.topic, s.ts)
		if err != nil {
			t.Fatal(err)
		}
		v.Signals = append(v.Signals, struct {
			Payload      hx     `json:"payload"`
			ContentTopic string `json:"contentTopic"`
			Timestamp    int64  `json:"timestamp"`
			Signal       hx     `json:"signal"`
			X            hx     `json:"x"`
		}{s.payload, s.topic, s.ts, sig, x})
	}

	for _, e := range []struct {
		ts  int64
		sec uint64
	}{
		{1700000000123456789, 600}, {1700000000000000000, 1}, {0, 600}, {999999999, 1}, {1000000000, 1},
		// next to an epoch boundary, where float64 rounding decides
		{1700000400*1e9 - 1, 600}, {1700000400 * 1e9, 600}, {1700000400*1e9 - 100, 600},
		{1764590399999999999, 1}, {9223372036854775807, 1}, {9223372036854775807, 600},
	} {
		v.Epochs = append(v.Epochs, struct {
			Timestamp int64  `json:"timestamp"`
			EpochSec  uint64 `json:"epochSec"`
			Epoch     hx     `json:"epoch"`
		}{e.ts, e.sec, must(peer.Epoch(e.ts, e.sec))})
	}

	v.RLNIdentifier.Bytes = wakuID[:]
	v.RLNIdentifier.Hash = must(peer.Hash(wakuID[:]))
	var zerokitID RLNIdentifier
	copy(zerokitID[:], "zerokit/rln/010203040506070809")
	for _, x := range []struct {
		epoch Epoch
		id    RLNIdentifier
	}{
		{EpochFromUint64(2833333), DefaultRLNIdentifier()}, {EpochFromUint64(0), DefaultRLNIdentifier()},
		{EpochFromUint64(1764590000), DefaultRLNIdentifier()}, {EpochFromUint64(1), zerokitID},
	} {
		v.ExternalNullifiers = append(v.ExternalNullifiers, struct {
			Epoch         hx `json:"epoch"`
			RLNIdentifier hx `json:"rlnIdentifier"`
			Output        hx `json:"output"`
		}{x.epoch[:], x.id[:], must(peer.ExternalNullifier(x.epoch[:], x.id[:]))})
	}

	seeds := [][]byte{{}, []byte("seed"), []byte("courier"), bin[:32]}
	for _, seed := range seeds {
		k, err := peer.SeededKey(seed)
		if err != nil {
			t.Fatal(err)
		}
		v.Identities = append(v.Identities, struct {
			Seed       hx `json:"seed"`
			Trapdoor   hx `json:"trapdoor"`
			Nullifier  hx `json:"nullifier"`
			SecretHash hx `json:"secretHash"`
			Commitment hx `json:"commitment"`
		}{seed, k.Trapdoor, k.Nullifier, k.Secret, k.Commitment})
		for _, limit := range []uint64{1, 20, 100, MaxUserMessageLimit} {
			v.RateCommitments = append(v.RateCommitments, struct {
				Commitment       hx     `json:"commitment"`
				UserMessageLimit uint64 `json:"userMessageLimit"`
				Output           hx     `json:"output"`
			}{k.Commitment, limit, must(peer.Poseidon(k.Commitment, FieldFromUint64(limit).bytes()))})
		}
	}

	if !prove {
		return v
	}
	for i, pc := range []struct {
		seed         string
		limit, msgID uint64
		index        uint64
		emptyTree    bool
		payload      string
		ts           int64
		epochSec     uint64
	}{
		{"courier-vector-1", 100, 0, 0, true, "hello", 1700000000123456789, 600},
		{"courier-vector-2", 20, 19, 1<<TreeDepth - 1, false, "", 1764590000987654321, 1},
		{"courier-vector-3", 1, 0, 0xabcde, false, "the third", 1764590399999999999, 600},
	} {
		k, err := peer.SeededKey([]byte(pc.seed))
		if err != nil {
			t.Fatal(err)
		}
		path := zeroPath(t, pc.index)
		if !pc.emptyTree {
			for j := range path.Siblings {
				path.Siblings[j] = HashToField([]byte(fmt.Sprintf("%s/%d", pc.seed, j)))
			}
		}
		pv := proofVector{Payload: []byte(pc.payload), ContentTopic: "/courier/1/rln-vector/proto", Timestamp: pc.ts,
			EpochSec: pc.epochSec, IdentitySeed: []byte(pc.seed), SecretHash: k.Secret,
			UserMessageLimit: pc.limit, MessageID: pc.msgID, Index: pc.index}
		_, x, err := peer.Signal(pv.Payload, pv.ContentTopic, pv.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		epoch := must(peer.Epoch(pv.Timestamp, pv.EpochSec))
		ext := must(peer.ExternalNullifier(epoch, wakuID[:]))
		w := &zerokitjs.Witness{Secret: k.Secret, Limit: FieldFromUint64(pc.limit).bytes(),
			MessageID: FieldFromUint64(pc.msgID).bytes(), X: x, Ext: ext}
		for j := range path.Siblings {
			pv.Siblings = append(pv.Siblings, path.Siblings[j].bytes())
			w.PathElements = append(w.PathElements, path.Siblings[j].bytes())
			w.PathIndex = append(w.PathIndex, int(pc.index>>j&1))
		}
		out, err := peer.Prove(w, 1)
		if err != nil {
			t.Fatalf("proof vector %d: %v", i, err)
		}
		pv.PublicInputs = []hx{out.Y, out.Root, out.Nullifier, out.X, out.Ext}
		pv.RateLimitProof = must(peer.EncodeProof(out.Proof, out.Root, epoch, out.X, out.Y, out.Nullifier, wakuID[:]))
		v.Proofs = append(v.Proofs, pv)
	}
	return v
}
