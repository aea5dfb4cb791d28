package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/plan"
)

// row is one row a query selected; its Ext is the wire bytes, nil unless
// IncludeData.
type row = plan.Row[[]byte]

// Query implements archive.Archive with the same rules and order as the
// embedded archive. With IncludeData each message's stored bytes come in
// the same row, into a fresh buffer; they are not decoded.
func (p *Archive) Query(ctx context.Context, q archive.Query) (*archive.Result, error) {
	p.st.Queries.Add(1)
	limit, err := plan.Check(&q)
	if err != nil {
		return nil, err
	}
	p.readMu.RLock()
	defer p.readMu.RUnlock()
	if p.readClosed {
		return nil, archive.ErrClosed
	}
	if f := p.cfg.OnQuery; f != nil {
		began := time.Now()
		defer func() { f(time.Since(began)) }()
	}
	return plan.Run[[]byte](ctx, q, limit, (*source)(p))
}

// source answers the planner's selections from the database, the wire
// bytes in the same rows. Its caller holds readMu.
type source Archive

// cursorTime reads the timestamp of the stored message whose hash is $1
// (bytea, 32 bytes) from courier_hashes' key alone.
const cursorTime = "SELECT ts FROM courier_hashes WHERE hash = $1"

// CursorTime implements plan.Source.
func (s *source) CursorTime(ctx context.Context, c *plan.Cursor) error {
	err := s.pool.QueryRow(ctx, cursorTime, c.Hash[:]).Scan(&c.TS)
	if errors.Is(err, pgx.ErrNoRows) {
		return archive.ErrUnknownCursor
	}
	if err != nil {
		return pgErr(err)
	}
	return nil
}

// Select implements plan.Source.
func (s *source) Select(ctx context.Context, sel plan.Selection) ([]row, error) {
	if len(sel.Query.Hashes) > 0 {
		return s.byHashes(ctx, &sel)
	}
	return s.byFilter(ctx, &sel)
}

// Fill implements plan.Source: the bytes came with the rows.
func (s *source) Fill(_ context.Context, rows []row, out []archive.Stored) error {
	for i := range rows {
		out[i].Wire = rows[i].Ext
	}
	return nil
}

func pgSelect(q *archive.Query) string {
	if q.IncludeData {
		return "SELECT hash, ts, pubsub_topic, wire FROM courier_messages"
	}
	return "SELECT hash, ts, pubsub_topic, NULL::bytea FROM courier_messages"
}

// pgConds holds the conditions and arguments of a statement being built.
type pgConds struct {
	conds []string
	args  []any
}

// add appends cond with its "$" replaced by the next argument's number.
func (c *pgConds) add(cond string, v any) {
	c.args = append(c.args, v)
	c.conds = append(c.conds, strings.ReplaceAll(cond, "$", "$"+strconv.Itoa(len(c.args))))
}

// filter adds q's pubsub topic, content topics and time range (both ends
// inclusive, as nwaku v0.38.1's postgres_driver.nim: timestamp <= endTime).
func (c *pgConds) filter(q *archive.Query, contents []string) {
	if q.PubsubTopic != "" {
		c.add("pubsub_topic = $", []byte(q.PubsubTopic))
	}
	switch len(contents) {
	case 0:
	case 1:
		c.add("content_topic = $", []byte(contents[0]))
	default:
		bs := make([][]byte, len(contents))
		for i := range contents {
			bs[i] = []byte(contents[i])
		}
		c.add("content_topic = ANY($::bytea[])", bs)
	}
	if q.StartTime != nil {
		c.add("ts >= $", *q.StartTime)
	}
	if q.EndTime != nil {
		c.add("ts <= $", *q.EndTime)
	}
}

