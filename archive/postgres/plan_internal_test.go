package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/archive/internal/plan"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
)

// planNode is the part of a node of EXPLAIN (ANALYZE, FORMAT JSON) the
// tests read.
type planNode struct {
	NodeType        string     `json:"Node Type"`
	Relation        string     `json:"Relation Name"`
	SubplansRemoved int        `json:"Subplans Removed"`
	ActualLoops     int        `json:"Actual Loops"`
	HeapFetches     *int       `json:"Heap Fetches"`
	Plans           []planNode `json:"Plans"`
}

// walk calls f on n and every node under it.
func (n *planNode) walk(f func(*planNode)) {
	f(n)
	for i := range n.Plans {
		n.Plans[i].walk(f)
	}
}

// sqlLiteral writes v, an argument the archive's statements take, as an
// SQL literal.
func sqlLiteral(t *testing.T, v any) string {
	switch v := v.(type) {
	case []byte:
		return `'\x` + hex.EncodeToString(v) + `'::bytea`
	case [][]byte:
		parts := make([]string, len(v))
		for i := range v {
			parts[i] = `'\x` + hex.EncodeToString(v[i]) + `'::bytea`
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::bytea[]"
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	}
	t.Fatalf("argument of type %T", v)
	return ""
}

// explainPrepared runs stmt with args as the archive runs it, a prepared
// statement on one of its connections (so with their generic plans), under
// EXPLAIN ANALYZE, and returns the plan's root.
func explainPrepared(t *testing.T, p *Archive, stmt string, args []any) planNode {
	t.Helper()
	ctx := context.Background()
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "PREPARE planned AS "+stmt); err != nil {
		t.Fatalf("prepare %s: %v", stmt, err)
	}
	defer conn.Exec(ctx, "DEALLOCATE planned")
	lits := make([]string, len(args))
	for i := range args {
		lits[i] = sqlLiteral(t, args[i])
	}
	var out string
	if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE planned("+strings.Join(lits, ",")+")").Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	return plans[0].Plan
}

