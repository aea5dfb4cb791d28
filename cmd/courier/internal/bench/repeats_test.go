package bench

import (
	"math"
	"reflect"
	"testing"
)

// pairRows makes a macro row and its macro-bare row named with suffix,
// with the given msg/s and CPU per message (µs) of each.
func pairRows(suffix string, msgPerS, bareMsgPerS, cpuUs, bareCPUUs float64) []Row {
	return []Row{
		{Scenario: "macro" + suffix, MsgPerS: msgPerS, CPUNsPerMsg: cpuUs * 1e3},
		{Scenario: "macro-bare" + suffix, MsgPerS: bareMsgPerS, CPUNsPerMsg: bareCPUUs * 1e3},
	}
}

func TestFindRepeats(t *testing.T) {
	var rows []Row
	rows = append(rows, pairRows("", 100, 1000, 900, 300)...) // the first pair: left out
	rows = append(rows, pairRows("-run2", 800, 1000, 400, 320)...)
	rows = append(rows, pairRows("-run3", 700, 1000, 450, 300)...)
	rows = append(rows, pairRows("-run4", 900, 1000, 390, 300)...)
	rows = append(rows, pairRows("-run5", 750, 1000, 420, 300)...)
	rows = append(rows, pairRows("-steady-run2", 800, 1000, 400, 400)...) // two pairs only
	rows = append(rows, pairRows("-steady-run3", 800, 1000, 400, 400)...)
	rows = append(rows, Row{Scenario: "macro-rest-run2", MsgPerS: 1, CPUNsPerMsg: 1})
	rows = append(rows, Row{Scenario: "macro-run6", MsgPerS: 1, CPUNsPerMsg: 1}) // no macro-bare-run6
	got := FindRepeats(rows)
	if len(got) != 1 {
		t.Fatalf("%d summaries, want 1: %+v", len(got), got)
	}
	r := got[0]
	if r.Macro != "macro-runK" || r.Bare != "macro-bare-runK" || !reflect.DeepEqual(r.Ks, []int{2, 3, 4, 5}) {
		t.Fatalf("repeats %s / %s K %v, want macro-runK / macro-bare-runK K [2 3 4 5]", r.Macro, r.Bare, r.Ks)
	}
	if want := []float64{0.8, 0.7, 0.9, 0.75}; !reflect.DeepEqual(r.MsgRatio, want) {
		t.Errorf("msg/s ratios %v, want %v", r.MsgRatio, want)
	}
	if want := []float64{1.25, 1.5, 1.3, 1.4}; !reflect.DeepEqual(r.CPURatio, want) {
		t.Errorf("CPU ratios %v, want %v", r.CPURatio, want)
	}
	const want = "macro-runK / macro-bare-runK over 4 pairs (K = 2, 3, 4, 5): median 0.78 msg/s (0.70 to 0.90), median 1.35 CPU per message (1.25 to 1.50)"
	if s := r.String(); s != want {
		t.Errorf("line\n%s\nwant\n%s", s, want)
	}
}

// TestFindRepeatsMuxers: with --muxer, each row's name ends in its muxer
// (Config.perMuxer), and each muxer's repeats are summarized apart.
func TestFindRepeatsMuxers(t *testing.T) {
	var rows []Row
	for k, ratio := range map[string][2]float64{"-run2": {0.8, 0.6}, "-run3": {0.7, 0.5}, "-run4": {0.9, 0.4}} {
		rows = append(rows, pairRows(k+"[yamux]", 1000*ratio[0], 1000, 300, 300)...)
		rows = append(rows, pairRows(k+"[mplex]", 1000*ratio[1], 1000, 300, 300)...)
	}
	got := map[string]string{}
	for _, r := range FindRepeats(rows) {
		got[r.Macro] = r.String()
	}
	want := map[string]string{
		"macro-runK[yamux]": "macro-runK[yamux] / macro-bare-runK[yamux] over 3 pairs (K = 2, 3, 4): median 0.80 msg/s (0.70 to 0.90), median 1.00 CPU per message (1.00 to 1.00)",
		"macro-runK[mplex]": "macro-runK[mplex] / macro-bare-runK[mplex] over 3 pairs (K = 2, 3, 4): median 0.50 msg/s (0.40 to 0.60), median 1.00 CPU per message (1.00 to 1.00)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FindRepeats lines\n got %q\nwant %q", got, want)
	}
}

func TestBarePairs(t *testing.T) {
	var rows []Row
	for _, name := range []string{"micro", "macro", "macro-bare", "macro-rest", "macro-copy", "macro-run2[mplex]",
		"macro-bare-run2[mplex]", "macro-steady", "macro-bare-steady", "macro-rln-base", "macro-rln", "macro-run3"} {
		rows = append(rows, Row{Scenario: name})
	}
	var got []string
	for _, p := range BarePairs(rows) {
		got = append(got, p[0].Scenario+" / "+p[1].Scenario)
	}
	want := []string{"macro / macro-bare", "macro-run2[mplex] / macro-bare-run2[mplex]", "macro-steady / macro-bare-steady"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BarePairs = %q, want %q", got, want)
	}
}

func TestFindRepeatsUnexplained(t *testing.T) {
	var rows []Row
	for i, suffix := range []string{"-run2", "-run3", "-run4"} {
		// One message a row, its stages adding up to the row's CPU time.
		// macro: the hash 200 µs and the stack 250 + 10i; bare: the stack
		// 250. The unexplained rest is then 10i µs.
		stack := 250e3 + float64(i)*10e3
		m := &Budget{Msgs: 1, CPUNs: 200e3 + stack, Samples: 1000}
		m.StageNs[StageStackB], m.StageNs[StageHash] = stack, 200e3
		b := &Budget{Msgs: 1, CPUNs: 250e3, Samples: 1000}
		b.StageNs[StageStackB] = 250e3
		p := pairRows(suffix, 900, 1000, (200e3+stack)/1e3, 250)
		p[0].Budget, p[1].Budget = m, b
		rows = append(rows, p...)
	}
	got := FindRepeats(rows)
	if len(got) != 1 {
		t.Fatalf("%d summaries, want 1", len(got))
	}
	for i, u := range got[0].Unexplained {
		if want := float64(i) * 10e3; math.Abs(u-want) > 1e-6 {
			t.Errorf("pair %d: unexplained %v ns, want %v", i, u, want)
		}
	}
	const want = "macro-runK / macro-bare-runK over 3 pairs (K = 2, 3, 4): median 0.90 msg/s (0.90 to 0.90), median 1.84 CPU per message (1.80 to 1.88), median unexplained rest 10.0 µs per message (0.0 to 20.0)"
	if s := got[0].String(); s != want {
		t.Errorf("line\n%s\nwant\n%s", s, want)
	}
}

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Spread
	}{
		{[]float64{3, 1, 2}, Spread{2, 1, 3}},
		{[]float64{4, 1, 3, 2}, Spread{2.5, 1, 4}},
		{[]float64{math.NaN(), 5, 7}, Spread{6, 5, 7}},
		{[]float64{7}, Spread{7, 7, 7}},
	} {
		if got := spreadOf(tc.in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := spreadOf([]float64{math.NaN()}); !math.IsNaN(got.Median) || !math.IsNaN(got.Min) || !math.IsNaN(got.Max) {
		t.Errorf("spreadOf(NaN) = %+v, want all NaN", got)
	}
}
