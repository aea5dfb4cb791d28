package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/google/pprof/profile"
)

// The CPU budget: a CPU profile of each row's measured part, every sample
// put in one stage by the functions on its stack and by the goroutine's
// "node" label (which node of the process, or the publishing application,
// created the goroutine). A stage's share of the samples times the
// process's CPU time (getrusage) is its CPU time per message.

// Stage is one line of the CPU budget.
type Stage int

// The stages, in the order the budget prints them.
const (
	StagePublisher Stage = iota // the application on A: encode and fill the payload (bare: the harness's encoding)
	StageStackA                 // node A's libp2p stack: gossipsub, yamux/mplex, TLS/Noise, TCP, kernel
	StageStackB                 // node B's libp2p stack
	StageMsgID                  // gossipsub's message-id SHA-256, both nodes
	StageHash                   // the deterministic hash (14/WAKU2-MESSAGE)
	StagePaired                 // a msg-id, deterministic hash and wire CRC-32C in one pass (message.HashAndID): node B's, and a publish's that is paired (lightpush, a node that archives)
	StageDecode                 // the WakuMessage decode
	StageRelay                  // the relay's validator rules, envelope and dispatcher
	StageHandlers               // application handlers and the harness's bookkeeping
	StageAppend                 // the archive's Append: its checks and the write queue
	StageCRC                    // the archive's CRC-32C of each record
	StageSQLite                 // the archive writer's SQLite index transaction
	StageSegment                // the archive writer's segment write (pwritev)
	StageWriter                 // the rest of the archive's writer and its done callbacks
	StageSync                   // the archive's fsync rounds
	StageGC                     // garbage collection: marking, assists, sweeping, scavenging
	StageRuntime                // the Go scheduler, timers and netpoll with no caller above them
	StageProfiler               // the CPU profiler's own writer goroutine
	StageRest                   // anything else
	numStages
)

var stageNames = [numStages]string{
	"publisher: encode and fill", "node A: libp2p stack", "node B: libp2p stack", "msg-id SHA-256 (both nodes)",
	"deterministic hash", "msg-id + deterministic hash, one pass", "decode", "relay: validator rules, dispatch",
	"handlers and harness", "archive: Append and queue", "archive: CRC-32C", "archive writer: SQLite",
	"archive writer: segment write", "archive writer: other", "archive: fsync rounds",
	"GC", "runtime: scheduler, timers, netpoll", "profiler", "rest",
}

func (s Stage) String() string { return stageNames[s] }

// Budget is the CPU time of a row's measured part, split into stages.
type Budget struct {
	// StageNs is the CPU time each stage was sampled for, in ns.
	StageNs [numStages]float64
	// Samples is the number of profile samples, at Hz per second of CPU.
	Samples int
	Hz      int
	// CPUNs is the process's CPU time (user+system) over the same part,
	// and Msgs the measured messages.
	CPUNs float64
	Msgs  int
}

// PerMsg returns stage s in ns per message, scaled so that the stages add
// up to the process's CPU time.
func (b *Budget) PerMsg(s Stage) float64 {
	var sampled float64
	for _, v := range b.StageNs {
		sampled += v
	}
	if sampled == 0 || b.Msgs == 0 {
		return math.NaN()
	}
	return b.StageNs[s] / sampled * b.CPUNs / float64(b.Msgs)
}

// SampledShare is the profile's sampled CPU time over the process's CPU
// time: how much of it the profile saw (threads in C code or the kernel
// outside a Go thread's timer are not sampled).
func (b *Budget) SampledShare() float64 {
	var sampled float64
	for _, v := range b.StageNs {
		sampled += v
	}
	return sampled / b.CPUNs
}

// budgetHz is the rate of the budget's profile: at 100 Hz (runtime/pprof's
// own) a run of a few thousand messages gets too few samples to tell a
// 10 µs stage from noise.
const budgetHz = 1000

// labelNode is the pprof label that names who created a goroutine: "A",
// "B" or "publisher".
const labelNode = "node"

// asNode runs f with the goroutine label node=name, so that every
// goroutine f starts (a node's libp2p host, gossipsub, its archive) carries
// it in the profile.
func asNode(ctx context.Context, name string, f func()) {
	pprof.Do(ctx, pprof.Labels(labelNode, name), func(context.Context) { f() })
}

