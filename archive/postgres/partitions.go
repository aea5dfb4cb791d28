package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The messages table is partitioned by timestamp (PARTITION BY RANGE
// (ts)), as nwaku's production store nodes keep theirs
// (waku_archive/driver/postgres_driver/partitions_manager.nim): one
// partition an hour, so that retention drops whole partitions instead of
// deleting rows. A partition is made when the first message of its range
// is written, by the writer before it inserts the batch; its range is the
// hour of the message's timestamp, or, for a timestamp more than
// partitionNear from now, the partitionFarWidth around it (so that
// timestamps far off, in the past or the future, cannot make a partition
// each), in both cases cut to the gap between the partitions on either
// side. A partition is named courier_messages_<from>_<to> in Unix seconds,
// to exclusive, a time before 1970 with "m" for its minus sign ("min" and
// "max" for the first and the last cell of the int64 range), and its
// ranges are read back from the names. Timestamps before 1970 are the
// receive times of messages without a timestamp under a clock set before
// it (archive.Config.Now).
const (
	partitionWidth    = int64(time.Hour)
	partitionFarWidth = int64(365 * 24 * time.Hour)
	partitionNear     = int64(31 * 24 * time.Hour)
	// pgPartitionLock is the advisory lock key that serializes the
	// partition changes of nodes sharing one database.
	pgPartitionLock = 0x636f7573 // "cous"
)

// partition is one partition of courier_messages: timestamps from From to
// To (exclusive, Unix ns); Min means From is MINVALUE (From is then
// math.MinInt64), Max that To is MAXVALUE.
type partition struct {
	Name     string
	From, To int64
	Min, Max bool
}

// holds reports whether ts falls in p.
func (p partition) holds(ts int64) bool { return ts >= p.From && (p.Max || ts < p.To) }

var partitionName = regexp.MustCompile(`^courier_messages_(min|m?[0-9]+)_(m?[0-9]+|max)$`)

// parsePartition reads a partition's range from its name.
func parsePartition(name string) (partition, bool) {
	m := partitionName.FindStringSubmatch(name)
	if m == nil {
		return partition{}, false
	}
	p := partition{Name: name, From: math.MinInt64, Min: m[1] == "min", Max: m[2] == "max"}
	var ok bool
	if !p.Min {
		if p.From, ok = parseSeconds(m[1]); !ok {
			return partition{}, false
		}
	}
	if !p.Max {
		if p.To, ok = parseSeconds(m[2]); !ok || p.To <= p.From {
			return partition{}, false
		}
	}
	return p, true
}

// parseSeconds reads a bound of a partition's name, Unix seconds with "m"
// for a minus sign, as Unix ns; false if it is not one or out of range.
func parseSeconds(s string) (int64, bool) {
	neg := s[0] == 'm'
	if neg {
		s = s[1:]
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec > math.MaxInt64/int64(time.Second) {
		return 0, false
	}
	if neg {
		sec = -sec
	}
	return sec * int64(time.Second), true
}

// formatSeconds is the bound ns (a whole number of seconds) in a
// partition's name.
func formatSeconds(ns int64) string {
	if ns < 0 {
		return "m" + strconv.FormatInt(-ns/int64(time.Second), 10)
	}
	return strconv.FormatInt(ns/int64(time.Second), 10)
}

// newPartition returns the partition to create for ts, which none of
// parts (sorted by From) holds, at time now (Unix ns).
func newPartition(ts, now int64, parts []partition) partition {
	width := partitionWidth
	if ts < now-partitionNear || ts > now+partitionNear {
		width = partitionFarWidth
	}
	r := ts % width
	if r < 0 {
		r += width // the cell starts at ts-r, at or before ts
	}
	var p partition
	if ts < math.MinInt64+width { // the first cell starts before math.MinInt64
		p.From, p.Min, p.To = math.MinInt64, true, ts+(width-r)
	} else {
		p.From = ts - r
		if p.From > math.MaxInt64-width {
			p.Max = true
		} else {
			p.To = p.From + width
		}
	}
	i, _ := slices.BinarySearchFunc(parts, ts, func(q partition, ts int64) int {
		if q.From <= ts {
			return -1
		}
		return 1
	})
	if i > 0 && parts[i-1].To > p.From { // the one before ends inside the cell
		p.From, p.Min = parts[i-1].To, false
	}
	if i < len(parts) && (p.Max || parts[i].From < p.To) { // the one after starts inside it
		p.To, p.Max = parts[i].From, false
	}
	from, to := "min", "max"
	if !p.Min {
		from = formatSeconds(p.From)
	}
	if !p.Max {
		to = formatSeconds(p.To)
	}
	p.Name = "courier_messages_" + from + "_" + to
	return p
}

// findPartition returns the partition of parts (sorted) that holds ts.
func findPartition(parts []partition, ts int64) (partition, bool) {
	i, _ := slices.BinarySearchFunc(parts, ts, func(q partition, ts int64) int {
		if q.From <= ts {
			return -1
		}
		return 1
	})
	if i > 0 && parts[i-1].holds(ts) {
		return parts[i-1], true
	}
	return partition{}, false
}

// querier is a connection, a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// listPartitions returns the partitions attached to courier_messages in
// the current schema, oldest first.
func listPartitions(ctx context.Context, q querier) ([]partition, error) {
	rows, err := q.Query(ctx, `SELECT c.relname::text FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.oid = 'courier_messages'::regclass`)
	if err != nil {
		return nil, pgErr(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pgErr(err)
	}
	var parts []partition
	for _, n := range names {
		if p, ok := parsePartition(n); ok {
			parts = append(parts, p)
		}
	}
	sortPartitions(parts)
	return parts, nil
}

// sortPartitions orders parts by the start of their ranges.
func sortPartitions(parts []partition) {
	slices.SortFunc(parts, func(a, b partition) int { return cmp.Compare(a.From, b.From) })
}

// createPartitions makes the partitions that hold the timestamps ts
// (Unix ns), in tx, which holds the partition lock, and returns the
// partitions after. Each is made as nwaku makes its own: a table like
// courier_messages, then attached, which takes a lock that lets inserts
// and queries go on, and validates nothing in a table still empty.
func createPartitions(ctx context.Context, tx pgx.Tx, ts []int64, now int64) ([]partition, error) {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", pgPartitionLock); err != nil {
		return nil, pgErr(err)
	}
	parts, err := listPartitions(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if _, ok := findPartition(parts, t); ok {
			continue
		}
		p := newPartition(t, now, parts)
		from, to := "MINVALUE", "MAXVALUE"
		if !p.Min {
			from = strconv.FormatInt(p.From, 10)
		}
		if !p.Max {
			to = strconv.FormatInt(p.To, 10)
		}
		stmt := "CREATE TABLE " + p.Name + " (LIKE courier_messages INCLUDING DEFAULTS INCLUDING STORAGE); " +
			"ALTER TABLE courier_messages ATTACH PARTITION " + p.Name + " FOR VALUES FROM (" + from + ") TO (" + to + ")"
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("archive: postgres: partition %s: %w", p.Name, err)
		}
		parts = append(parts, p)
		sortPartitions(parts)
	}
	return parts, nil
}

// ensurePartitions makes sure a partition holds each of the timestamps ts
// (Unix ns) before the writer inserts them. It runs on the writer, which
// alone reads and sets p.parts.
func (p *Archive) ensurePartitions(ctx context.Context, ts []int64) error {
	var missing []int64
	for _, t := range ts {
		if _, ok := findPartition(p.parts, t); !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		parts, err := createPartitions(ctx, tx, missing, p.cfg.Now().UnixNano())
		if err == nil {
			p.parts = parts
		}
		return err
	})
}

