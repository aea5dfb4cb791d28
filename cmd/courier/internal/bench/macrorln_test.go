package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/rln"
)

// TestMacroRLN runs macro-rln small: B follows rootChain's membership
// contract, checks one proof per message and counts exactly the work of
// macro per message in both rows.
func TestMacroRLN(t *testing.T) {
	if testing.Short() {
		t.Skip("proves its messages first")
	}
	t.Setenv(rln.CircuitDirEnv, testcircuit.Dir(t))
	var out bytes.Buffer
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro-rln"}, N: 6, Warmup: 2, Profile: "10/50/150kB@25/50/25", Handlers: 2, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rows) != 2 || rows[0].Scenario != "macro-rln-base" || rows[1].Scenario != "macro-rln" {
		t.Fatalf("rows %+v, want macro-rln-base and macro-rln", rows)
	}
	for _, r := range rows {
		if r.Msgs != 6 || r.DecodesPerMsg != 1 || r.HashesPerMsg != 1 {
			t.Errorf("%s: %d messages, %.3f decodes and %.3f hashes per message, want 6, 1 and 1", r.Scenario, r.Msgs, r.DecodesPerMsg, r.HashesPerMsg)
		}
	}
	if !strings.Contains(out.String(), "1.000 proof verifications per message on B") {
		t.Fatalf("B did not verify one proof per message:\n%s", out.String())
	}
}
