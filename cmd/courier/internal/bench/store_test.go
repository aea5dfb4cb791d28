package bench

import (
	"context"
	"testing"
)

// TestStoreScenario runs the store scenario small: an embedded archive of
// 500 messages, 40 queries, each answered with a full page (runStore
// checks the count).
func TestStoreScenario(t *testing.T) {
	rows, err := Run(context.Background(), Config{Scenarios: []string{"store"}, N: 10, Warmup: -1,
		StoreMessages: 500, StoreQueries: 40, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Scenario != "store-insert[embedded]" || rows[1].Scenario != "store-query[embedded]" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Msgs != 500 || !(rows[0].MsgPerS > 0) || rows[1].Msgs != 40 || !(rows[1].P50Ns > 0) || rows[1].P99Ns < rows[1].P50Ns {
		t.Fatalf("insert %+v\nquery %+v", rows[0], rows[1])
	}
}
