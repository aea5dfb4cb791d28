package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/internal/pgtest"
)

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile(SeedProfile)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorkload(p, 42, 100, 1000, "/c/1/t/proto")
	if got := w.MeasuredPayloadBytes(); got != 65_000_000 {
		t.Fatalf("1000 measured messages carry %d payload bytes, want 65,000,000", got)
	}
	w2 := NewWorkload(p, 42, 100, 1000, "/c/1/t/proto")
	for i := range w.Total() {
		if w.Size(i) != w2.Size(i) {
			t.Fatalf("size %d differs between two workloads of one seed", i)
		}
	}
	for _, bad := range []string{"", "10kB@50", "10/20kB@50/40", "200kB", "10/xkB@50/50", "10/20kB"} {
		if _, err := ParseProfile(bad); err == nil {
			t.Errorf("ParseProfile(%q) accepted", bad)
		}
	}
}

func TestWireIndex(t *testing.T) {
	p, _ := ParseProfile(SeedProfile)
	w := NewWorkload(p, 1, 0, 8, "/c/1/t/proto")
	for i := range 8 {
		wire := w.Wire(i, 5)
		if got := wireIndex(wire); got != i {
			t.Fatalf("wireIndex = %d, want %d", got, i)
		}
	}
}

// runCounts runs one scenario and returns its row.
func runCounts(t *testing.T, scenario string, n int) Row {
	t.Helper()
	rows, err := Run(context.Background(), Config{Scenarios: []string{scenario}, N: n, Warmup: 10, Profile: "10/50/150kB@25/50/25", Handlers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return rows[0]
}

// TestMicroCounts asserts the receive path's exact work per message: one
// decode and one deterministic hash, nothing encoded, twice over.
func TestMicroCounts(t *testing.T) {
	for run := range 2 {
		r := runCounts(t, "micro", 200)
		if r.DecodesPerMsg != 1 || r.HashesPerMsg != 1 || r.EncodesPerMsg != 0 ||
			r.RecvDecodesPerMsg != 1 || r.RecvHashesPerMsg != 1 {
			t.Fatalf("run %d: decodes %v hashes %v encodes %v recv %v/%v, want 1/1/0 and 1/1",
				run, r.DecodesPerMsg, r.HashesPerMsg, r.EncodesPerMsg, r.RecvDecodesPerMsg, r.RecvHashesPerMsg)
		}
		// 50 of each 200 messages are 10 kB, 100 are 50 kB, 50 are 150 kB; each
		// hash covers pubsub topic, payload, content topic and 8 timestamp bytes.
		wantHashed := float64(50*10_000+100*50_000+50*150_000+200*(len("/waku/2/rs/0/0")+len("/courier/1/bench/proto")+8)) / 1e6
		if r.HashedMB != wantHashed {
			t.Fatalf("hashed %v MB, want %v", r.HashedMB, wantHashed)
		}
	}
}

// TestMacroCounts asserts the two-node path: the receiver decodes and hashes
// each message once; the sender encodes once and hashes nothing nobody asked
// for; gossipsub hashes the wire bytes once per node for its message id;
// the same whether A writes the payload into the encoding or copies it.
func TestMacroCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes")
	}
	for _, scenario := range []string{"macro", "macro-copy"} { // PublishWith and Publish
		r := runCounts(t, scenario, 100)
		want := map[string][2]float64{
			"recv_decodes": {r.RecvDecodesPerMsg, 1}, "recv_hashes": {r.RecvHashesPerMsg, 1},
			"decodes": {r.DecodesPerMsg, 1}, "hashes": {r.HashesPerMsg, 1},
			"encodes": {r.EncodesPerMsg, 1}, "msgid_hashes": {r.MsgIDHashesPerMsg, 2},
		}
		for name, v := range want {
			if v[0] != v[1] {
				t.Errorf("%s: %s per message = %v, want %v", scenario, name, v[0], v[1])
			}
		}
	}
}

// TestMacroMplex runs macro with both nodes on mplex alone: every message
// arrives with the same per-message work as over yamux.
func TestMacroMplex(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes")
	}
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro"}, N: 100, Warmup: 10, Muxers: []string{"mplex"}, Profile: "10/50/150kB@25/50/25"})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Scenario != "macro[mplex]" || r.RecvDecodesPerMsg != 1 || r.RecvHashesPerMsg != 1 || r.MsgIDHashesPerMsg != 2 {
		t.Fatalf("row %s: recv decodes %v hashes %v msg-id hashes %v, want macro[mplex] 1 1 2", r.Scenario, r.RecvDecodesPerMsg, r.RecvHashesPerMsg, r.MsgIDHashesPerMsg)
	}
	if _, err := Run(context.Background(), Config{Scenarios: []string{"macro"}, Muxers: []string{"quic"}}); err == nil {
		t.Fatal("--muxer quic accepted")
	}
}

// TestMacroPostgres runs macro with the receiver archiving in Postgres:
// every message is archived there, in a schema of the run's that is gone
// afterwards.
func TestMacroPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes and a PostgreSQL server")
	}
	db := pgtest.DB(t)
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro"}, N: 50, Warmup: 5, Profile: "10kB", StoreDBURL: db})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Scenario != "macro[postgres]" || rows[0].Msgs != 50 || !(rows[0].MsgPerS > 0) {
		t.Fatalf("rows %+v", rows)
	}
	c, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'courier_bench_%'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d bench schemas left, %v", n, err)
	}
}

// TestMacroInflightAndAck runs macro with a window of 4 at a pace: the
// row says so, and every message's archive acknowledgement is part of its
// latency, so each quantile of the one is at most the same quantile of the
// other.
func TestMacroInflightAndAck(t *testing.T) {
	if testing.Short() {
		t.Skip("two libp2p nodes")
	}
	rows, err := Run(context.Background(), Config{Scenarios: []string{"macro"}, N: 100, Warmup: 10, Profile: "10kB", Inflight: 4, Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Inflight != 4 || r.RatePerS != 500 {
		t.Fatalf("inflight %v rate %v, want 4 and 500", r.Inflight, r.RatePerS)
	}
	if !(r.AckP50Ns > 0 && r.AckP50Ns <= r.AckP99Ns && r.AckP50Ns <= r.P50Ns && r.AckP99Ns <= r.P99Ns) {
		t.Fatalf("ack p50 %v p99 %v, latency p50 %v p99 %v", r.AckP50Ns, r.AckP99Ns, r.P50Ns, r.P99Ns)
	}
	cells := r.cells()
	if len(cells) != len(columns) {
		t.Fatalf("%d cells for %d columns", len(cells), len(columns))
	}
	for i, name := range columns {
		if name == "inflight" && cells[i] != "4" || name == "rate_msg_per_s" && cells[i] != "500.0" || name == "minor_faults_per_msg" && cells[i] == "" {
			t.Errorf("column %s = %q", name, cells[i])
		}
	}
	for _, bad := range []int{-1, maxInflight + 1} {
		if _, err := Run(context.Background(), Config{Scenarios: []string{"macro"}, Inflight: bad}); !errors.Is(err, ErrConfig) {
			t.Errorf("inflight %d: %v, want ErrConfig", bad, err)
		}
	}
}