// dropPartition detaches part without blocking inserts and queries
// (DETACH PARTITION CONCURRENTLY, which runs outside a transaction) and
// drops it, as nwaku's detachAndDropPartition does. A detach left pending
// by a crash is finished first.
func (p *Archive) dropPartition(ctx context.Context, part partition) error {
	_, err := p.pool.Exec(ctx, "ALTER TABLE courier_messages DETACH PARTITION "+part.Name+" CONCURRENTLY")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55000" { // object_not_in_prerequisite_state: a pending detach
		_, err = p.pool.Exec(ctx, "ALTER TABLE courier_messages DETACH PARTITION "+part.Name+" FINALIZE")
	}
	if err != nil {
		return fmt.Errorf("archive: postgres: detach %s: %w", part.Name, err)
	}
	if _, err := p.pool.Exec(ctx, "DROP TABLE IF EXISTS "+part.Name); err != nil {
		return fmt.Errorf("archive: postgres: drop %s: %w", part.Name, err)
	}
	return nil
}

// dropOrphans drops the partition tables of the current schema that are
// attached to nothing: left by a crash between a detach and its drop
// (nwaku's dropOrphanPartitions), and finishes detaches left pending.
func (p *Archive) dropOrphans(ctx context.Context) error {
	rows, err := p.pool.Query(ctx, `SELECT c.relname::text, coalesce(i.inhdetachpending, false) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_inherits i ON i.inhrelid = c.oid
		WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'courier\_messages\_%'
		AND (i.inhrelid IS NULL OR i.inhdetachpending)`)
	if err != nil {
		return pgErr(err)
	}
	type orphan struct {
		name    string
		pending bool
	}
	orphans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (orphan, error) {
		var o orphan
		return o, r.Scan(&o.name, &o.pending)
	})
	if err != nil {
		return pgErr(err)
	}
	for _, o := range orphans {
		part, ok := parsePartition(o.name)
		if !ok {
			continue
		}
		if o.pending {
			if err := p.dropPartition(ctx, part); err != nil {
				return err
			}
			continue
		}
		if _, err := p.pool.Exec(ctx, "DROP TABLE IF EXISTS "+part.Name); err != nil {
			return pgErr(err)
		}
	}
	return nil
}
