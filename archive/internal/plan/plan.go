// Package plan is the query planner both archive drivers share: it checks
// a store v3 query against the rules of archive.Query, chooses how to read
// it (a hash lookup, one ordered index range, or one range per content
// topic merged), orders and pages what the driver selects, and builds the
// Result. A driver answers the Selections it is given (archive/embedded in
// SQLite, archive/postgres in PostgreSQL) and reads the messages' bytes.
package plan

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// Row is one message a driver selected: its place in the order (TS, then
// Hash), its pubsub topic and the driver's own part, Ext: where its bytes
// are (the embedded archive) or the bytes (Postgres).
type Row[E any] struct {
	Hash  message.Hash
	TS    int64
	Topic string
	Ext   E
}

// Cursor is the (timestamp, hash) a page starts after (forward) or ends
// before (backward), exclusive.
type Cursor struct {
	TS   int64
	Hash message.Hash
}

// Selection is one read a driver answers: the messages that pass Query's
// pubsub topic and time bounds, Contents (its content topics, any of them;
// none: every one), strictly after (Query.Forward) or before Cursor (nil:
// no cursor), in query direction, at most Limit. With Query.Hashes, only
// those hashes (sorted, deduplicated or not): the driver may then leave
// the cursor, the order and the limit to the planner.
type Selection struct {
	Query    archive.Query
	Contents []string
	Cursor   *Cursor
	Limit    int
}

// Source is a driver's side of a query.
type Source[E any] interface {
	// CursorTime sets c.TS to the timestamp of the stored message
	// c.Hash, or returns archive.ErrUnknownCursor.
	CursorTime(ctx context.Context, c *Cursor) error
	// Select answers s.
	Select(ctx context.Context, s Selection) ([]Row[E], error)
	// Fill sets the Wire of out[i], the message of rows[i], from its
	// stored bytes (a query with IncludeData).
	Fill(ctx context.Context, rows []Row[E], out []archive.Stored) error
}

// Check validates q and returns its page size. The order of the checks
// follows nwaku's findMessages (waku_archive/archive.nim). Errors wrap
// archive.ErrBadQuery.
func Check(q *archive.Query) (int, error) {
	switch {
	case q.Limit < 0:
		return 0, fmt.Errorf("%w: negative limit %d", archive.ErrBadQuery, q.Limit)
	case len(q.Hashes) > archive.MaxQueryHashes:
		return 0, fmt.Errorf("%w: %d hashes, over %d", archive.ErrBadQuery, len(q.Hashes), archive.MaxQueryHashes)
	case q.Cursor != nil && *q.Cursor == (message.Hash{}):
		return 0, archive.ErrZeroCursor
	case q.Cursor != nil && len(q.ContentTopics) > archive.MaxContentTopics:
		return 0, archive.ErrTooManyContentTopics
	}
	switch {
	case q.Limit == 0:
		return archive.DefaultPageSize, nil
	case q.Limit > archive.MaxPageSize:
		return archive.MaxPageSize, nil
	}
	return q.Limit, nil
}

// Run answers q, which Check passed with page size limit, from src. Each
// Selection it makes is at most limit+1 long (the one after the page
// tells whether there is a next page), but for a hash lookup, which a
// driver may answer whole: at most archive.MaxQueryHashes small rows. A
// query on a pubsub topic and 2 to archive.MaxContentTopics content
// topics reads one range per content topic and merges them, so its cost
// does not grow with the archive. Only the page's rows are filled with
// their bytes.
func Run[E any](ctx context.Context, q archive.Query, limit int, src Source[E]) (*archive.Result, error) {
	sel := Selection{Query: q, Limit: limit + 1}
	if q.Cursor != nil {
		sel.Cursor = &Cursor{Hash: *q.Cursor}
		if err := src.CursorTime(ctx, sel.Cursor); err != nil {
			return nil, err
		}
	}
	topics := slices.Clone(q.ContentTopics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	var rows []Row[E]
	var err error
	switch {
	case len(q.Hashes) > 0:
		sel.Contents = topics
		if rows, err = src.Select(ctx, sel); err == nil {
			rows = ordered(afterCursor(rows, sel.Cursor, q.Forward), q.Forward, limit+1)
		}
	case q.PubsubTopic != "" && len(topics) > 1 && len(topics) <= archive.MaxContentTopics:
		for i := range topics {
			sel.Contents = topics[i : i+1]
			var r []Row[E]
			if r, err = src.Select(ctx, sel); err != nil {
				break
			}
			rows = append(rows, r...)
		}
		if err == nil {
			rows = ordered(rows, q.Forward, limit+1)
		}
	default:
		sel.Contents = topics
		rows, err = src.Select(ctx, sel)
	}
	if err != nil {
		return nil, err
	}
	res := &archive.Result{}
	if len(rows) > limit {
		rows = rows[:limit]
		res.Cursor = new(message.Hash)
		*res.Cursor = rows[len(rows)-1].Hash // the last included in query direction
	}
	if !q.Forward {
		slices.Reverse(rows)
	}
	res.Messages = make([]archive.Stored, len(rows))
	for i, r := range rows {
		res.Messages[i] = archive.Stored{Hash: r.Hash, PubsubTopic: r.Topic, Timestamp: r.TS}
	}
	if q.IncludeData {
		if err := src.Fill(ctx, rows, res.Messages); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// compare orders rows forward: by timestamp, then hash.
func compare(xTS int64, xHash *message.Hash, yTS int64, yHash *message.Hash) int {
	if xTS != yTS {
		if xTS < yTS {
			return -1
		}
		return 1
	}
	return bytes.Compare(xHash[:], yHash[:])
}

// afterCursor drops the rows not strictly after (forward) or before cur;
// nil keeps every row.
func afterCursor[E any](rows []Row[E], cur *Cursor, forward bool) []Row[E] {
	if cur == nil {
		return rows
	}
	return slices.DeleteFunc(rows, func(r Row[E]) bool {
		c := compare(r.TS, &r.Hash, cur.TS, &cur.Hash)
		return c == 0 || (c < 0) == forward
	})
}

// ordered sorts rows in query direction and keeps the first n.
func ordered[E any](rows []Row[E], forward bool, n int) []Row[E] {
	if forward {
		slices.SortFunc(rows, func(x, y Row[E]) int { return compare(x.TS, &x.Hash, y.TS, &y.Hash) })
	} else {
		slices.SortFunc(rows, func(x, y Row[E]) int { return compare(y.TS, &y.Hash, x.TS, &x.Hash) })
	}
	return rows[:min(len(rows), n)]
}
