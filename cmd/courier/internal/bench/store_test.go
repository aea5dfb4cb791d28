package bench

import (
	"context"
	"testing"
)

// TestStoreScenario runs the store scenario small: an embedded archive of
// 500 messages, 40 queries of each kind, each answered with a full page
// (runStore checks the counts), and the retention pass, which deletes the
// older half: the messages more than 24 of the 48 hours old, 250 of them,
// or 251 once the one at the boundary has aged past it while the test ran.
func TestStoreScenario(t *testing.T) {
	rows, err := Run(context.Background(), Config{Scenarios: []string{"store"}, N: 10, Warmup: -1,
		StoreMessages: 500, StoreQueries: 40, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"store-insert[embedded]", "store-query[embedded]", "store-query-topic[embedded]",
		"store-query-hash[embedded]", "store-query-cursor[embedded]", "store-retention[embedded]"}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Scenario != want[i] {
			t.Fatalf("row %d is %s, want %s", i, r.Scenario, want[i])
		}
	}
	if ins := rows[0]; ins.Msgs != 500 || !(ins.MsgPerS > 0) || ins.PayloadProfile != "1kB" || ins.WireBytesPerMsg != 1045 {
		t.Fatalf("insert %+v", ins)
	}
	for _, q := range rows[1:5] {
		if q.Msgs != 40 || !(q.P50Ns > 0) || q.P99Ns < q.P50Ns {
			t.Fatalf("query %+v", q)
		}
	}
	if r := rows[5]; r.Msgs < 250 || r.Msgs > 251 || !(r.WallMs > 0) {
		t.Fatalf("retention %+v", r)
	}
}
