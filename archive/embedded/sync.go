package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const (
	watermarkName = "synced"
	// checkpointRows is how many rows the index gains or loses before the
	// next fsync round checkpoints: the WAL holds about 1.5 KiB per row
	// inserted.
	checkpointRows = 8192
)

// syncLoop runs the fsync rounds and, after a round with checkpointRows
// changed rows, a checkpoint beside the writer (checkpointBeside); when
// the WAL is walResetFrames long, it brings it to a start over
// (startWALOver). Right after the fsync round the kernel holds little
// segment data with blocks allocated, so the checkpoint's own fsyncs do
// not wait for it.
func (a *Archive) syncLoop() {
	defer close(a.syncerDone)
	t := time.NewTicker(a.cfg.FsyncInterval)
	defer t.Stop()
	var ckptAt uint64 // a.changed at the last checkpoint
	for {
		select {
		case <-t.C:
			if err := a.syncOnce(); err != nil {
				a.st.SyncErrors.Add(1) // tried again on the next tick
				continue
			}
			n := a.changed.Load()
			if n-ckptAt < checkpointRows {
				continue
			}
			ckptAt = n
			frames, copied := a.checkpointBeside()
			if frames < walResetFrames {
				continue
			}
			if !a.startWALOver(copied) {
				return
			}
		case <-a.quit:
			return
		}
	}
}

// startWALOver brings a WAL of walResetFrames or more, of which the
// syncer's last checkpoint copied copied frames, to a start over. It
// fsyncs the database file beside the writer, then runs more checkpoints
// beside it, each followed by an fsync of the database file, until they
// leave less than walTailFrames (at most walTailPasses checkpoints in
// all); then the writer checkpoints the rest between batches. A
// checkpoint beside a busy writer never catches up with it, so SQLite
// never fsyncs the database file after one: the pages copied since the
// WAL last started over may all still wait in the kernel, and the
// writer's checkpoint, which does catch up and so fsyncs, would wait for
// them to reach the disk (at ten million messages 5.75 s per million messages, see
// docs/archive.md); with the fsyncs here it waits for those of the last
// pass only. It returns false if the archive closed meanwhile.
func (a *Archive) startWALOver(copied int) bool {
	// Each pass copies what was written during the one before, which
	// takes less time, until the writer's is short. Retention's deletes
	// wait meanwhile (deleteOnWriter): a writer deleting as fast as it can
	// writes frames faster than a checkpoint copies them.
	a.resetting.Store(true)
	defer a.resetting.Store(false)
	a.syncDB()
	for pass := 1; pass < walTailPasses; pass++ {
		f, c := a.checkpointBeside()
		a.syncDB()
		tail := f - copied // the frames written during the pass before
		copied = c
		if tail < walTailFrames {
			break
		}
	}
	// Wait until the writer's checkpoint is done, so the next round's
	// segment fsyncs do not overlap it.
	done := make(chan struct{})
	select {
	case a.ckpt <- func() { a.checkpoint(); close(done) }:
	case <-a.quit:
		return false
	}
	select {
	case <-done:
		return true
	case <-a.quit:
		return false
	}
}

// syncOnce makes every committed row durable: it fsyncs the segments, then
// the directory and the index's WAL, and records the last row so covered
// in the watermark file. A segment whose fsync fails stays open for the
// next round, and the watermark does not move.
func (a *Archive) syncOnce() error {
	a.syncMu.Lock()
	defer a.syncMu.Unlock()
	start := time.Now()
	a.segMu.Lock()
	mark := a.committed
	retired := a.retired
	a.retired = nil
	cur := a.cur
	a.segMu.Unlock()
	var err error
	var unsynced []*os.File
	for _, f := range retired {
		if e := f.Sync(); e != nil {
			if err == nil {
				err = e
			}
			unsynced = append(unsynced, f) // the next round tries again
			continue
		}
		if e := f.Close(); e != nil && err == nil {
			err = e
		}
	}
	if len(unsynced) > 0 {
		a.segMu.Lock()
		a.retired = append(unsynced, a.retired...)
		a.segMu.Unlock()
	}
	if cur != nil {
		if e := cur.Sync(); e != nil && err == nil {
			err = e
		}
	}
	if e := syncDir(a.dir); e != nil && err == nil {
		err = e
	}
	if e := a.syncIndex(); e != nil && err == nil {
		err = e
	}
	if err == nil {
		err = a.writeWatermark(mark)
	}
	a.st.Syncs.Add(1)
	a.st.SyncNs.Add(time.Since(start).Nanoseconds())
	if err != nil {
		return fmt.Errorf("archive: fsync: %w", err)
	}
	return nil
}

func (a *Archive) readWatermark() int64 {
	b, err := os.ReadFile(filepath.Join(a.dir, watermarkName))
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func (a *Archive) writeWatermark(v int64) error {
	tmp := filepath.Join(a.dir, watermarkName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(v, 10))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(a.dir, watermarkName)); err != nil {
		return err
	}
	return syncDir(a.dir)
}
