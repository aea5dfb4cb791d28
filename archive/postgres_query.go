package archive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/message"
)

// Query implements Archive with the same rules and order as Embedded. With
// IncludeData each message's stored bytes come in the same row, into a
// fresh buffer; they are not decoded.
func (p *Postgres) Query(ctx context.Context, q Query) (*Result, error) {
	p.st.queries.Add(1)
	limit, err := q.check()
	if err != nil {
		return nil, err
	}
	p.readMu.RLock()
	defer p.readMu.RUnlock()
	if p.readClosed {
		return nil, ErrClosed
	}
	if f := p.cfg.OnQuery; f != nil {
		began := time.Now()
		defer func() { f(time.Since(began)) }()
	}
	var cur *row
	if q.Cursor != nil {
		cur = &row{hash: *q.Cursor}
		err := p.pool.QueryRow(ctx, "SELECT ts FROM courier_messages WHERE hash = $1", cur.hash[:]).Scan(&cur.ts)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrUnknownCursor
		}
		if err != nil {
			return nil, pgErr(err)
		}
	}
	topics := slices.Clone(q.ContentTopics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	var rows []pgRow
	switch {
	case len(q.Hashes) > 0:
		rows, err = p.byHashes(ctx, &q, topics, cur, limit+1)
	case q.PubsubTopic != "" && len(topics) > 1 && len(topics) <= MaxContentTopics:
		// One ordered index range per content topic, merged, as Embedded.
		for i := range topics {
			var r []pgRow
			if r, err = p.byFilter(ctx, &q, topics[i:i+1], cur, limit+1); err != nil {
				break
			}
			rows = append(rows, r...)
		}
		if err == nil {
			rows = orderedPg(rows, q.Forward, limit+1)
		}
	default:
		rows, err = p.byFilter(ctx, &q, topics, cur, limit+1)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if len(rows) > limit {
		rows = rows[:limit]
		res.Cursor = new(message.Hash)
		*res.Cursor = rows[len(rows)-1].hash
	}
	if !q.Forward {
		slices.Reverse(rows)
	}
	res.Messages = make([]Stored, len(rows))
	for i, r := range rows {
		res.Messages[i] = Stored{Hash: r.hash, PubsubTopic: r.topic, Timestamp: r.ts, Wire: r.wire}
	}
	return res, nil
}

// pgRow is one row a query selected; wire is nil unless IncludeData.
type pgRow struct {
	row
	wire []byte
}

func orderedPg(rows []pgRow, forward bool, n int) []pgRow {
	if forward {
		slices.SortFunc(rows, func(x, y pgRow) int { return cmpRows(x.row, y.row) })
	} else {
		slices.SortFunc(rows, func(x, y pgRow) int { return cmpRows(y.row, x.row) })
	}
	return rows[:min(len(rows), n)]
}

func pgSelect(q *Query) string {
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
func (c *pgConds) filter(q *Query, contents []string) {
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

// byHashes selects the stored messages among q.Hashes that pass q's other
// filters and the cursor, up to n in query direction. The hashes are
// matched first, reading no wire bytes, in a materialized CTE (so that the
// planner looks them up by the primary key rather than walking a time
// index for the few it needs); the page is cut from those in SQL, and only
// its rows' wire bytes are read: a lookup of MaxQueryHashes hashes reads
// n bodies, not a thousand.
func (p *Postgres) byHashes(ctx context.Context, q *Query, contents []string, cur *row, n int) ([]pgRow, error) {
	hashes := make([][]byte, len(q.Hashes))
	for i := range q.Hashes {
		hashes[i] = q.Hashes[i][:]
	}
	var c pgConds
	c.filter(q, contents)
	c.add("hash = ANY($::bytea[])", hashes)
	matched := c.where()
	c.conds = c.conds[:0]
	c.cursor(q.Forward, cur)
	page := c.where() + c.orderLimit(q.Forward, n)
	stmt := "WITH m AS MATERIALIZED (SELECT hash, ts FROM courier_messages" + matched + ") " +
		pgSelect(q) + " WHERE hash IN (SELECT hash FROM m" + page + ")" + orderBy(q.Forward)
	return p.scan(ctx, stmt, c.args)
}

// byFilter selects up to n rows in query direction from one index range:
// pubsub topic, content topics (any of them), time bounds and cursor.
func (p *Postgres) byFilter(ctx context.Context, q *Query, contents []string, cur *row, n int) ([]pgRow, error) {
	var c pgConds
	c.filter(q, contents)
	c.cursor(q.Forward, cur)
	stmt := pgSelect(q) + c.where()
	stmt += c.orderLimit(q.Forward, n)
	return p.scan(ctx, stmt, c.args)
}

// cursor adds the condition of rows strictly after (forward) or before
// cur in (timestamp, hash) order; nil adds none.
func (c *pgConds) cursor(forward bool, cur *row) {
	if cur == nil {
		return
	}
	op := "<"
	if forward {
		op = ">"
	}
	c.args = append(c.args, cur.ts, cur.hash[:])
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

func (p *Postgres) scan(ctx context.Context, stmt string, args []any) ([]pgRow, error) {
	rs, err := p.pool.Query(ctx, stmt, args...)
	if err != nil {
		return nil, pgErr(err)
	}
	defer rs.Close()
	var out []pgRow
	var h, topic []byte
	for rs.Next() {
		var r pgRow
		if err := rs.Scan(&h, &r.ts, &topic, &r.wire); err != nil {
			return nil, pgErr(err)
		}
		if len(h) != len(r.hash) {
			return nil, fmt.Errorf("%w: row with a %d-byte hash", ErrCorrupt, len(h))
		}
		copy(r.hash[:], h)
		r.topic = string(topic)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, pgErr(err)
	}
	return out, nil
}
