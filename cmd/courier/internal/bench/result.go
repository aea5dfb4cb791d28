package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/couriernet/courier/message"
)

// phase holds what is read at the start and at the end of the measured part
// of a run.
type phase struct {
	start        time.Time
	wall         time.Duration
	mem0, mem1   memSample
	live0, live1 uint64
	proc0, proc1 message.CounterSnapshot // all nodes of the process
	recv0, recv1 message.CounterSnapshot // the receiving node
	msgID0       uint64
	msgID1       uint64
	harnessBytes int64 // bytes the harness allocated to make the measured input
	cpu0, cpu1   time.Duration
	flt0, flt1   int64   // the process's minor page faults (processUsage)
	sent         int     // messages published, warm-up included (drive)
	rate         float64 // the publisher's pace in msg/s, 0 for none (drive)
	warmup       string  // how a steady-state warm-up ended, or ""

	name    string       // the row's
	prof    *cpuProfiler // nil: no budget
	cpuProf *profile.Profile
	out     io.Writer // notes
}

// newPhase returns the phase of row name.
func (c *Config) newPhase(name string) phase {
	return phase{name: name, prof: c.prof, out: c.Out}
}

func (p *phase) begin(proc, recv message.CounterSnapshot, msgID uint64) {
	p.live0 = liveAfterGC()
	p.proc0, p.recv0, p.msgID0 = proc, recv, msgID
	p.mem0 = readMem()
	if p.prof != nil {
		if err := p.prof.start(); err != nil {
			fmt.Fprintf(p.out, "%s: no CPU budget: %v\n", p.name, err)
			p.prof = nil
		}
	}
	p.cpu0, p.flt0 = processUsage()
	p.start = time.Now()
}

func (p *phase) end(proc, recv message.CounterSnapshot, msgID uint64) {
	p.wall = time.Since(p.start)
	p.cpu1, p.flt1 = processUsage()
	if p.prof != nil {
		var err error
		if p.cpuProf, err = p.prof.stop(p.name); err != nil {
			fmt.Fprintf(p.out, "%s: no CPU budget: %v\n", p.name, err)
		}
	}
	p.mem1 = readMem()
	p.proc1, p.recv1, p.msgID1 = proc, recv, msgID
	p.live1 = liveAfterGC()
}

// fill writes the phase's figures into r for w's measured messages.
func (p *phase) fill(r *Row, w *Workload, t *tracker) {
	n := float64(w.N)
	r.WallMs = float64(p.wall) / 1e6
	r.CPUNsPerMsg = float64(p.cpu1-p.cpu0) / n
	r.MinorFaultsPerMsg = float64(p.flt1-p.flt0) / n
	if p.cpuProf != nil {
		r.Budget = budgetOf(p.cpuProf, float64(p.cpu1-p.cpu0), w.N)
	}
	r.MsgPerS = n / p.wall.Seconds()
	proc, recv := p.proc1.Sub(p.proc0), p.recv1.Sub(p.recv0)
	r.DecodesPerMsg = float64(proc.Decodes) / n
	r.HashesPerMsg = float64(proc.Hashes) / n
	r.EncodesPerMsg = float64(proc.Encodes) / n
	r.HashedMB = float64(proc.HashedBytes) / 1e6
	r.DecodedMB = float64(proc.DecodedBytes) / 1e6
	r.RecvDecodesPerMsg = float64(recv.Decodes) / n
	r.RecvHashesPerMsg = float64(recv.Hashes) / n
	r.MsgIDHashesPerMsg = float64(p.msgID1-p.msgID0) / n
	r.OccupiedMemDeltaMB = (float64(p.live1) - float64(p.live0)) / 1e6
	r.GCCollections = float64(p.mem1.gcCycles - p.mem0.gcCycles)
	alloc := float64(p.mem1.allocBytes - p.mem0.allocBytes)
	r.AllocBytesPerMsg = alloc / n
	r.AllocsPerMsg = float64(p.mem1.allocObjects-p.mem0.allocObjects) / n
	mean := float64(w.MeasuredPayloadBytes()) / n
	r.PayloadCopiesPerMsg = (alloc - float64(p.harnessBytes)) / n / mean
	t.mu.Lock()
	defer t.mu.Unlock()
	r.P50Ns = float64(t.latency.ValueAtQuantile(50))
	r.P99Ns = float64(t.latency.ValueAtQuantile(99))
	r.PeakHeapMB = float64(t.peakLive) / 1e6
	r.PeakHeapAllocMB = float64(t.peakHeap) / 1e6
	r.Trace = &Trace{Heap: slices.Clone(t.heap), CacheBoundBytes: math.NaN()}
	for _, b := range t.latency.CumulativeDistributionWithTicks(5) {
		r.Trace.Latency = append(r.Trace.Latency, LatencyPoint{Ns: b.ValueAt, Quantile: b.Quantile / 100})
	}
	r.Inflight = float64(cap(t.window))
	if p.rate > 0 {
		r.RatePerS = p.rate
	}
	if t.acks.TotalCount() > 0 {
		r.AckP50Ns = float64(t.acks.ValueAtQuantile(50))
		r.AckP99Ns = float64(t.acks.ValueAtQuantile(99))
	}
	if t.inter.TotalCount() > 0 {
		r.InterarrivalP50Ns = float64(t.inter.ValueAtQuantile(50))
		r.InterarrivalP99Ns = float64(t.inter.ValueAtQuantile(99))
	}
}

// processUsage returns the user and system CPU time the process has used
// and the minor page faults it has taken (getrusage's ru_minflt): each
// fault is the first touch of a page of memory the process had not
// touched, or had given back to the kernel, such as a heap span the Go
// runtime's scavenger returned. Writes into the kernel's page cache (the
// archive's segments) do not fault and do not count.
func processUsage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}