// hourlyArchive opens an archive holding perHour messages of the content
// topic /a/1/b/c in each of the hours hours, which end an hour before now,
// so that each hour is a partition. It returns the messages, oldest first.
func hourlyArchive(t *testing.T, hours, perHour int) (*Archive, []*message.Envelope) {
	t.Helper()
	p, err := Open(context.Background(), pgtest.DB(t), archive.Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h := int64(time.Hour)
	first := time.Now().UnixNano()/h*h - int64(hours)*h
	var envs []*message.Envelope
	for k := range hours {
		for i := range perHour {
			env := archivetest.NewEnv(t, "p", "/a/1/b/c", first+int64(k)*h+int64(i)*int64(time.Minute), []byte{byte(k), byte(i)})
			archivetest.AppendWait(t, p, env)
			envs = append(envs, env)
		}
	}
	if got := len(p.parts); got != hours {
		t.Fatalf("%d partitions, want %d", got, hours)
	}
	return p, envs
}

// TestCursorPagePrunesPartitions: a page after (forward) or before
// (backward) a cursor opens no partition on the far side of the cursor's:
// PostgreSQL prunes them as the statement starts, in its generic plan.
// Without a bound on ts alone it prunes none (the row comparison is no
// partition bound), and a backward page deep in the archive starts by
// reading every newer partition.
func TestCursorPagePrunesPartitions(t *testing.T) {
	const hours, perHour = 6, 8
	p, envs := hourlyArchive(t, hours, perHour)
	at := envs[2*perHour+4] // in the third hour
	for _, tc := range []struct {
		forward bool
		removed int
	}{
		{false, hours - 3}, // the three newer hours
		{true, 2},          // the two older ones
	} {
		t.Run(fmt.Sprintf("forward=%v", tc.forward), func(t *testing.T) {
			sel := plan.Selection{
				Query:    archive.Query{PubsubTopic: "p", ContentTopics: []string{"/a/1/b/c"}, Forward: tc.forward, IncludeData: true},
				Contents: []string{"/a/1/b/c"},
				Cursor:   &plan.Cursor{TS: at.Message().Timestamp, Hash: at.Hash()},
				Limit:    6,
			}
			stmt, args := filterStatement(&sel)
			root := explainPrepared(t, p, stmt, args)
			removed, appends := 0, 0
			root.walk(func(n *planNode) {
				if n.NodeType == "Append" || n.NodeType == "Merge Append" {
					appends++
					removed += n.SubplansRemoved
				}
			})
			if appends != 1 || removed != tc.removed {
				t.Errorf("%d appends, %d partitions pruned, want 1 and %d", appends, removed, tc.removed)
			}
		})
	}
}

// TestHashLookupOnePartitionEach: a hash lookup is one statement whose
// plan looks each stored hash up once, in the one partition holding it,
// after reading its timestamp from courier_hashes.
func TestHashLookupOnePartitionEach(t *testing.T) {
	const hours, perHour = 6, 4
	p, envs := hourlyArchive(t, hours, perHour)
	var hashes []message.Hash
	for k := range hours {
		hashes = append(hashes, envs[k*perHour+k%perHour].Hash())
	}
	hashes = append(hashes, message.Hash{1}) // not stored
	sel := plan.Selection{
		Query: archive.Query{PubsubTopic: "p", Hashes: hashes, IncludeData: true},
		Limit: 21,
	}
	stmt, args := hashStatement(&sel)
	root := explainPrepared(t, p, stmt, args)
	lookups, partitions, hashReads := 0, 0, 0
	root.walk(func(n *planNode) {
		switch {
		case n.Relation == "courier_hashes":
			hashReads += n.ActualLoops
		case strings.HasPrefix(n.Relation, "courier_messages_") && n.ActualLoops > 0:
			partitions++
			lookups += n.ActualLoops
		}
	})
	if hashReads != 1 || lookups != hours || partitions != hours {
		t.Errorf("courier_hashes read %d times, %d lookups in %d partitions; want 1, %d, %d", hashReads, lookups, partitions, hours, hours)
	}
	res, err := p.Query(context.Background(), sel.Query)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != hours {
		t.Fatalf("%d messages, want %d", len(res.Messages), hours)
	}
	for i, m := range res.Messages {
		if m.Hash != hashes[i] {
			t.Errorf("message %d: %x, want %x", i, m.Hash, hashes[i])
		}
	}
}

// TestHashTimesFromIndexAlone: a hash lookup and a cursor read each hash's
// timestamp from courier_hashes' key (schema version 3), by an index-only
// scan. (Its heap fetches, 0 once VACUUM has marked the pages all-visible,
// are not asserted: a snapshot that another session of the database holds,
// such as an autovacuum worker's, keeps VACUUM from marking them.) Beside
// the archive's 12 messages courier_hashes gets 200,000 hashes of none (an
// archive's size, for the planner's costs: a table of a few pages it reads
// whole).
func TestHashTimesFromIndexAlone(t *testing.T) {
	const hours, perHour = 3, 4
	p, envs := hourlyArchive(t, hours, perHour)
	for _, stmt := range []string{
		"INSERT INTO courier_hashes (hash, ts) SELECT sha256(int8send(i)), i FROM generate_series(1, 200000) i",
		"VACUUM (ANALYZE) courier_hashes",
	} {
		if _, err := p.pool.Exec(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	sel := plan.Selection{Query: archive.Query{Hashes: []message.Hash{envs[0].Hash(), envs[5].Hash(), envs[11].Hash()}}, Limit: 20}
	lookup, lookupArgs := hashStatement(&sel)
	cursor := envs[5].Hash()
	for _, c := range []struct {
		name, stmt string
		args       []any
	}{
		{"hash lookup", lookup, lookupArgs},
		{"cursor", cursorTime, []any{cursor[:]}},
	} {
		root := explainPrepared(t, p, c.stmt, c.args)
		var scans []string
		root.walk(func(n *planNode) {
			if n.Relation != "courier_hashes" {
				return
			}
			fetches := -1
			if n.HeapFetches != nil {
				fetches = *n.HeapFetches
			}
			scans = append(scans, fmt.Sprintf("%s, %d heap fetches", n.NodeType, fetches))
		})
		if len(scans) != 1 || !strings.HasPrefix(scans[0], "Index Only Scan,") {
			t.Errorf("%s: courier_hashes read by %q, want one index-only scan", c.name, scans)
		}
	}
}
