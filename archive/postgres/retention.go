package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
)

// pgDeleteBatch is how many rows one retention DELETE removes: each batch
// is its own short transaction, so inserts (which take no lock a delete
// waits for, nor the reverse) and queries go on during a run.
const pgDeleteBatch = 2000

// retain is the Postgres side of retention (driver.Retain), as nwaku's
// production store nodes apply theirs: whole partitions are dropped,
// oldest first, while every message in them has expired, and only in the
// partition where the expired messages end are rows deleted, in batches.
// What expires: the messages older than r.Time; beyond the newest
// driver.CapacityKeep(r.Capacity) once there are
// driver.CapacityTrigger(r.Capacity); the oldest while the wire bytes
// stored exceed r.Size. The hashes of the deleted messages leave
// courier_hashes in batches too.
func (p *Archive) retain(ctx context.Context, r archive.Retention, now time.Time) (int64, error) {
	if err := p.dropOrphans(ctx); err != nil {
		return 0, err
	}
	var total int64
	if r.Time > 0 {
		n, err := p.expireBefore(ctx, now.Add(-r.Time).UnixNano())
		total += n
		if err != nil {
			return total, err
		}
	}
	if r.Capacity > 0 {
		n, err := p.expireBeyond(ctx, driver.CapacityTrigger(r.Capacity), driver.CapacityKeep(r.Capacity),
			"count(*)", "SELECT ts, hash FROM %s ORDER BY ts DESC, hash DESC OFFSET $1 LIMIT 1")
		total += n
		if err != nil {
			return total, err
		}
	}
	if r.Size > 0 {
		// The newest row whose newer rows of its partition (itself
		// included) hold more than the bytes left to keep.
		n, err := p.expireBeyond(ctx, r.Size+1, r.Size, "coalesce(sum(octet_length(wire)), 0)", `SELECT ts, hash FROM (
			SELECT ts, hash, sum(octet_length(wire)) OVER (ORDER BY ts DESC, hash DESC) AS newer FROM %s) t
			WHERE newer > $1 ORDER BY ts DESC, hash DESC LIMIT 1`)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// expireBefore deletes the messages older than cutoff (Unix ns): the
// partitions that end by it whole, the rest of them row by row.
func (p *Archive) expireBefore(ctx context.Context, cutoff int64) (int64, error) {
	parts, err := listPartitions(ctx, p.pool)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, part := range parts {
		if part.Max || part.To > cutoff {
			break
		}
		n, err := p.dropCounted(ctx, part)
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := p.deleteRows(ctx, "ts < $1", cutoff)
	total += n
	if err != nil {
		return total, err
	}
	return total, p.forgetHashes(ctx)
}

// expireBeyond keeps the newest rows whose measure (an aggregate over a
// partition's rows: count(*), their wire bytes) adds up to keep, once
// the whole table's is at least trigger: it sums the partitions' from the
// newest, drops whole the ones past keep, and in the partition where keep
// is reached deletes the rows from the one that last finds (a query on
// the partition, %s, taking the measure still to keep as $1) and older.
func (p *Archive) expireBeyond(ctx context.Context, trigger, keep int64, measure, last string) (int64, error) {
	parts, err := listPartitions(ctx, p.pool)
	if err != nil {
		return 0, err
	}
	sums := make([]int64, len(parts))
	var all int64
	for i, part := range parts {
		if err := p.pool.QueryRow(ctx, "SELECT "+measure+"::bigint FROM "+part.Name).Scan(&sums[i]); err != nil {
			return 0, pgErr(err)
		}
		all += sums[i]
	}
	if all < trigger {
		return 0, nil
	}
	var total, newer int64
	i := len(parts) - 1
	for ; i >= 0 && newer+sums[i] <= keep; i-- {
		newer += sums[i]
	}
	if i < 0 {
		return 0, nil
	}
	// parts[i] holds the boundary; the ones before it go whole.
	for _, part := range parts[:i] {
		n, err := p.dropCounted(ctx, part)
		total += n
		if err != nil {
			return total, err
		}
	}
	var ts int64
	var h []byte
	err = p.pool.QueryRow(ctx, fmtTable(last, parts[i].Name), keep-newer).Scan(&ts, &h)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return total, pgErr(err)
	}
	if err == nil {
		n, err := p.deleteRows(ctx, "(ts, hash) <= ($1, $2)", ts, h)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, p.forgetHashes(ctx)
}

// fmtTable puts a table name in a statement at its %s.
func fmtTable(stmt, table string) string {
	for i := 0; i+1 < len(stmt); i++ {
		if stmt[i] == '%' && stmt[i+1] == 's' {
			return stmt[:i] + table + stmt[i+2:]
		}
	}
	return stmt
}

// dropCounted counts the rows of part and drops it; it returns the rows.
func (p *Archive) dropCounted(ctx context.Context, part partition) (int64, error) {
	var n int64
	if err := p.pool.QueryRow(ctx, "SELECT count(*) FROM "+part.Name).Scan(&n); err != nil {
		return 0, pgErr(err)
	}
	if err := p.dropPartition(ctx, part); err != nil {
		return 0, err
	}
	return n, nil
}

// deleteRows deletes the messages matching cond, oldest first,
// pgDeleteBatch at a time, with their hashes, and returns how many.
func (p *Archive) deleteRows(ctx context.Context, cond string, args ...any) (int64, error) {
	stmt := "WITH d AS (DELETE FROM courier_messages WHERE (ts, hash) IN (SELECT ts, hash FROM courier_messages WHERE " + cond +
		" ORDER BY ts, hash LIMIT " + strconv.Itoa(pgDeleteBatch) + ") RETURNING hash), " +
		"h AS (DELETE FROM courier_hashes WHERE hash IN (SELECT hash FROM d)) SELECT count(*) FROM d"
	var total int64
	for {
		var n int64
		if err := p.pool.QueryRow(ctx, stmt, args...).Scan(&n); err != nil {
			return total, pgErr(err)
		}
		total += n
		if n < pgDeleteBatch {
			return total, nil
		}
	}
}

// forgetHashes deletes, pgDeleteBatch at a time, the rows of
// courier_hashes older than the oldest partition: the hashes of messages
// whose partition was dropped (partitions go oldest first, so no other
// message is older). It stops at the first batch that deletes fewer.
func (p *Archive) forgetHashes(ctx context.Context) error {
	parts, err := listPartitions(ctx, p.pool)
	if err != nil {
		return err
	}
	var cond string
	var args []any
	if len(parts) == 0 {
		cond = "true"
	} else {
		cond, args = "ts < $1", []any{parts[0].From}
	}
	// A hash whose message is stored stays: the writer may have stored an
	// old message in a partition made since the list was read (its hash
	// and its row commit together, so a statement sees both or neither).
	stmt := "DELETE FROM courier_hashes h WHERE hash IN (SELECT hash FROM courier_hashes WHERE " + cond + " LIMIT " + strconv.Itoa(pgDeleteBatch) + ")" +
		" AND NOT EXISTS (SELECT 1 FROM courier_messages m WHERE m.ts = h.ts AND m.hash = h.hash)"
	for {
		tag, err := p.pool.Exec(ctx, stmt, args...)
		if err != nil {
			return pgErr(err)
		}
		if tag.RowsAffected() < pgDeleteBatch {
			return nil
		}
	}
}