// stageOf puts a sample in its stage. A GC frame anywhere makes it GC (an
// assist counts as GC wherever it runs); otherwise a fine stage (a named
// function of the message path, the profiler) wins wherever it is on the
// stack, the one nearest the root when there are several (SQLite under an
// fsync round is the round's) but for the msg-id, which gives way to a
// stage it calls (node B's early decode and paired hashes); otherwise the frame nearest the leaf that
// belongs to the stack, the relay, the archive or the harness decides; a
// stack of runtime frames alone is the scheduler's.
func stageOf(s *profile.Sample) Stage {
	fine, coarse := numStages, numStages
	onlyRuntime := true
	var node string
	if l := s.Label[labelNode]; len(l) > 0 {
		node = l[0]
	}
	for _, loc := range s.Location { // leaf first
		for _, ln := range loc.Line { // inlined calls first
			if ln.Function == nil {
				continue
			}
			name := ln.Function.Name
			if isGC(name) {
				return StageGC
			}
			if !strings.HasPrefix(name, "runtime.") {
				onlyRuntime = false
			}
			if f := fineStage(name); f != numStages && (f != StageMsgID || fine == numStages) {
				fine = f // what the msg-id calls (an early decode, the paired hashes) stays its own
			}
			if coarse == numStages {
				coarse = coarseStage(name, node)
			}
		}
	}
	switch {
	case fine != numStages:
		return fine
	case coarse != numStages:
		return coarse
	case onlyRuntime && len(s.Location) > 0:
		return StageRuntime
	}
	return StageRest
}

const (
	courier     = "github.com/couriernet/courier/"
	embeddedPkg = courier + "archive/embedded."
)

// fineStage returns the fine stage of a function, numStages if none.
func fineStage(fn string) Stage {
	switch {
	case fn == "runtime/pprof.profileWriter": // the root of the profiler's goroutine
		return StageProfiler
	case fn == courier+"message.(*Envelope).Hash" || fn == courier+"message.(*Message).Hash":
		return StageHash
	case fn == courier+"message.(*Message).HashAndID":
		return StagePaired
	case strings.HasPrefix(fn, courier+"message.Decode") || strings.HasPrefix(fn, courier+"message.(*Message).decode"):
		return StageDecode
	case strings.HasPrefix(fn, courier+"message.(*Message).Encode") || strings.HasPrefix(fn, courier+"message.(*Message).Append"),
		strings.HasPrefix(fn, courier+"cmd/courier/internal/bench.(*Workload).FillPayload"),
		strings.HasPrefix(fn, courier+"cmd/courier/internal/bench.(*Workload).Wire"):
		return StagePublisher
	case fn == courier+"relay.(*Relay).messageID" || fn == courier+"cmd/courier/internal/bench.bareMessageID":
		return StageMsgID
	case strings.HasPrefix(fn, "hash/crc32."):
		return StageCRC
	case strings.HasPrefix(fn, "github.com/mattn/go-sqlite3.") || strings.HasPrefix(fn, "database/sql."):
		return StageSQLite // its C code is sampled under runtime.cgocall, with the Go stack above
	case fn == embeddedPkg+"writeVec":
		return StageSegment
	case strings.HasPrefix(fn, embeddedPkg+"(*Archive).sync"):
		return StageSync
	}
	return numStages
}

// gcFuncs are the runtime's garbage-collection entry points.
var gcFuncs = []string{
	"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.gcMark", "runtime.gcStart",
	"runtime.gcStopTheWorld", "runtime.gcSweep", "runtime.bgsweep", "runtime.bgscavenge", "runtime.markroot",
	"runtime.scanobject", "runtime.scanstack", "runtime.scanblock", "runtime.greyobject", "runtime.sweepone",
	"runtime.deductSweepCredit", "runtime.(*sweepLocked).sweep", "runtime.(*gcWork)", "runtime.wbBufFlush",
	"runtime.gcWriteBarrier", "runtime.(*mheap).reclaim", "runtime.(*scavengerState)", "runtime.forEachP",
	"runtime.gcFlushBgCredit", "runtime.gcResetMarkState", "runtime.gcMarkDone", "runtime.gcMarkTermination",
	"runtime.tryDeferToSpanScan", "runtime.scanSpan", "runtime.(*spanQueue)", "runtime.(*gcBits)",
}

