package embedded

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/plan"
	"github.com/couriernet/courier/message"
)

// pos is where a selected message's record is: its segment, the offset of
// its wire bytes and their length.
type pos struct {
	seg    int64
	off    int64
	length int
}

// row is one index row a query selected.
type row = plan.Row[pos]

// Query implements archive.Archive. With IncludeData it reads each
// message's record from its segment into a fresh buffer and checks its
// length and CRC-32C; it does not decode it.
func (a *Archive) Query(ctx context.Context, q archive.Query) (*archive.Result, error) {
	a.st.Queries.Add(1)
	limit, err := plan.Check(&q)
	if err != nil {
		return nil, err
	}
	a.readMu.RLock()
	defer a.readMu.RUnlock()
	if a.readClosed {
		return nil, archive.ErrClosed
	}
	if f := a.cfg.OnQuery; f != nil {
		began := time.Now()
		defer func() { f(time.Since(began)) }()
	}
	return plan.Run[pos](ctx, q, limit, (*source)(a))
}

// source answers the planner's selections from the index and reads the
// records from the segments. Its caller holds readMu.
type source Archive

// CursorTime implements plan.Source.
func (s *source) CursorTime(ctx context.Context, c *plan.Cursor) error {
	err := s.rdb.QueryRowContext(ctx, cursorRow, hkey(c.Hash[:]), c.Hash[:]).Scan(&c.TS)
	if errors.Is(err, sql.ErrNoRows) {
		return archive.ErrUnknownCursor
	}
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	return nil
}

// cursorRow finds the timestamp of a cursor's message, ?1 its hkey and ?2
// its hash, in whichever time partition it is.
var cursorRow = partitions(minTS, maxTS) +
	"SELECT ts FROM messages INDEXED BY messages_part_hkey WHERE " + partExpr + " IN (SELECT p FROM parts) AND hkey = ?1 AND hash = ?2"

// Select implements plan.Source: a hash lookup reads every matching row
// (small rows, no bytes) through the hash index and leaves the cursor and
// the order to the planner; any other selection reads one index range.
func (s *source) Select(ctx context.Context, sel plan.Selection) ([]row, error) {
	if len(sel.Query.Hashes) > 0 {
		return s.byHashes(ctx, &sel)
	}
	return s.byFilter(ctx, &sel)
}

// selectRow reads a row with its pubsub topic's name; the index to read
// goes between the two.
const selectRow, selectJoin = "SELECT m.hash, m.ts, t.name, m.seg, m.off, m.len FROM messages m", " JOIN topics t ON t.id = m.pubsub_id"

// topicIs is the condition that a topic id column holds the id of the
// topic named by the argument (none: no row matches).
const topicIs = " = (SELECT id FROM topics WHERE name = ?)"

// filterConds returns the SQL conditions and arguments of q's pubsub topic,
// content topics and time range (both ends inclusive).
func filterConds(q *archive.Query, contents []string) (conds []string, args []any) {
	if q.PubsubTopic != "" {
		conds, args = append(conds, "m.pubsub_id"+topicIs), append(args, q.PubsubTopic)
	}
	switch len(contents) {
	case 0:
	case 1:
		conds, args = append(conds, "m.content_id"+topicIs), append(args, contents[0])
	default:
		conds = append(conds, "m.content_id IN (SELECT id FROM topics WHERE name IN (?"+strings.Repeat(",?", len(contents)-1)+"))")
		for _, c := range contents {
			args = append(args, c)
		}
	}
	if q.StartTime != nil {
		conds, args = append(conds, "m.ts >= ?"), append(args, *q.StartTime)
	}
	if q.EndTime != nil {
		conds, args = append(conds, "m.ts <= ?"), append(args, *q.EndTime)
	}
	return conds, args
}

// byHashes selects the stored messages among the hashes that pass the
// other filters (hashSelect).
func (s *source) byHashes(ctx context.Context, sel *plan.Selection) ([]row, error) {
	query, args := hashSelect(&sel.Query, sel.Contents)
	return s.scan(ctx, query, args)
}

// hashSelect returns the statement and arguments that read the rows of
// q's hashes that pass its other filters: the rows of their hkeys in the
// time partitions of q's time range, whose whole hash must be one of them
// too.
func hashSelect(q *archive.Query, contents []string) (string, []any) {
	hashes := slices.Clone(q.Hashes)
	slices.SortFunc(hashes, func(x, y message.Hash) int { return bytes.Compare(x[:], y[:]) })
	hashes = slices.Compact(hashes)
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if q.StartTime != nil {
		lo = *q.StartTime
	}
	if q.EndTime != nil {
		hi = *q.EndTime
	}
	conds, args := filterConds(q, contents)
	args = append([]any{lo, hi}, args...)
	list := "(?" + strings.Repeat(",?", len(hashes)-1) + ")"
	conds = append(conds, partExpr+" IN (SELECT p FROM parts)", "m.hkey IN "+list, "m.hash IN "+list)
	for i := range hashes {
		args = append(args, hkey(hashes[i][:]))
	}
	for i := range hashes {
		args = append(args, hashes[i][:])
	}
	return partitions("?", "?") + selectRow + " INDEXED BY messages_part_hkey" + selectJoin + " WHERE " + strings.Join(conds, " AND "), args
}

