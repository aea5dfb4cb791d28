package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/couriernet/courier/archive"
)

// recover makes index and segments agree (see Open) and opens the segment
// to append to.
func (a *Archive) recover() error {
	ctx := context.Background()
	mark := a.readWatermark()
	if err := a.dropTornRows(ctx, mark); err != nil {
		return err
	}
	var lastSeg, lastEnd, lastID int64
	err := a.wcon.QueryRowContext(ctx, "SELECT id, seg, off+len FROM messages ORDER BY id DESC LIMIT 1").Scan(&lastID, &lastSeg, &lastEnd)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("archive: index: %w", err)
	}
	ids, err := segIDs(a.dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	for _, id := range ids {
		if id > lastSeg {
			if err := os.Remove(segName(a.dir, id)); err != nil {
				return fmt.Errorf("archive: %w", err)
			}
		}
	}
	if lastSeg == 0 {
		lastSeg, lastEnd = 1, int64(segHeaderSize)
		if a.cur, err = createSegment(a.dir, lastSeg); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	} else {
		if a.cur, err = os.OpenFile(segName(a.dir, lastSeg), os.O_RDWR, 0); err != nil {
			return fmt.Errorf("%w: %v", archive.ErrCorrupt, err)
		}
		fi, err := a.cur.Stat()
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if fi.Size() < lastEnd {
			return fmt.Errorf("%w: %s has %d bytes, index needs %d", archive.ErrCorrupt, a.cur.Name(), fi.Size(), lastEnd)
		}
		if err := a.cur.Truncate(lastEnd); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	a.curID, a.end, a.commitEnd, a.committed, a.reserved = lastSeg, lastEnd, lastEnd, lastID, lastEnd
	return a.syncOnce()
}

// dropTornRows deletes the rows after watermark mark whose bytes do not
// read back whole: after a power loss the index may hold rows whose
// segment bytes never reached the disk.
func (a *Archive) dropTornRows(ctx context.Context, mark int64) error {
	rows, err := a.wcon.QueryContext(ctx, "SELECT id, seg, off, len FROM messages WHERE id > ? ORDER BY id", mark)
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	files := segFiles{dir: a.dir}
	defer files.close()
	var torn []int64
	for rows.Next() {
		var id, seg, off int64
		var n int
		if err := rows.Scan(&id, &seg, &off, &n); err != nil {
			rows.Close()
			return fmt.Errorf("archive: index: %w", err)
		}
		f, err := files.get(seg)
		if err == nil {
			_, err = readRecord(f, off, n)
		}
		if err != nil {
			torn = append(torn, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	for _, id := range torn {
		if _, err := a.wcon.ExecContext(ctx, "DELETE FROM messages WHERE id = ?", id); err != nil {
			return fmt.Errorf("archive: index: %w", err)
		}
	}
	return nil
}
