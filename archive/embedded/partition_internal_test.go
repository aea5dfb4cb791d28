package embedded

import (
	"context"
	"strings"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// TestHashLookupsUsePartitions: every statement that looks a hash up
// probes the hash index by (time partition, hkey), which SQLite does only
// when the statement's expression is the index's (partExpr), and the
// partitions come from the time index, not a scan of the table.
func TestHashLookupsUsePartitions(t *testing.T) {
	a, err := Open(t.TempDir(), archive.Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	from, to := int64(5), int64(1<<50)
	q := archive.Query{Hashes: []message.Hash{{1}, {2}}, PubsubTopic: "/waku/2/rs/1/0", StartTime: &from, EndTime: &to}
	hashQuery, hashArgs := hashSelect(&q, []string{"/a/1/b/proto", "/a/1/c/proto"})
	h := make([]byte, 32)
	row := []any{int64(1), h, int64(7), int64(1), int64(2), int64(1), int64(8), 10}
	for _, tc := range []struct {
		name  string
		query string
		args  []any
	}{
		{"insertRow", insertRow, row},
		{"insertRowAnyTime", insertRowAnyTime, row},
		{"cursorRow", cursorRow, []any{int64(1), h}},
		{"hashSelect", hashQuery, hashArgs},
	} {
		rows, err := a.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(plan, "\n")
		if !strings.Contains(all, "USING INDEX messages_part_hkey (<expr>=? AND hkey=?)") {
			t.Errorf("%s does not probe the hash index by partition and hkey:\n%s", tc.name, all)
		}
		if strings.Contains(all, "SCAN m") || strings.Contains(all, "SCAN messages") {
			t.Errorf("%s scans the table:\n%s", tc.name, all)
		}
	}
}
