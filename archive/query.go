package archive

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/couriernet/courier/message"
)

// row is one index row a query selected.
type row struct {
	hash   message.Hash
	ts     int64
	topic  string
	seg    int64
	off    int64
	length int
}

// cmpRows orders rows forward: by timestamp, then hash.
func cmpRows(x, y row) int {
	if x.ts != y.ts {
		if x.ts < y.ts {
			return -1
		}
		return 1
	}
	return bytes.Compare(x.hash[:], y.hash[:])
}

// check validates q and returns its page size. The order of the checks
// follows nwaku's findMessages (waku_archive/archive.nim).
func (q *Query) check() (int, error) {
	switch {
	case q.Limit < 0:
		return 0, badQuery(fmt.Sprintf("negative limit %d", q.Limit))
	case len(q.Hashes) > MaxQueryHashes:
		return 0, badQuery(fmt.Sprintf("%d hashes, over %d", len(q.Hashes), MaxQueryHashes))
	case q.Cursor != nil && *q.Cursor == (message.Hash{}):
		return 0, ErrZeroCursor
	case q.Cursor != nil && len(q.ContentTopics) > MaxContentTopics:
		return 0, ErrTooManyContentTopics
	}
	switch {
	case q.Limit == 0:
		return DefaultPageSize, nil
	case q.Limit > MaxPageSize:
		return MaxPageSize, nil
	}
	return q.Limit, nil
}

