package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
)

// A retention chore deletes index rows on the writer, between two
// batches, so inserts wait for it: it takes about choreTarget, its rows
// (from choreMin to choreMax) set from how long the last one took. A
// row's delete costs what its insert did (a random leaf of the hash
// index, often read from the file): on an archive of ten million, 4,096
// rows took up to two seconds.
const (
	choreTarget = 20 * time.Millisecond
	choreMin    = 64
	choreMax    = 8192
)

// choreRows returns how many rows the next chore deletes, from the size
// and duration of the last; it runs on the retention goroutine, which
// alone reads and sets a.chore.
func (a *Archive) choreRows(last int64, took time.Duration) int64 {
	switch {
	case last == 0:
	case took < choreTarget/2:
		a.chore = min(2*a.chore, choreMax)
	case took > 2*choreTarget:
		a.chore = max(a.chore/2, choreMin)
	}
	return a.chore
}

// segStat is what the index holds for one segment.
type segStat struct {
	id, minID, maxID int64
	maxTS            int64
	rows             int64
	size             int64 // the file's size
	keep             bool  // the segment appended to, or the newest row's
}

// retain is the embedded side of retention (driver.Retain). It deletes whole segments once every message
// in them has expired (dropSegments), then the rows of the expired
// messages in the segments left (deleteRows), as nwaku deletes rows
// whatever the archive's size (waku_archive/retention_policy); a segment
// those deletes empty goes in the same run.
func (a *Archive) retain(ctx context.Context, r archive.Retention, now time.Time) (int64, error) {
	deleted, err := a.dropSegments(ctx, r, now)
	if err != nil {
		return deleted, err
	}
	n, err := a.deleteRows(ctx, r, now)
	deleted += n
	if err != nil || n == 0 {
		return deleted, err
	}
	m, err := a.dropSegments(ctx, archive.Retention{}, now) // only segments no row points into
	return deleted + m, err
}