func (c *pgConds) where() string {
	if len(c.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(c.conds, " AND ")
}

// byHashes selects the stored messages among the hashes that pass the
// other filters and the cursor, up to sel.Limit in query direction, in one
// statement: courier_hashes gives each hash's timestamp, and each of those
// (timestamp, hash) pairs is then one index lookup in the one partition of
// courier_messages that holds it (the statement's generic plan keeps a
// lookup for every partition and prunes all but one at each pair, as it
// runs). Two statements, the timestamps first and then only their
// partitions, measured worse: each partition left was searched for every
// timestamp, and a generic plan of a partition whose statistics were
// stale read its whole pubsub topic index (2 ms a partition; a million
// messages: 21 ms a lookup against 0.5 ms). The page is cut in SQL, so a
// lookup of MaxQueryHashes hashes sends sel.Limit bodies, not a thousand.
func (s *source) byHashes(ctx context.Context, sel *plan.Selection) ([]row, error) {
	stmt, args := hashStatement(sel)
	return s.scan(ctx, stmt, args)
}

// hashStatement returns byHashes' statement and its arguments.
func hashStatement(sel *plan.Selection) (string, []any) {
	q := &sel.Query
	hashes := make([][]byte, len(q.Hashes))
	for i := range q.Hashes {
		hashes[i] = q.Hashes[i][:]
	}
	c := pgConds{args: []any{hashes}}
	c.filter(q, sel.Contents)
	c.cursor(q.Forward, sel.Cursor)
	return pgSelect(q) + hashLookup + c.where() + c.orderLimit(q.Forward, sel.Limit), c.args
}

// hashLookup joins courier_messages to the rows of courier_hashes whose
// hash is among $1 (bytea[]). Their columns are renamed, so that ts and hash
// in the conditions that follow are courier_messages' own.
const hashLookup = " JOIN (SELECT hash AS lookup_hash, ts AS lookup_ts FROM courier_hashes WHERE hash = ANY($1::bytea[])) l" +
	" ON ts = lookup_ts AND hash = lookup_hash"

// byFilter selects up to sel.Limit rows in query direction from one index
// range: pubsub topic, content topics (any of them), time bounds and
// cursor.
func (s *source) byFilter(ctx context.Context, sel *plan.Selection) ([]row, error) {
	stmt, args := filterStatement(sel)
	return s.scan(ctx, stmt, args)
}

// filterStatement returns byFilter's statement and its arguments.
func filterStatement(sel *plan.Selection) (string, []any) {
	q := &sel.Query
	var c pgConds
	c.filter(q, sel.Contents)
	c.cursor(q.Forward, sel.Cursor)
	return pgSelect(q) + c.where() + c.orderLimit(q.Forward, sel.Limit), c.args
}

// cursor adds the condition of rows strictly after (forward) or before
// cur in (timestamp, hash) order; nil adds none. The row comparison comes
// with a bound on ts alone, which it implies: PostgreSQL prunes partitions
// on that bound (as a statement starts, from its parameters), not on the
// row comparison, so a backward page deep in the archive opens only the
// partitions at and before its cursor, not every newer one first.
func (c *pgConds) cursor(forward bool, cur *plan.Cursor) {
	if cur == nil {
		return
	}
	op, bound := "<", "ts <= $"
	if forward {
		op, bound = ">", "ts >= $"
	}
	c.add(bound, cur.TS)
	c.args = append(c.args, cur.TS, cur.Hash[:])
	c.conds = append(c.conds, fmt.Sprintf("(ts, hash) %s ($%d, $%d)", op, len(c.args)-1, len(c.args)))
}

// orderLimit returns the ORDER BY of the query direction and a LIMIT of n,
// whose argument it adds.
func (c *pgConds) orderLimit(forward bool, n int) string {
	c.args = append(c.args, n)
	return orderBy(forward) + fmt.Sprintf(" LIMIT $%d", len(c.args))
}

func orderBy(forward bool) string {
	if forward {
		return " ORDER BY ts ASC, hash ASC"
	}
	return " ORDER BY ts DESC, hash DESC"
}

func (s *source) scan(ctx context.Context, stmt string, args []any) ([]row, error) {
	rs, err := s.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, pgErr(err)
	}
	defer rs.Close()
	var out []row
	var h, topic []byte
	for rs.Next() {
		var r row
		if err := rs.Scan(&h, &r.TS, &topic, &r.Ext); err != nil {
			return nil, pgErr(err)
		}
		if len(h) != len(r.Hash) {
			return nil, fmt.Errorf("%w: row with a %d-byte hash", archive.ErrCorrupt, len(h))
		}
		copy(r.Hash[:], h)
		r.Topic = string(topic)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}
