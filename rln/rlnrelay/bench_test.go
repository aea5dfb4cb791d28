package rlnrelay

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/harness"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op, the CPU time the process spent per iteration,
// and cores, CPU time over wall time: how many cores the iterations kept
// busy at once.
func reportCPU(b *testing.B, start time.Duration, wallStart time.Time) {
	cpu := cpuTime() - start
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(cpu)/float64(time.Since(wallStart)), "cores")
}

func batchMessages(b *testing.B) []*message.Message {
	ms := make([]*message.Message, goldenBatch)
	for i := range ms {
		ms[i] = goldenMsg(b, fmt.Sprintf("b%02d", i))
	}
	return ms
}

// BenchmarkValidate is the validator's path for one message with a valid
// proof: decode, the checks, one verification, the log insert. The log is
// renewed after each pass over the 32 golden proofs, so every message is
// new to it.
func BenchmarkValidate(b *testing.B) {
	v, _ := newTestValidator(b, nil)
	ms := batchMessages(b)
	b.ReportAllocs()
	cpu, wall := cpuTime(), time.Now()
	for i := 0; b.Loop(); i++ {
		if i%len(ms) == 0 {
			v.log = newNullifierLog(DefaultMaxLogEntries)
		}
		if r := v.Validate(ms[i%len(ms)]); r.Reason != Valid {
			b.Fatal(r.Reason, r.Err)
		}
	}
	reportCPU(b, cpu, wall)
}

// BenchmarkValidateParallel runs the validator on every core at once
// (GOMAXPROCS goroutines, as gossipsub's validation workers do) on the 32
// golden proofs: the first pass logs them, the later ones find them in the
// log (ReasonDuplicate), a path that differs from the valid one only by
// the map insert. cores says how many cores were kept busy.
func BenchmarkValidateParallel(b *testing.B) {
	v, _ := newTestValidator(b, nil)
	ms := batchMessages(b)
	var next atomic.Uint64
	b.ReportAllocs()
	cpu, wall := cpuTime(), time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m := ms[next.Add(1)%uint64(len(ms))]
			if r := v.Validate(m); r.Reason != Valid && r.Reason != ReasonDuplicate {
				b.Error(r.Reason, r.Err)
				return
			}
		}
	})
	reportCPU(b, cpu, wall)
}

// BenchmarkInjectWithRLN is the relay's whole receive path for one message
// with a valid proof (harness.Inject: decode, content topic rule, the RLN
// check with one verification, the envelope with its proof, the hash,
// dispatch to no handler).
func BenchmarkInjectWithRLN(b *testing.B) {
	v, _ := newTestValidator(b, nil)
	r, err := relay.New(newHost(b), relay.Config{RLN: v})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ms := batchMessages(b)
	wires := make([][]byte, len(ms))
	for i, m := range ms {
		wires[i] = m.Encode(nil)
	}
	b.ReportAllocs()
	cpu, wall := cpuTime(), time.Now()
	for i := 0; b.Loop(); i++ {
		if i%len(ms) == 0 {
			v.log = newNullifierLog(DefaultMaxLogEntries)
		}
		if err := harness.Inject(r, relayTopic, wires[i%len(wires)]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu, wall)
}

// BenchmarkAttach is the Publisher's own cost per message, around a
// prover that costs nothing: the clock check, the id reservation with its
// write and fsync, the encoding of the proof into the message.
func BenchmarkAttach(b *testing.B) {
	now := time.Unix(1764600000, 0)
	clock := now
	p, err := NewPublisher(PublisherConfig{Prover: &idProver{}, Path: staticPath{}, Identity: testIdentity(),
		UserMessageLimit: 1 << 16 / 2, EpochSec: 1, CounterPath: filepath.Join(b.TempDir(), "ids"), Now: func() time.Time { return clock }})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	m := &message.Message{Payload: make([]byte, 1024), ContentTopic: "/courier/1/bench/proto"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Timestamp = now.UnixNano() + int64(i/30000)*int64(time.Second)
		clock = time.Unix(0, m.Timestamp)
		if _, _, err := p.Attach(m); err != nil {
			b.Fatal(err)
		}
	}
}
