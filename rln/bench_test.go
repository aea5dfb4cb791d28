package rln

import (
	"fmt"
	"testing"
)

// BenchmarkVerify is one message's verification as a relay runs it: the
// signal hash, the points' decoding and subgroup checks, and the pairing
// (the external nullifier is cached per epoch). Target: at most 1.5 ms
// on one core (-cpu 1).
func BenchmarkVerify(b *testing.B) {
	v := newVerifier(b)
	ms, ps := vectorProofs(b)
	b.ReportAllocs()
	i := 0
	start := cpuTime()
	for b.Loop() {
		if err := v.Verify(ms[i%len(ms)], ps[i%len(ps)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportCPU(b, start, 1, "")
}

// BenchmarkVerifyParallel verifies on every core at once (run with -cpu
// 1,2 to see it scale: nothing in Verify is shared but read-only state and
// the lock-free cache of external nullifiers).
func BenchmarkVerifyParallel(b *testing.B) {
	v := newVerifier(b)
	ms, ps := vectorProofs(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if err := v.Verify(ms[i%len(ms)], ps[i%len(ps)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// BenchmarkVerifyBatch verifies batches of proofs in one multi-pairing;
// ns/proof is the time per proof.
func BenchmarkVerifyBatch(b *testing.B) {
	v := newVerifier(b)
	ms, ps := vectorProofs(b)
	for _, n := range []int{1, 8, 32} {
		items := make([]BatchItem, n)
		for i := range items {
			items[i] = BatchItem{ms[i%len(ms)], ps[i%len(ps)]}
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				for _, err := range v.VerifyBatch(items) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/proof")
			reportCPU(b, start, n, "proof")
		})
	}
}

// BenchmarkProve makes one proof: the witness from the graph and the
// Groth16 proof. Target: at most 250 ms.
func BenchmarkProve(b *testing.B) {
	p := testProver(b)
	_, member := testMember(b, "bench", 100, 12345)
	m := Signal{Payload: make([]byte, 1000), ContentTopic: "/courier/1/bench/proto", Timestamp: 1764590000000000000}
	epoch := EpochAt(m.Timestamp, 600)
	b.ReportAllocs()
	i := uint64(0)
	start := cpuTime()
	for b.Loop() {
		if _, err := p.Prove(m, member, i%100, epoch); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportCPU(b, start, 1, "")
}

// BenchmarkWitness is the witness part of BenchmarkProve.
func BenchmarkWitness(b *testing.B) {
	p := testProver(b)
	_, member := testMember(b, "bench", 100, 12345)
	x, ext := FieldFromUint64(5), ExternalNullifier(EpochFromUint64(1), DefaultRLNIdentifier())
	xe, _ := x.element()
	exte, _ := ext.element()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		if _, err := p.witness(member, 3, xe, exte); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start, 1, "")
}

func BenchmarkDecodeRateLimitProof(b *testing.B) {
	enc := sampleProof().Marshal()
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeRateLimitProof(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSignalHash(b *testing.B) {
	m := Signal{Payload: make([]byte, 1000), ContentTopic: "/courier/1/bench/proto", Timestamp: 1}
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Payload)))
	for b.Loop() {
		m.Hash()
	}
}