// Query implements Archive. With IncludeData it reads each message's record
// from its segment into a fresh buffer and checks its length and CRC-32C;
// it does not decode it.
func (a *Embedded) Query(ctx context.Context, q Query) (*Result, error) {
	a.st.queries.Add(1)
	limit, err := q.check()
	if err != nil {
		return nil, err
	}
	a.readMu.RLock()
	defer a.readMu.RUnlock()
	if a.readClosed {
		return nil, ErrClosed
	}
	if f := a.cfg.OnQuery; f != nil {
		began := time.Now()
		defer func() { f(time.Since(began)) }()
	}
	var cur *row
	if q.Cursor != nil {
		cur = &row{hash: *q.Cursor}
		err := a.rdb.QueryRowContext(ctx, "SELECT ts FROM messages WHERE hash = ?", cur.hash[:]).Scan(&cur.ts)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrUnknownCursor
		}
		if err != nil {
			return nil, fmt.Errorf("archive: index: %w", err)
		}
	}
	topics := slices.Clone(q.ContentTopics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	var rows []row
	switch {
	case len(q.Hashes) > 0:
		rows, err = a.byHashes(ctx, &q, topics, cur, limit)
	case q.PubsubTopic != "" && len(topics) > 1 && len(topics) <= MaxContentTopics:
		// One ordered index range per content topic, merged: each range
		// reads at most limit+1 rows however large the archive is.
		for i := range topics {
			var r []row
			if r, err = a.byFilter(ctx, &q, topics[i:i+1], cur, limit+1); err != nil {
				break
			}
			rows = append(rows, r...)
		}
		if err == nil {
			rows = ordered(rows, q.Forward, limit+1)
		}
	default:
		rows, err = a.byFilter(ctx, &q, topics, cur, limit+1)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if len(rows) > limit {
		rows = rows[:limit]
		res.Cursor = new(message.Hash)
		*res.Cursor = rows[len(rows)-1].hash // the last included in query direction
	}
	if !q.Forward {
		slices.Reverse(rows)
	}
	res.Messages = make([]Stored, len(rows))
	for i, r := range rows {
		res.Messages[i] = Stored{Hash: r.hash, PubsubTopic: r.topic, Timestamp: r.ts}
	}
	if q.IncludeData {
		if err := a.readData(ctx, rows, res.Messages); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ordered sorts rows in query direction and keeps the first n.
func ordered(rows []row, forward bool, n int) []row {
	if forward {
		slices.SortFunc(rows, cmpRows)
	} else {
		slices.SortFunc(rows, func(x, y row) int { return cmpRows(y, x) })
	}
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows
}

const selectRow = "SELECT hash, ts, pubsub_topic, seg, off, len FROM messages"

// filterConds returns the SQL conditions and arguments of q's pubsub topic,
// content topics and time range (both ends inclusive).
func filterConds(q *Query, contents []string) (conds []string, args []any) {
	if q.PubsubTopic != "" {
		conds, args = append(conds, "pubsub_topic = ?"), append(args, q.PubsubTopic)
	}
	switch len(contents) {
	case 0:
	case 1:
		conds, args = append(conds, "content_topic = ?"), append(args, contents[0])
	default:
		conds = append(conds, "content_topic IN (?"+strings.Repeat(",?", len(contents)-1)+")")
		for _, c := range contents {
			args = append(args, c)
		}
	}
	if q.StartTime != nil {
		conds, args = append(conds, "ts >= ?"), append(args, *q.StartTime)
	}
	if q.EndTime != nil {
		conds, args = append(conds, "ts <= ?"), append(args, *q.EndTime)
	}
	return conds, args
}

// byHashes selects the stored messages among q.Hashes that pass q's other
// filters and the cursor, up to limit+1 in query direction.
func (a *Embedded) byHashes(ctx context.Context, q *Query, contents []string, cur *row, limit int) ([]row, error) {
	hashes := slices.Clone(q.Hashes)
	slices.SortFunc(hashes, func(x, y message.Hash) int { return bytes.Compare(x[:], y[:]) })
	hashes = slices.Compact(hashes)
	conds, args := filterConds(q, contents)
	conds = append(conds, "hash IN (?"+strings.Repeat(",?", len(hashes)-1)+")")
	for i := range hashes {
		args = append(args, hashes[i][:])
	}
	rows, err := a.scan(ctx, selectRow+" INDEXED BY messages_hash WHERE "+strings.Join(conds, " AND "), args)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		rows = slices.DeleteFunc(rows, func(r row) bool {
			c := cmpRows(r, *cur)
			return c == 0 || (c < 0) == q.Forward
		})
	}
	return ordered(rows, q.Forward, limit+1), nil
}

// byFilter selects up to n rows in query direction from one index range:
// pubsub topic, content topics (any of them), time bounds and cursor.
func (a *Embedded) byFilter(ctx context.Context, q *Query, contents []string, cur *row, n int) ([]row, error) {
	var sb strings.Builder
	sb.WriteString(selectRow)
	switch {
	case q.PubsubTopic != "" && len(contents) == 1:
		sb.WriteString(" INDEXED BY messages_content")
	case q.PubsubTopic != "":
		sb.WriteString(" INDEXED BY messages_pubsub")
	default:
		sb.WriteString(" INDEXED BY messages_time")
	}
	conds, args := filterConds(q, contents)
	if cur != nil {
		op := "<"
		if q.Forward {
			op = ">"
		}
		conds, args = append(conds, "(ts, hash) "+op+" (?, ?)"), append(args, cur.ts, cur.hash[:])
	}
	if len(conds) > 0 {
		sb.WriteString(" WHERE ")
		sb.WriteString(strings.Join(conds, " AND "))
	}
	if q.Forward {
		sb.WriteString(" ORDER BY ts ASC, hash ASC LIMIT ?")
	} else {
		sb.WriteString(" ORDER BY ts DESC, hash DESC LIMIT ?")
	}
	args = append(args, n)
	return a.scan(ctx, sb.String(), args)
}

func (a *Embedded) scan(ctx context.Context, stmt string, args []any) ([]row, error) {
	rs, err := a.rdb.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("archive: index: %w", err)
	}
	defer rs.Close()
	var out []row
	// RawBytes and one string per distinct pubsub topic: a page of rows
	// allocates no copy of either.
	var h, topic sql.RawBytes
	topics := map[string]string{}
	for rs.Next() {
		var r row
		if err := rs.Scan(&h, &r.ts, &topic, &r.seg, &r.off, &r.length); err != nil {
			return nil, fmt.Errorf("archive: index: %w", err)
		}
		if len(h) != len(r.hash) {
			return nil, fmt.Errorf("%w: index row with a %d-byte hash", ErrCorrupt, len(h))
		}
		copy(r.hash[:], h)
		var ok bool
		if r.topic, ok = topics[string(topic)]; !ok {
			r.topic = string(topic)
			topics[r.topic] = r.topic
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("archive: index: %w", err)
	}
	return out, nil
}

// readData fills the Wire of out from the segments.
func (a *Embedded) readData(ctx context.Context, rows []row, out []Stored) error {
	files := segFiles{dir: a.dir}
	defer files.close()
	for i, r := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := files.get(r.seg)
		if err != nil {
			return err
		}
		if out[i].Wire, err = readRecord(f, r.off, r.length); err != nil {
			return err
		}
	}
	return nil
}
