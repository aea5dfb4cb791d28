package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MinRepeats is the fewest repeats of a macro scenario that FindRepeats
// summarizes: with two, a median says no more than the pairs themselves.
const MinRepeats = 3

// BarePairs returns, in the order of rows, each macro row with the
// macro-bare row of the same run and suffix: macro-run2 with
// macro-bare-run2, macro-steady with macro-bare-steady, macro[mplex] with
// macro-bare[mplex]. The other two-node scenarios (macro-copy, macro-rest,
// macro-lightpush, macro-rln) have no macro-bare row of their own.
func BarePairs(rows []Row) [][2]*Row {
	byName := make(map[string]*Row, len(rows))
	for i := range rows {
		byName[rows[i].Scenario] = &rows[i]
	}
	var pairs [][2]*Row
	for i := range rows {
		rest, ok := strings.CutPrefix(rows[i].Scenario, "macro")
		if !ok || strings.HasPrefix(rest, "-bare") {
			continue
		}
		if bare := byName["macro-bare"+rest]; bare != nil {
			pairs = append(pairs, [2]*Row{&rows[i], bare})
		}
	}
	return pairs
}

// Repeats are the interleaved repeats of one macro scenario beside its
// macro-bare row in a run: the pairs macro-runK and macro-bare-runK for
// K = 2, 3, ..., and the same with -steady before -runK or a muxer after it
// (macro-steady-run2, macro-run2[mplex]). The first pair (the rows without -runK) is left out: it pays the heap's
// first page faults, which the later rows do not (docs/benchmark.md, "The
// heap's first page faults").
//
// A single pair's ratio moves by a tenth or more between pairs of one run
// on a shared virtual machine, more than the differences the targets of
// macro against macro-bare read; the median of several interleaved pairs
// moves much less.
type Repeats struct {
	// Macro and Bare name the rows with K for the repeat's number:
	// macro-runK and macro-bare-runK, macro-steady-runK[mplex].
	Macro, Bare string
	// Ks holds the K of each pair, ascending.
	Ks []int
	// MsgRatio and CPURatio hold, for each pair in the order of Ks,
	// macro's msg/s over macro-bare's and macro's CPU per message over
	// macro-bare's. Unexplained holds Difference.Unexplained, in ns per
	// message, NaN where a row of the pair has no CPU budget.
	MsgRatio, CPURatio, Unexplained []float64
}

// FindRepeats returns the repeats in rows of each macro scenario that has
// at least MinRepeats of them, in the order of their first macro row, each
// with its pairs in the order of K whatever the rows' order.
func FindRepeats(rows []Row) []Repeats {
	type pair struct {
		k                     int
		msg, cpu, unexplained float64
	}
	var out []Repeats
	var pairs [][]pair // by out's index
	index := map[string]int{}
	for _, p := range BarePairs(rows) {
		a, b := p[0], p[1]
		macro, k, ok := repeatOf(a.Scenario)
		if !ok || !(b.MsgPerS > 0 && b.CPUNsPerMsg > 0) {
			continue
		}
		j, seen := index[macro]
		if !seen {
			j = len(out)
			index[macro] = j
			out = append(out, Repeats{Macro: macro, Bare: "macro-bare" + strings.TrimPrefix(macro, "macro")})
			pairs = append(pairs, nil)
		}
		unexplained := math.NaN()
		if a.Budget != nil && b.Budget != nil {
			unexplained = splitDifference(a.Budget, b.Budget).Unexplained
		}
		pairs[j] = append(pairs[j], pair{k, a.MsgPerS / b.MsgPerS, a.CPUNsPerMsg / b.CPUNsPerMsg, unexplained})
	}
	for j := range out {
		slices.SortStableFunc(pairs[j], func(x, y pair) int { return x.k - y.k })
		r := &out[j]
		for _, p := range pairs[j] {
			r.Ks = append(r.Ks, p.k)
			r.MsgRatio = append(r.MsgRatio, p.msg)
			r.CPURatio = append(r.CPURatio, p.cpu)
			r.Unexplained = append(r.Unexplained, p.unexplained)
		}
	}
	return slices.DeleteFunc(out, func(r Repeats) bool { return len(r.Ks) < MinRepeats })
}

// repeatOf splits the name of a macro row repeated in a run,
// macro[-steady]-runK[muxer] with K at least 2 (the muxer in brackets, as
// Config.perMuxer names its rows), into the name with K written as "K"
// (macro-runK[mplex]) and K.
func repeatOf(scenario string) (name string, k int, ok bool) {
	rest, muxer := scenario, ""
	if i := strings.LastIndex(scenario, "["); i >= 0 && strings.HasSuffix(scenario, "]") {
		rest, muxer = scenario[:i], scenario[i:]
	}
	i := strings.LastIndex(rest, "-run")
	if i < 0 {
		return "", 0, false
	}
	base := rest[:i]
	if base != "macro" && base != "macro-steady" {
		return "", 0, false // macro-bare, or another scenario: macro-rest, macro-lightpush
	}
	k, err := strconv.Atoi(rest[i+len("-run"):])
	if err != nil || k < 2 {
		return "", 0, false
	}
	return base + "-runK" + muxer, k, true
}

// Spread is the median of a set of values and its least and greatest
// value.
type Spread struct{ Median, Min, Max float64 }

// spreadOf returns the spread of xs, leaving out NaN; all NaN without a
// value.
func spreadOf(xs []float64) Spread {
	v := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(v) == 0 {
		return Spread{math.NaN(), math.NaN(), math.NaN()}
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{med, v[0], v[len(v)-1]}
}

// String writes the repeats' medians and ranges in one line, as courier
// bench prints it under its table.
func (r Repeats) String() string {
	ks := make([]string, len(r.Ks))
	for i, k := range r.Ks {
		ks[i] = strconv.Itoa(k)
	}
	m, c := spreadOf(r.MsgRatio), spreadOf(r.CPURatio)
	s := fmt.Sprintf("%s / %s over %d pairs (K = %s): median %.2f msg/s (%.2f to %.2f), median %.2f CPU per message (%.2f to %.2f)",
		r.Macro, r.Bare, len(r.Ks), strings.Join(ks, ", "), m.Median, m.Min, m.Max, c.Median, c.Min, c.Max)
	if u := spreadOf(r.Unexplained); !math.IsNaN(u.Median) {
		s += fmt.Sprintf(", median unexplained rest %.1f µs per message (%.1f to %.1f)", u.Median/1e3, u.Min/1e3, u.Max/1e3)
	}
	return s
}