// byFilter selects up to sel.Limit rows in query direction from one index
// range: pubsub topic, content topics (any of them), time bounds and
// cursor. The indexes order by (ts, hkey); SQLite sorts the rows of one
// (ts, hkey) by hash, so the order is (ts, hash).
func (s *source) byFilter(ctx context.Context, sel *plan.Selection) ([]row, error) {
	q := &sel.Query
	var sb strings.Builder
	sb.WriteString(selectRow)
	switch {
	case q.PubsubTopic != "" && len(sel.Contents) == 1:
		sb.WriteString(" INDEXED BY messages_content")
	case q.PubsubTopic != "":
		sb.WriteString(" INDEXED BY messages_pubsub")
	default:
		sb.WriteString(" INDEXED BY messages_time")
	}
	sb.WriteString(selectJoin)
	conds, args := filterConds(q, sel.Contents)
	if cur := sel.Cursor; cur != nil {
		op := "<"
		if q.Forward {
			op = ">"
		}
		// The first condition bounds the index range, the second is exact.
		conds = append(conds, "m.ts "+op+"= ?", "(m.ts, m.hkey, m.hash) "+op+" (?, ?, ?)")
		args = append(args, cur.TS, cur.TS, hkey(cur.Hash[:]), cur.Hash[:])
	}
	if len(conds) > 0 {
		sb.WriteString(" WHERE ")
		sb.WriteString(strings.Join(conds, " AND "))
	}
	if q.Forward {
		sb.WriteString(" ORDER BY m.ts ASC, m.hkey ASC, m.hash ASC LIMIT ?")
	} else {
		sb.WriteString(" ORDER BY m.ts DESC, m.hkey DESC, m.hash DESC LIMIT ?")
	}
	args = append(args, sel.Limit)
	return s.scan(ctx, sb.String(), args)
}

func (s *source) scan(ctx context.Context, stmt string, args []any) ([]row, error) {
	rs, err := s.rdb.QueryContext(ctx, stmt, args...)
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
		if err := rs.Scan(&h, &r.TS, &topic, &r.Ext.seg, &r.Ext.off, &r.Ext.length); err != nil {
			return nil, fmt.Errorf("archive: index: %w", err)
		}
		if len(h) != len(r.Hash) {
			return nil, fmt.Errorf("%w: index row with a %d-byte hash", archive.ErrCorrupt, len(h))
		}
		copy(r.Hash[:], h)
		var ok bool
		if r.Topic, ok = topics[string(topic)]; !ok {
			r.Topic = string(topic)
			topics[r.Topic] = r.Topic
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("archive: index: %w", err)
	}
	return out, nil
}

// Fill implements plan.Source: it reads the records of rows from the
// segments into the Wire of out, each a buffer of its own. Records near
// one another in a segment (less than fillGap apart, a span of at most
// fillSpan bytes) are read with one pread, and up to fillReaders spans
// are read at once: a page of messages appended one after another costs
// one read, and a page of messages scattered over the archive (a hash
// lookup) about one disk read's latency, not one per message.
func (s *source) Fill(ctx context.Context, rows []row, out []archive.Stored) error {
	files := segFiles{dir: s.dir}
	defer files.close()
	spans, err := fillSpans(rows, &files)
	if err != nil {
		return err
	}
	if len(spans) == 1 {
		return spans[0].read(ctx, rows, out)
	}
	errs := make(chan error, len(spans))
	sem := make(chan struct{}, fillReaders)
	for i := range spans {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- spans[i].read(ctx, rows, out)
		}()
	}
	var first error
	for range spans {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// How Fill groups and runs its reads.
const (
	fillGap     = 64 << 10
	fillSpan    = 1 << 20
	fillReaders = 8
)

// span is one read of Fill: bytes from to end of f, holding the records
// of rows[i] for i in rows.
type span struct {
	f        *os.File
	from, to int64
	rows     []int
}

// fillSpans groups the records of rows into spans, in segment and offset
// order, opening the segments in files.
func fillSpans(rows []row, files *segFiles) ([]span, error) {
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
		if err := checkPos(rows[i].Ext.off, rows[i].Ext.length); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := rows[x].Ext, rows[y].Ext
		if a.seg != b.seg {
			return cmp.Compare(a.seg, b.seg)
		}
		return cmp.Compare(a.off, b.off)
	})
	var spans []span
	var seg int64
	for _, i := range order {
		p := rows[i].Ext
		from, to := p.off-recHeaderSize, p.off+int64(p.length)
		if n := len(spans); n > 0 && p.seg == seg && from-spans[n-1].to < fillGap && to-spans[n-1].from <= fillSpan && from >= spans[n-1].to {
			spans[n-1].to = to
			spans[n-1].rows = append(spans[n-1].rows, i)
			continue
		}
		f, err := files.get(p.seg)
		if err != nil {
			return nil, err
		}
		seg = p.seg
		spans = append(spans, span{f: f, from: from, to: to, rows: []int{i}})
	}
	return spans, nil
}

// read reads sp and sets the Wire of out[i] for each of its rows, checked
// (length and CRC-32C) and copied out unless it is the span's only record.
func (sp *span) read(ctx context.Context, rows []row, out []archive.Stored) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	buf := make([]byte, sp.to-sp.from)
	if err := readAt(sp.f, buf, sp.from); err != nil {
		return err
	}
	for _, i := range sp.rows {
		p := rows[i].Ext
		at := p.off - recHeaderSize - sp.from
		wire, err := checkRecord(sp.f, buf[at:at+recHeaderSize+int64(p.length)], p.off, p.length)
		if err != nil {
			return err
		}
		if len(sp.rows) > 1 {
			wire = bytes.Clone(wire)
		}
		out[i].Wire = wire
	}
	return nil
}