func isGC(fn string) bool {
	for _, p := range gcFuncs {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// coarseStage returns the stage of a frame of the stack, the relay, the
// archive or the harness, numStages for anything else (the runtime, the
// standard library's helpers), so that the caller decides.
func coarseStage(fn, node string) Stage {
	switch {
	case strings.HasPrefix(fn, courier+"relay."), strings.HasPrefix(fn, courier+"message."):
		return StageRelay
	case strings.HasPrefix(fn, courier+"archive/internal/queue.(*Queue).Put"),
		strings.HasPrefix(fn, courier+"archive/internal/queue.NewItem"),
		strings.HasPrefix(fn, embeddedPkg+"(*Archive).Append"):
		return StageAppend
	case strings.HasPrefix(fn, courier+"archive/"):
		return StageWriter
	case strings.HasPrefix(fn, courier+"cmd/courier/internal/bench."), strings.HasPrefix(fn, courier+"node."):
		if node == "publisher" && strings.Contains(fn, "bench.drive") {
			return StagePublisher
		}
		return StageHandlers
	case isStack(fn):
		switch node {
		case "A", "publisher":
			return StageStackA
		default:
			return StageStackB
		}
	}
	return numStages
}

// stackPrefixes are the packages of the libp2p stack and the network.
var stackPrefixes = []string{
	"github.com/libp2p/", "github.com/multiformats/", "github.com/flynn/noise", "crypto/tls.",
	"crypto/internal/fips140/aes", "crypto/cipher.", "golang.org/x/crypto/chacha20poly1305",
	"net.", "internal/poll.", "github.com/gogo/protobuf", "google.golang.org/protobuf/internal",
	"google.golang.org/protobuf/proto", "bufio.", "github.com/quic-go",
}

func isStack(fn string) bool {
	for _, p := range stackPrefixes {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// budgetOf splits the CPU profile p of a measured part: cpuNs of process
// CPU time over msgs messages.
func budgetOf(p *profile.Profile, cpuNs float64, msgs int) *Budget {
	b := &Budget{CPUNs: cpuNs, Msgs: msgs}
	if p.Period > 0 {
		b.Hz = int(1e9 / p.Period)
	}
	vi := len(p.SampleType) - 1 // cpu/nanoseconds after samples/count
	for _, s := range p.Sample {
		b.StageNs[stageOf(s)] += float64(s.Value[vi])
		b.Samples += int(s.Value[0])
	}
	return b
}

// WriteBudget writes the CPU budget of every row that has one, side by
// side, in µs per message, and for each macro row with its macro-bare row
// in the run (macro-run2 and macro-bare-run2, macro[mplex] and
// macro-bare[mplex]) a column of their difference.
func WriteBudget(w io.Writer, rows []Row) error {
	var cols []*Row
	for i := range rows {
		if rows[i].Budget != nil {
			cols = append(cols, &rows[i])
		}
	}
	if len(cols) == 0 {
		return nil
	}
	pairs := slices.DeleteFunc(BarePairs(rows), func(p [2]*Row) bool { return p[0].Budget == nil || p[1].Budget == nil })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "CPU budget, µs per message\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t", c.Scenario)
	}
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s - %s\t", p[0].Scenario, p[1].Scenario)
	}
	fmt.Fprintln(tw)
	// line writes a row of v for each column and each pair's difference,
	// each formatted by format.
	line := func(label string, v func(*Row) float64, format func(float64) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, c := range cols {
			fmt.Fprintf(tw, "%s\t", format(v(c)))
		}
		for _, p := range pairs {
			fmt.Fprintf(tw, "%s\t", format(v(p[0])-v(p[1])))
		}
		fmt.Fprintln(tw)
	}
	for s := range numStages {
		line(s.String(), func(r *Row) float64 { return r.Budget.PerMsg(s) }, us)
	}
	line("total (getrusage)", func(r *Row) float64 { return r.Budget.CPUNs / float64(r.Budget.Msgs) }, us)
	line("minor page faults (count)", func(r *Row) float64 { return r.MinorFaultsPerMsg }, faults)
	fmt.Fprint(tw, "profile samples\t")
	for _, c := range cols {
		fmt.Fprintf(tw, "%d at %d Hz, %.0f%% seen\t", c.Budget.Samples, c.Budget.Hz, 100*c.Budget.SampledShare())
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range pairs {
		d := splitDifference(p[0].Budget, p[1].Budget)
		fmt.Fprintf(w, "%s - %s: %.1f µs per message = the node's own stages %.1f (hashes over macro-bare's msg-ids %.1f, decode and relay %.1f, archive %.1f) + GC %.1f + unexplained %.1f ± %.1f (the stack, publisher, runtime, profiler and rest beside %s's; ± one standard error of the sampling)\n",
			p[0].Scenario, p[1].Scenario, d.Total/1e3, d.Node/1e3, d.Hash/1e3, d.Relay/1e3, d.Archive/1e3, d.GC/1e3, d.Unexplained/1e3, d.UnexplainedErr/1e3, p[1].Scenario)
	}
	return nil
}

// Difference splits the CPU time per message a macro row spends over its
// macro-bare row, in ns: the node's own stages (the hashes, decode, the
// relay and handlers, the archive), GC, and the unexplained rest: how much
// more the stages both rows have (the libp2p stack, the publisher, the
// runtime, the profiler and the rest) cost in the macro row. Hash is the
// deterministic hash and the msg-ids together, over macro-bare's msg-ids:
// node B computes its msg-id with the deterministic hash in one pass
// (StagePaired), so its msg-id is no longer a stage of its own to compare.
//
// UnexplainedErr is one standard error of Unexplained that comes from the
// profiles' sampling alone: the shared stages' share p of a row's n
// samples is binomial, so their CPU time per message T·p is known to
// T·sqrt(p(1-p)/n), and the two rows' errors add in quadrature. A rest
// smaller than about twice it cannot be told from zero; at a few hundred
// samples a row it is tens of µs, so a figure under 10 µs needs runs of
// thousands of samples (-n 20000 and more).
type Difference struct {
	Total, Node, Hash, Relay, Archive, GC, Unexplained float64
	UnexplainedErr                                     float64
}

// splitDifference returns how the budget m of a macro row differs from the
// budget b of its macro-bare row.
func splitDifference(m, b *Budget) Difference {
	d := func(stages ...Stage) float64 {
		var v float64
		for _, s := range stages {
			v += m.PerMsg(s) - b.PerMsg(s)
		}
		return v
	}
	x := Difference{
		Total: m.CPUNs/float64(m.Msgs) - b.CPUNs/float64(b.Msgs),
		Hash:  d(StageHash, StagePaired, StageMsgID), Relay: d(StageDecode, StageRelay, StageHandlers),
		Archive: d(StageAppend, StageCRC, StageSQLite, StageSegment, StageWriter, StageSync),
		GC:      d(StageGC),
	}
	x.Node = x.Hash + x.Relay + x.Archive
	x.Unexplained = x.Total - x.Node - x.GC
	em, eb := m.sharedErr(), b.sharedErr()
	x.UnexplainedErr = math.Sqrt(em*em + eb*eb)
	return x
}

// ownStages are the stages splitDifference names (the node's own, GC and
// the msg-ids beside them); every other stage is one that macro and
// macro-bare rows share.
var ownStages = [...]Stage{StageHash, StagePaired, StageMsgID, StageDecode, StageRelay, StageHandlers, StageAppend, StageCRC, StageSQLite, StageSegment, StageWriter, StageSync, StageGC}

// sharedErr returns the sampling error, in ns per message, of the CPU time
// per message b's shared stages add up to (see Difference.UnexplainedErr);
// NaN without samples.
func (b *Budget) sharedErr() float64 {
	var sampled, own float64
	for s, v := range b.StageNs {
		sampled += v
		for _, o := range ownStages {
			if Stage(s) == o {
				own += v
			}
		}
	}
	if b.Samples == 0 || sampled == 0 || b.Msgs == 0 {
		return math.NaN()
	}
	p := (sampled - own) / sampled
	return b.CPUNs / float64(b.Msgs) * math.Sqrt(p*(1-p)/float64(b.Samples))
}

// faults formats a count of page faults per message, "-" for NaN.
func faults(n float64) string {
	if math.IsNaN(n) {
		return "-"
	}
	return fmt.Sprintf("%.1f", n)
}

// us formats ns as µs with one decimal, "-" for NaN.
func us(ns float64) string {
	if math.IsNaN(ns) {
		return "-"
	}
	return fmt.Sprintf("%.1f", ns/1e3)
}

// cpuProfiler takes the CPU profile of each row's measured part, at
// budgetHz, for the row's budget and, with a path, for files: each part
// beside path (cpu.prof: cpu.macro.prof, cpu.macro-bare.prof) and all of
// them merged in path.
type cpuProfiler struct {
	path  string
	parts []*profile.Profile
	buf   bytes.Buffer
}

// start starts a part. It fails when the process is being profiled
// already (go test -cpuprofile); the row then has no budget.
func (c *cpuProfiler) start() error {
	c.buf.Reset()
	// runtime/pprof starts at 100 Hz; a rate set before it stays, and the
	// runtime notes on stderr that it kept it, a note withoutStderr keeps
	// from the bench's output.
	runtime.SetCPUProfileRate(budgetHz)
	return withoutStderr(func() error { return pprof.StartCPUProfile(&c.buf) })
}

// stop ends the part of row name and returns its profile.
func (c *cpuProfiler) stop(name string) (*profile.Profile, error) {
	pprof.StopCPUProfile()
	p, err := profile.Parse(bytes.NewReader(c.buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("bench: CPU profile of %s: %w", name, err)
	}
	if c.path == "" {
		return p, nil
	}
	if err := writeProfile(partPath(c.path, name), p); err != nil {
		return nil, err
	}
	c.parts = append(c.parts, p.Copy())
	return p, nil
}

// finish writes the merged parts to path.
func (c *cpuProfiler) finish() error {
	if c.path == "" || len(c.parts) == 0 {
		return nil
	}
	m, err := profile.Merge(c.parts)
	if err != nil {
		return fmt.Errorf("bench: merge CPU profiles: %w", err)
	}
	return writeProfile(c.path, m)
}

func writeProfile(path string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// partPath is where the profile of row name goes beside path: the name
// before path's extension.
func partPath(path, name string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + name + ext
}
