package bench

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestPlateau drives the steady-state warm-up's decision with made-up GC
// cycles: it never ends before the gossipsub history and one heartbeat,
// needs two cycles after the history within 5 %, and ends at the cap.
func TestPlateau(t *testing.T) {
	type gc struct {
		at    time.Duration // since the start
		cycle uint64
		live  uint64 // MB
	}
	for _, tc := range []struct {
		name   string
		gcs    []gc
		endsAt time.Duration // 0: not ended at the last sample
	}{
		{"flat from the start, ends after history and a heartbeat", []gc{{1 * time.Second, 1, 100}, {6 * time.Second, 2, 100}, {6500 * time.Millisecond, 3, 100}, {7 * time.Second, 3, 100}}, 7 * time.Second},
		{"still growing", []gc{{6 * time.Second, 1, 100}, {8 * time.Second, 2, 120}, {9 * time.Second, 3, 140}, {10 * time.Second, 4, 160}}, 0},
		{"growth stops", []gc{{6 * time.Second, 1, 100}, {8 * time.Second, 2, 140}, {10 * time.Second, 3, 145}}, 10 * time.Second},
		{"cycles before the history do not count", []gc{{2 * time.Second, 1, 100}, {4 * time.Second, 2, 100}, {6 * time.Second, 3, 300}, {8 * time.Second, 3, 300}}, 0},
		{"no GC at all: the cap", []gc{{10 * time.Second, 0, 50}, {maxSteadyWarmup, 0, 50}}, maxSteadyWarmup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1000, 0)
			p := &plateau{start: start, history: 6 * time.Second}
			var ended time.Duration
			for _, g := range tc.gcs {
				m := memSample{gcCycles: g.cycle, live: g.live * 1e6}
				if p.reached(start.Add(g.at), func() memSample { return m }) && ended == 0 {
					ended = g.at
				}
			}
			if ended != tc.endsAt {
				t.Fatalf("ended at %v, want %v (lives %v)", ended, tc.endsAt, p.lives)
			}
			if p.capped != (tc.endsAt == maxSteadyWarmup) {
				t.Fatalf("capped %v", p.capped)
			}
		})
	}
}

// TestSteadyScenarios checks which scenarios get a steady-state row.
func TestSteadyScenarios(t *testing.T) {
	c := Config{Scenarios: []string{"micro", "macro", "macro-bare-run2", "libnet", "macro-rest-steady"}, Steady: true}
	c.setDefaults()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{"micro", "macro", "macro-steady", "macro-bare-run2", "macro-bare-steady-run2", "libnet", "macro-rest-steady"}
	if got := c.withSteady(); !slices.Equal(got, want) {
		t.Fatalf("scenarios %q, want %q", got, want)
	}
	for _, bad := range []string{"micro-steady", "store-steady", "macro-steadyish"} {
		c := Config{Scenarios: []string{bad}}
		c.setDefaults()
		if err := c.validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("scenario %q: %v, want ErrConfig", bad, err)
		}
	}
}

// TestMacroSteady runs macro with a steady-state warm-up: it warms up for
// at least the gossipsub history, then measures the same exact work per
// message as the seed method.
func TestMacroSteady(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes for several seconds")
	}
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro-steady"}, N: 100, Profile: "10kB"})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Scenario != "macro-steady" || r.RecvDecodesPerMsg != 1 || r.RecvHashesPerMsg != 1 || r.EncodesPerMsg != 1 || r.MsgIDHashesPerMsg != 2 {
		t.Fatalf("row %s: recv decodes %v hashes %v, encodes %v, msg-id hashes %v; want macro-steady 1 1 1 2",
			r.Scenario, r.RecvDecodesPerMsg, r.RecvHashesPerMsg, r.EncodesPerMsg, r.MsgIDHashesPerMsg)
	}
	var warm float64
	for _, s := range r.Trace.Heap {
		if !s.Measured {
			warm = s.Seconds
		}
	}
	if warm < 6 {
		t.Fatalf("the last warm-up heap sample is at %.1f s, want the warm-up to cover the 6 s history", warm)
	}
}
