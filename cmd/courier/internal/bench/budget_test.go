package bench

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// sample makes a profile sample of ns CPU nanoseconds whose stack is fns,
// leaf first, on a goroutine labelled node.
func sample(ns int64, node string, fns ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, ns}}
	if node != "" {
		s.Label = map[string][]string{labelNode: {node}}
	}
	for _, fn := range fns {
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: fn}}}})
	}
	return s
}

const (
	pubsubPkg = "github.com/libp2p/go-libp2p-pubsub."
	relayPkg  = courier + "relay."
	benchPkg  = courier + "cmd/courier/internal/bench."
)

// TestStageOf puts stacks of the message path in their stages.
func TestStageOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *profile.Sample
		want Stage
	}{
		{"deterministic hash in the validator under gossipsub", sample(1, "B", "crypto/internal/fips140/sha256.blockSHANI", "crypto/sha256.(*Digest).Write",
			courier+"message.(*Message).Hash", courier+"message.(*Envelope).Hash", relayPkg+"(*Relay).validateBytes", pubsubPkg+"(*validation).validate"), StageHash},
		{"decode under the validator", sample(1, "B", "google.golang.org/protobuf/encoding/protowire.ConsumeVarint", courier+"message.(*Message).decode",
			courier+"message.Decode", relayPkg+"(*Relay).validateBytes", pubsubPkg+"(*validation).validate"), StageDecode},
		{"the relay's msg-id", sample(1, "A", "crypto/sha256.Sum256", relayPkg+"(*Relay).messageID", pubsubPkg+"(*msgIDGenerator).ID"), StageMsgID},
		{"node B's msg-id with the deterministic hash", sample(1, "B", courier+"message/internal/sha256x2.blocks2", courier+"message/internal/sha256x2.Sum", courier+"message.(*Message).HashAndID",
			relayPkg+"(*earlyDecode).id", relayPkg+"(*Relay).messageID", pubsubPkg+"(*msgIDGenerator).ID"), StagePaired},
		{"node B's early decode", sample(1, "B", courier+"message.(*Message).decode", courier+"message.Decode",
			relayPkg+"(*earlyDecode).id", relayPkg+"(*Relay).messageID", pubsubPkg+"(*msgIDGenerator).ID"), StageDecode},
		{"macro-bare's msg-id", sample(1, "B", "crypto/sha256.Sum256", benchPkg+"bareMessageID", benchPkg+"runMacroBare.func1.1", pubsubPkg+"(*msgIDGenerator).ID"), StageMsgID},
		{"a GC assist in a stack read", sample(1, "B", "runtime.scanobject", "runtime.gcDrainN", "runtime.gcAssistAlloc1", "runtime.mallocgc",
			"github.com/libp2p/go-yamux/v5.(*Stream).Read"), StageGC},
		{"the GC's worker", sample(1, "", "runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"), StageGC},
		{"a copy in node B's yamux", sample(1, "B", "runtime.memmove", "github.com/libp2p/go-yamux/v5.(*segmentedBuffer).Append"), StageStackB},
		{"node A's TCP write", sample(1, "A", "internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write"), StageStackA},
		{"gossipsub's publish under the relay's: the stack's", sample(1, "publisher", "runtime.mapassign", pubsubPkg+"(*Topic).Publish", relayPkg+"(*Relay).publish"), StageStackA},
		{"the fill in PublishWith", sample(1, "publisher", "runtime.memmove", benchPkg+"(*Workload).FillPayload", relayPkg+"(*Relay).PublishWith.func1",
			relayPkg+"(*Relay).publish", "runtime/pprof.Do"), StagePublisher},
		{"the encoding's zeroing", sample(1, "publisher", "runtime.memclrNoHeapPointers", "runtime.mallocgc", courier+"message.(*Message).EncodeReserve"), StagePublisher},
		{"the dispatcher's channel send", sample(1, "B", "runtime.chansend", relayPkg+"(*dispatcher).dispatch", relayPkg+"(*Relay).subscriptionLoop"), StageRelay},
		{"the CRC in Append", sample(1, "B", "hash/crc32.castagnoliSSE42Triple", "hash/crc32.Checksum", embeddedPkg+"(*Archive).Append", relayPkg+"(*dispatcher).dispatch"), StageCRC},
		{"the queue's put", sample(1, "B", "sync.(*Mutex).Lock", courier+"archive/internal/queue.(*Queue).Put", embeddedPkg+"(*Archive).Append"), StageAppend},
		{"an insert", sample(1, "B", "runtime.cgocall", "github.com/mattn/go-sqlite3.(*SQLiteStmt).exec", "database/sql.(*Conn).ExecContext", embeddedPkg+"(*Archive).commit"), StageSQLite},
		{"the segment's pwritev", sample(1, "B", "internal/runtime/syscall/linux.Syscall6", "syscall.Syscall6", embeddedPkg+"writeVec", embeddedPkg+"(*Archive).commit"), StageSegment},
		{"an fsync round", sample(1, "B", "internal/runtime/syscall/linux.Syscall6", "syscall.Fsync", "internal/poll.(*FD).Fsync", "os.(*File).Sync", embeddedPkg+"(*Archive).syncOnce"), StageSync},
		{"SQLite under an fsync round", sample(1, "B", "runtime.cgocall", "github.com/mattn/go-sqlite3.(*SQLiteConn).exec", embeddedPkg+"(*Archive).syncIndex", embeddedPkg+"(*Archive).syncOnce"), StageSync},
		{"the done callbacks", sample(1, "B", "sync.(*Mutex).Lock", courier+"archive/internal/queue.Finish", embeddedPkg+"(*Archive).writeLoop"), StageWriter},
		{"the harness's tracker", sample(1, "B", "runtime.nanotime", benchPkg+"(*tracker).event", benchPkg+"addHandlers.func1", relayPkg+"(*dispatcher).add.func1"), StageHandlers},
		{"the scheduler", sample(1, "", "runtime.futex", "runtime.notesleep", "runtime.stopm", "runtime.findRunnable", "runtime.schedule", "runtime.mcall"), StageRuntime},
		{"the profiler", sample(1, "", "runtime/pprof.(*profileBuilder).addCPUData", "runtime/pprof.profileWriter"), StageProfiler},
		{"anything else", sample(1, "", "encoding/json.Marshal", "main.main"), StageRest},
		{"an empty stack", sample(1, ""), StageRest},
	} {
		if got := stageOf(tc.s); got != tc.want {
			t.Errorf("%s: stage %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBudgetOf scales the sampled stages to the process's CPU time.
func TestBudgetOf(t *testing.T) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Period:     1e6,
		Sample: []*profile.Sample{
			sample(3e6, "B", courier+"message.(*Envelope).Hash"),
			sample(1e6, "B", embeddedPkg+"writeVec"),
		},
	}
	p.Sample[0].Value[0] = 3
	// 4 ms sampled of 8 ms CPU over 100 messages: each stage counts double.
	b := budgetOf(p, 8e6, 100)
	if b.Hz != 1000 || b.Samples != 4 || b.SampledShare() != 0.5 {
		t.Fatalf("hz %d samples %d share %v, want 1000 4 0.5", b.Hz, b.Samples, b.SampledShare())
	}
	if got := b.PerMsg(StageHash); got != 60e3 {
		t.Fatalf("hash %v ns per message, want 60000", got)
	}
	if got := b.PerMsg(StageSegment); got != 20e3 {
		t.Fatalf("segment %v ns per message, want 20000", got)
	}
	var buf bytes.Buffer
	if err := WriteBudget(&buf, []Row{{Scenario: "macro", Budget: b, MinorFaultsPerMsg: 7.3}, {Scenario: "libnet"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"deterministic hash", "60.0", "20.0", "total (getrusage)", "80.0", "4 at 1000 Hz, 50% seen"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("budget table lacks %q:\n%s", want, buf.String())
		}
	}
	if !regexp.MustCompile(`minor page faults \(count\) +7\.3\n`).MatchString(buf.String()) {
		t.Errorf("budget table lacks macro's 7.3 minor page faults per message:\n%s", buf.String())
	}
}

// TestSplitDifference splits macro's extra CPU over macro-bare's: the
// node's stages, GC, and what is left in the stages both rows have.
func TestSplitDifference(t *testing.T) {
	m := &Budget{Msgs: 10, CPUNs: 5000, Samples: 100}
	m.StageNs[StageStackB], m.StageNs[StageHash], m.StageNs[StageSQLite], m.StageNs[StageGC], m.StageNs[StageDecode] = 250, 100, 100, 30, 20
	b := &Budget{Msgs: 10, CPUNs: 3000, Samples: 400}
	b.StageNs[StageStackB], b.StageNs[StageGC] = 240, 60
	// macro: 500 ns per message in all, 250 stack B; bare: 300, 240 stack B.
	got := splitDifference(m, b)
	// Sampling errors: macro's shared share 0.5 of 100 samples, 500 ns:
	// 500·sqrt(0.25/100) = 25; bare's 0.8 of 400, 300 ns: 300·sqrt(0.16/400) = 6.
	wantErr := math.Sqrt(25*25 + 6*6)
	if math.Abs(got.UnexplainedErr-wantErr) > 1e-9 {
		t.Errorf("UnexplainedErr %v, want %v", got.UnexplainedErr, wantErr)
	}
	got.UnexplainedErr = 0
	want := Difference{Total: 200, Node: 220, Hash: 100, Relay: 20, Archive: 100, GC: -30, Unexplained: 10}
	if got != want {
		t.Fatalf("split %+v, want %+v", got, want)
	}

	// Node B's msg-id inside the paired hashes: macro's msg-id is A's
	// alone, and the hashes' difference is both of macro's hash stages
	// over bare's two msg-ids.
	m.StageNs[StageHash], m.StageNs[StagePaired], m.StageNs[StageMsgID] = 0, 70, 40
	m.StageNs[StageStackB] -= 10
	b.StageNs[StageMsgID] = 80
	b.StageNs[StageStackB] -= 80
	got = splitDifference(m, b)
	got.UnexplainedErr = 0
	want = Difference{Total: 200, Node: 150, Hash: 30, Relay: 20, Archive: 100, GC: -30, Unexplained: 80}
	if math.Abs(got.Hash-want.Hash) > 1e-9 || math.Abs(got.Unexplained-want.Unexplained) > 1e-9 || math.Abs(got.Node-want.Node) > 1e-9 {
		t.Fatalf("split with paired hashes %+v, want %+v", got, want)
	}
}

func TestPartPath(t *testing.T) {
	for _, tc := range [][3]string{
		{"cpu.prof", "macro", "cpu.macro.prof"},
		{"/tmp/x/cpu.pb.gz", "macro-bare", "/tmp/x/cpu.pb.macro-bare.gz"},
		{"cpu", "macro[mplex]", "cpu.macro[mplex]"},
	} {
		if got := partPath(tc[0], tc[1]); got != tc[2] {
			t.Errorf("partPath(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestMacroBudget runs macro and macro-bare with the budget on: each row
// has one, its stages add up to the row's CPU time per message, and the
// stages of the node's own work are empty in macro-bare.
func TestMacroBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes")
	}
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro", "macro-bare"}, N: 200, Warmup: 10, Profile: "10kB", Budget: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Budget == nil {
			t.Fatalf("%s: no budget", r.Scenario)
		}
		var sum float64
		for s := range numStages {
			sum += r.Budget.PerMsg(s)
		}
		if d := sum - r.CPUNsPerMsg; d > 1 || d < -1 {
			t.Errorf("%s: stages add up to %.0f ns per message, CPU %.0f", r.Scenario, sum, r.CPUNsPerMsg)
		}
	}
	bare := rows[1].Budget
	for _, s := range []Stage{StageHash, StageDecode, StageCRC, StageSQLite, StageSegment, StageSync} {
		if v := bare.PerMsg(s); v != 0 {
			t.Errorf("macro-bare: %s %.0f ns per message, want none", s, v)
		}
	}
}