// dropSegments deletes whole segments once every message in them has
// expired, never the segment being appended to (nor the one holding the
// newest row). A segment expires under r.Time when its
// newest timestamp is older than now-r.Time; under r.Capacity when the
// archive holds driver.CapacityTrigger messages and the segments after it hold at
// least driver.CapacityKeep; under r.Size when it and the segment files after it
// hold more than r.Size bytes. Capacity and size count in append order (segments
// are in append order), time by the messages' timestamps. A segment's rows
// are deleted by the writer between batches, a chore at a time;
// then the file is removed while no query reads.
func (a *Archive) dropSegments(ctx context.Context, r archive.Retention, now time.Time) (int64, error) {
	segs, err := a.segStats(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, s := range segs {
		total += s.rows
	}
	cutoff := now.Add(-r.Time).UnixNano()
	var deleted int64
	var newerRows, newerSize int64 // in the segments after the one looked at
	expired := make([]bool, len(segs))
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if !s.keep {
			expired[i] = (r.Time > 0 && s.rows > 0 && s.maxTS < cutoff) ||
				(r.Capacity > 0 && total >= driver.CapacityTrigger(r.Capacity) && newerRows >= driver.CapacityKeep(r.Capacity)) ||
				(r.Size > 0 && newerSize+s.size > r.Size) ||
				s.rows == 0 // a file no row points into: left by a crash or a failed batch
		}
		newerRows += s.rows
		newerSize += s.size
	}
	for i, s := range segs {
		if !expired[i] {
			continue
		}
		n, err := a.dropSegment(ctx, s)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// segStats lists the segments, oldest first, with what the index says of
// them and their file sizes. The segment being appended to is always the
// last, even when no row points into it yet; segments past it (a
// crashed roll that recovery removes) are left out.
func (a *Archive) segStats(ctx context.Context) ([]segStat, error) {
	a.segMu.Lock()
	cur := a.curID
	a.segMu.Unlock()
	a.readMu.RLock()
	defer a.readMu.RUnlock()
	if a.readClosed {
		return nil, archive.ErrClosed
	}
	rs, err := a.rdb.QueryContext(ctx, "SELECT seg, MIN(id), MAX(id), MAX(ts), COUNT(*) FROM messages GROUP BY seg ORDER BY seg")
	if err != nil {
		return nil, fmt.Errorf("archive: index: %w", err)
	}
	defer rs.Close()
	byID := map[int64]segStat{}
	var newest segStat // the segment of the newest row: kept, so row ids never start over
	for rs.Next() {
		var s segStat
		if err := rs.Scan(&s.id, &s.minID, &s.maxID, &s.maxTS, &s.rows); err != nil {
			return nil, fmt.Errorf("archive: index: %w", err)
		}
		byID[s.id] = s
		if s.maxID > newest.maxID {
			newest = s
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("archive: index: %w", err)
	}
	ids, err := segIDs(a.dir)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	var out []segStat
	for _, id := range ids {
		if id > cur {
			continue
		}
		s, ok := byID[id]
		if !ok {
			s.id = id
		}
		s.keep = id == cur || id == newest.id
		if fi, err := os.Stat(segName(a.dir, id)); err == nil {
			s.size = fi.Size()
		}
		out = append(out, s)
	}
	return out, nil
}

// dropSegment deletes the rows of segment s through the writer, then its
// file, and returns the rows deleted.
func (a *Archive) dropSegment(ctx context.Context, s segStat) (int64, error) {
	var deleted, size int64
	var took time.Duration
	for lo := s.minID; s.rows > 0 && lo <= s.maxID; lo += size {
		size = a.choreRows(size, took)
		hi := min(lo+size-1, s.maxID)
		start := time.Now()
		n, err := a.deleteOnWriter(ctx, "DELETE FROM messages WHERE id BETWEEN ? AND ? AND seg = ?", lo, hi, s.id)
		took = time.Since(start)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	a.readMu.Lock() // no query is between reading a row and its record
	err := os.Remove(segName(a.dir, s.id))
	a.readMu.Unlock()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return deleted, fmt.Errorf("archive: retention: %w", err)
	}
	return deleted, nil
}

// deleteRows deletes the index rows of the messages r says have expired:
// under r.Time those older than the cutoff, under r.Capacity the oldest
// beyond driver.CapacityKeep once the archive holds driver.CapacityTrigger. The newest
// row always stays, so that row ids never start over (the power-loss
// check reads the rows after a watermark id); it goes once a newer
// message arrives. The messages' bytes stay in their segment until the
// segment is dropped whole. r.Size counts segment files, which row
// deletes do not shrink, and is left to dropSegments.
func (a *Archive) deleteRows(ctx context.Context, r archive.Retention, now time.Time) (int64, error) {
	if r.Time <= 0 && r.Capacity <= 0 {
		return 0, nil
	}
	var newest, count int64
	if err := a.queryRow(ctx, "SELECT IFNULL(MAX(id), 0), COUNT(*) FROM messages", nil, &newest, &count); err != nil {
		return 0, err
	}
	var deleted int64
	if r.Time > 0 {
		n, err := a.deleteWhere(ctx, "ts < ? AND id < ?", now.Add(-r.Time).UnixNano(), newest)
		deleted, count = deleted+n, count-n
		if err != nil {
			return deleted, err
		}
	}
	if r.Capacity > 0 && count >= driver.CapacityTrigger(r.Capacity) {
		var keepFrom int64 // the oldest row kept
		if err := a.queryRow(ctx, "SELECT id FROM messages ORDER BY id DESC LIMIT 1 OFFSET ?", []any{driver.CapacityKeep(r.Capacity) - 1}, &keepFrom); err != nil {
			return deleted, err
		}
		n, err := a.deleteWhere(ctx, "id < ?", keepFrom)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// queryRow scans one row of q on the read connection.
func (a *Archive) queryRow(ctx context.Context, q string, args []any, dest ...any) error {
	a.readMu.RLock()
	defer a.readMu.RUnlock()
	if a.readClosed {
		return archive.ErrClosed
	}
	if err := a.rdb.QueryRowContext(ctx, q, args...).Scan(dest...); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	return nil
}

// deleteWhere deletes the rows matching cond on the writer, a chore at a
// time between two batches, and returns how many it deleted.
func (a *Archive) deleteWhere(ctx context.Context, cond string, args ...any) (int64, error) {
	var deleted, size int64
	var took time.Duration
	for {
		size = a.choreRows(size, took)
		q := "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE " + cond + " LIMIT " + strconv.FormatInt(size, 10) + ")"
		start := time.Now()
		n, err := a.deleteOnWriter(ctx, q, args...)
		took = time.Since(start)
		deleted += n
		if err != nil || n < size {
			return deleted, err
		}
	}
}

// deleteOnWriter runs the DELETE statement q on the writer between two
// batches and returns the rows it deleted.
func (a *Archive) deleteOnWriter(ctx context.Context, q string, args ...any) (int64, error) {
	if err := a.waitReset(ctx); err != nil {
		return 0, err
	}
	var n int64
	var err error
	if werr := a.onWriter(ctx, func() {
		var res interface{ RowsAffected() (int64, error) }
		res, err = a.wcon.ExecContext(ctx, q, args...)
		if err == nil {
			n, err = res.RowsAffected()
		}
		a.changed.Add(uint64(max(n, 0)))
	}); werr != nil {
		return 0, werr
	}
	if err != nil {
		return n, fmt.Errorf("archive: index: %w", err)
	}
	return n, nil
}

// waitReset waits while the syncer brings the WAL to its start over (see
// syncLoop), polling every 5 ms.
func (a *Archive) waitReset(ctx context.Context) error {
	for a.resetting.Load() {
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-a.writerDone:
			t.Stop()
			return archive.ErrClosed
		}
	}
	return nil
}

// onWriter runs f on the writer goroutine between batches and waits for it.
func (a *Archive) onWriter(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case a.ckpt <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-a.writerDone:
		return archive.ErrClosed
	}
	<-done
	return nil
}
