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

// retain is the Postgres side of retention (driver.Retain): batched
// deletes of the oldest rows in (timestamp, hash) order: rows older than
// r.Time, rows beyond the newest driver.CapacityKeep(r.Capacity) once
// there are driver.CapacityTrigger(r.Capacity), and the oldest rows while
// the wire bytes stored exceed r.Size.
func (p *Archive) retain(ctx context.Context, r archive.Retention, now time.Time) (int64, error) {
	var total int64
	if r.Time > 0 {
		n, err := p.deleteThrough(ctx, "ts < $1", now.Add(-r.Time).UnixNano())
		total += n
		if err != nil {
			return total, err
		}
	}
	if r.Capacity > 0 {
		var count int64
		if err := p.pool.QueryRow(ctx, "SELECT count(*) FROM courier_messages").Scan(&count); err != nil {
			return total, pgErr(err)
		}
		if count >= driver.CapacityTrigger(r.Capacity) {
			n, err := p.deleteBefore(ctx, "SELECT ts, hash FROM courier_messages ORDER BY ts DESC, hash DESC OFFSET $1 LIMIT 1", driver.CapacityKeep(r.Capacity))
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	if r.Size > 0 {
		// The newest row whose newer rows (itself included) hold more than
		// r.Size bytes: it and everything older goes.
		n, err := p.deleteBefore(ctx, `SELECT ts, hash FROM (
			SELECT ts, hash, sum(octet_length(wire)) OVER (ORDER BY ts DESC, hash DESC) AS newer
			FROM courier_messages) t
			WHERE newer > $1 ORDER BY ts DESC, hash DESC LIMIT 1`, r.Size)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteBefore finds one row with sel (a query giving ts, hash) and deletes
// it and every row before it.
func (p *Archive) deleteBefore(ctx context.Context, sel string, arg int64) (int64, error) {
	var ts int64
	var h []byte
	err := p.pool.QueryRow(ctx, sel, arg).Scan(&ts, &h)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, pgErr(err)
	}
	return p.deleteThrough(ctx, "(ts, hash) <= ($1, $2)", ts, h)
}

// deleteThrough deletes the rows matching cond, oldest first, pgDeleteBatch
// at a time.
func (p *Archive) deleteThrough(ctx context.Context, cond string, args ...any) (int64, error) {
	stmt := "DELETE FROM courier_messages WHERE hash IN (SELECT hash FROM courier_messages WHERE " + cond +
		" ORDER BY ts, hash LIMIT " + strconv.Itoa(pgDeleteBatch) + ")"
	var total int64
	for {
		tag, err := p.pool.Exec(ctx, stmt, args...)
		if err != nil {
			return total, pgErr(err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pgDeleteBatch {
			return total, nil
		}
	}
}
