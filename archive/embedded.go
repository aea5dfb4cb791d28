package archive

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the index

	"github.com/couriernet/courier/message"
)

const (
	indexName     = "index.db"
	watermarkName = "synced"
	// itemOverhead is what one queued envelope costs besides its wire bytes.
	itemOverhead = 256
	maxRecord    = message.MaxSize
	// checkpointRows is how many rows the index gains before the next fsync
	// round asks the writer to checkpoint: the WAL holds about 0.3 to 1.2
	// KiB per row, so it stays near 10 MiB at most.
	checkpointRows = 8192
)

const schema = `
CREATE TABLE IF NOT EXISTS messages (
	id            INTEGER PRIMARY KEY, -- append order: segment order
	hash          BLOB    NOT NULL,    -- 32 bytes
	ts            INTEGER NOT NULL,    -- Unix ns, orders with hash
	pubsub_topic  TEXT    NOT NULL,
	content_topic TEXT    NOT NULL,
	seg           INTEGER NOT NULL,    -- segment id
	off           INTEGER NOT NULL,    -- offset of the wire bytes in the segment
	len           INTEGER NOT NULL     -- wire bytes
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_hash ON messages(hash);
CREATE INDEX IF NOT EXISTS messages_time ON messages(ts, hash);
CREATE INDEX IF NOT EXISTS messages_pubsub ON messages(pubsub_topic, ts, hash);
CREATE INDEX IF NOT EXISTS messages_content ON messages(pubsub_topic, content_topic, ts, hash);
PRAGMA user_version = 1;
`

// Embedded is the default archive: an SQLite index of small rows (hash,
// timestamp, topics, segment position) and the message bytes appended once
// to segment files. See the package documentation for the design.
type Embedded struct {
	dir  string
	cfg  Config
	lock *os.File // flock on dir/LOCK, held until Close

	wdb  *sql.DB // one connection: the writer's
	rdb  *sql.DB // read-only connections for queries
	wcon *sql.Conn
	ins  *sql.Stmt

	// queue
	mu     sync.Mutex
	items  []item
	qbytes int64
	qmsgs  int
	closed bool
	room   chan struct{} // closed and replaced when bytes are released
	wake   chan struct{} // one slot: work for the writer

	// segments: the writer's current segment and the ones it finished,
	// which the syncer fsyncs and closes. Guarded by segMu.
	segMu     sync.Mutex
	cur       *os.File
	curID     int64
	retired   []*os.File
	committed int64 // id of the last committed row

	// writer-owned
	end       int64 // next free offset in cur (records committed or pending)
	commitEnd int64 // end of the committed records in cur
	iov       [][]byte
	hdrs      []byte

	syncMu     sync.Mutex // serializes fsync rounds
	quit       chan struct{}
	writerDone chan struct{}
	syncerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
	readMu     sync.RWMutex // queries hold it shared; Close exclusively
	readClosed bool

	stored0 uint64 // messages in the index at Open, after recovery

	st struct {
		inserts, dups, eph, failed, batches, bytes atomic.Uint64
		syncs, syncErrors, ckpts, queries          atomic.Uint64
		commitNs, maxCommitNs, syncNs, ckptNs      atomic.Int64
	}
	// ckpt carries the syncer's checkpoint requests to the writer; the
	// writer closes the channel it receives when the checkpoint is done.
	ckpt chan chan struct{}
}

var _ Archive = (*Embedded)(nil)

type item struct {
	env  *message.Envelope
	done func(error)
	recv int64  // receive time, Unix ns
	size int64  // queue bytes
	crc  uint32 // CRC-32C of the wire bytes, computed by Append off the writer goroutine
}

// Open opens or creates the archive in dir (created with mode 0755 if
// missing) and starts its writer and syncer goroutines. It holds dir until
// Close: a second Open of dir fails with ErrLocked.
//
// Open recovers from a crash: index rows appended after the last fsync
// round whose segment bytes do not read back whole (length and CRC-32C)
// are deleted, and segment bytes past the last index row are cut off. Then
// it fsyncs. Errors wrap ErrBadConfig, ErrLocked, ErrCorrupt or come from
// SQLite or the file system.
func Open(dir string, cfg Config) (*Embedded, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	a := &Embedded{
		dir: dir, cfg: cfg, lock: lock,
		room: make(chan struct{}), wake: make(chan struct{}, 1), ckpt: make(chan chan struct{}),
		quit: make(chan struct{}), writerDone: make(chan struct{}), syncerDone: make(chan struct{}),
	}
	if err := a.openIndex(); err != nil {
		a.closeDBs()
		lock.Close()
		return nil, err
	}
	err = a.recover()
	if err == nil {
		if err = a.wcon.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM messages").Scan(&a.stored0); err != nil {
			err = fmt.Errorf("archive: index: %w", err)
		}
	}
	if err != nil {
		if a.cur != nil {
			a.cur.Close()
		}
		a.closeDBs()
		lock.Close()
		return nil, err
	}
	go a.writeLoop()
	go a.syncLoop()
	return a, nil
}

func (a *Embedded) openIndex() error {
	path := filepath.Join(a.dir, indexName)
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate"
	var err error
	if a.wdb, err = sql.Open("sqlite3", dsn); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	a.wdb.SetMaxOpenConns(1) // the writer's
	a.wdb.SetMaxIdleConns(1)
	a.wdb.SetConnMaxLifetime(0)
	ctx := context.Background()
	if a.wcon, err = a.wdb.Conn(ctx); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	// The writer checkpoints after each fsync round (see checkpoint), so
	// SQLite never checkpoints on its own on the commit path.
	if _, err = a.wcon.ExecContext(ctx, "PRAGMA page_size=1024; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"+schema); err != nil {
		return fmt.Errorf("archive: index schema: %w", err)
	}
	a.ins, err = a.wcon.PrepareContext(ctx,
		"INSERT OR IGNORE INTO messages(hash, ts, pubsub_topic, content_topic, seg, off, len) VALUES (?,?,?,?,?,?,?)")
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	if a.rdb, err = sql.Open("sqlite3", dsn+"&_query_only=1"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	a.rdb.SetMaxOpenConns(4)
	a.rdb.SetMaxIdleConns(4)
	return nil
}

// recover makes index and segments agree (see Open) and opens the segment
// to append to.
func (a *Embedded) recover() error {
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
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		fi, err := a.cur.Stat()
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if fi.Size() < lastEnd {
			return fmt.Errorf("%w: %s has %d bytes, index needs %d", ErrCorrupt, a.cur.Name(), fi.Size(), lastEnd)
		}
		if err := a.cur.Truncate(lastEnd); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	a.curID, a.end, a.commitEnd, a.committed = lastSeg, lastEnd, lastEnd, lastID
	return a.syncOnce()
}

// dropTornRows deletes the rows after watermark mark whose bytes do not
// read back whole: after a power loss the index may hold rows whose
// segment bytes never reached the disk.
func (a *Embedded) dropTornRows(ctx context.Context, mark int64) error {
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

func (a *Embedded) readWatermark() int64 {
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

func (a *Embedded) writeWatermark(v int64) error {
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

// Append implements Archive.
func (a *Embedded) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
	if env == nil || env.Message() == nil {
		return fmt.Errorf("%w: nil envelope or message", ErrBadEnvelope)
	}
	if n := len(env.Wire()); n > maxRecord {
		return fmt.Errorf("%w: %d wire bytes, over %d", ErrBadEnvelope, n, maxRecord)
	}
	it := item{env: env, done: done, recv: a.cfg.Now().UnixNano(), size: int64(len(env.Wire())) + itemOverhead}
	if !env.Message().Ephemeral {
		it.crc = crc32.Checksum(env.Wire(), castagnoli)
	}
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return ErrClosed
		}
		if a.qbytes == 0 || a.qbytes+it.size <= a.cfg.QueueBytes {
			a.items = append(a.items, it)
			a.qbytes += it.size
			a.qmsgs++
			a.mu.Unlock()
			select {
			case a.wake <- struct{}{}:
			default:
			}
			return nil
		}
		room := a.room
		a.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take moves up to MaxBatch queued items into batch. It reports false when
// the archive is closed and nothing is queued.
func (a *Embedded) take(batch []item) ([]item, bool) {
	for {
		a.mu.Lock()
		if n := len(a.items); n > 0 {
			if n > a.cfg.MaxBatch {
				n = a.cfg.MaxBatch
			}
			batch = append(batch[:0], a.items[:n]...)
			rest := copy(a.items, a.items[n:])
			clear(a.items[rest:])
			a.items = a.items[:rest]
			a.mu.Unlock()
			return batch, true
		}
		closed := a.closed
		a.mu.Unlock()
		if closed {
			return batch, false
		}
		select {
		case <-a.wake:
		case done := <-a.ckpt:
			a.checkpoint()
			close(done)
		}
	}
}

// release gives back the queue bytes of a finished batch.
func (a *Embedded) release(batch []item) {
	var n int64
	for i := range batch {
		n += batch[i].size
	}
	a.mu.Lock()
	a.qbytes -= n
	a.qmsgs -= len(batch)
	close(a.room)
	a.room = make(chan struct{})
	a.mu.Unlock()
}

func (a *Embedded) writeLoop() {
	defer close(a.writerDone)
	var batch []item
	for {
		var ok bool
		batch, ok = a.take(batch)
		if !ok {
			return
		}
		err := a.commit(batch)
		a.release(batch)
		for i := range batch {
			e := err
			if batch[i].env.Message().Ephemeral {
				e = nil // never stored, so never failed
				a.st.eph.Add(1)
			} else if err != nil {
				a.st.failed.Add(1)
			}
			if d := batch[i].done; d != nil {
				d(e)
			}
		}
		clear(batch)
		select {
		case done := <-a.ckpt:
			a.checkpoint()
			close(done)
		default:
		}
	}
}

// commit stores batch: one index transaction, the new records written to
// the segment with pwritev before the transaction commits.
func (a *Embedded) commit(batch []item) (err error) {
	start := time.Now()
	defer func() {
		d := time.Since(start).Nanoseconds()
		a.st.batches.Add(1)
		a.st.commitNs.Add(d)
		for {
			m := a.st.maxCommitNs.Load()
			if d <= m || a.st.maxCommitNs.CompareAndSwap(m, d) {
				break
			}
		}
	}()
	ctx := context.Background()
	if _, err = a.wcon.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	var inserts, dups, bytes uint64
	var last int64 // id of the last row inserted
	defer func() {
		if err != nil {
			a.wcon.ExecContext(ctx, "ROLLBACK")
			a.end = a.commitEnd
			return
		}
		a.commitEnd = a.end
		a.st.inserts.Add(inserts)
		a.st.dups.Add(dups)
		a.st.bytes.Add(bytes)
	}()
	if cap(a.hdrs) < recHeaderSize*len(batch) {
		a.hdrs = make([]byte, recHeaderSize*len(batch))
	}
	a.iov = a.iov[:0]
	pending := a.end // where the first pending iovec goes
	for i := range batch {
		env := batch[i].env
		msg := env.Message()
		if msg.Ephemeral {
			continue
		}
		wire := env.Wire()
		rec := int64(recHeaderSize + len(wire))
		if a.end+rec > a.cfg.SegmentSize && a.end > int64(segHeaderSize) {
			if err = writeVec(a.cur, a.iov, pending); err != nil {
				return fmt.Errorf("archive: segment: %w", err)
			}
			a.iov = a.iov[:0]
			if err = a.roll(); err != nil {
				return err
			}
			pending = a.end
		}
		ts := msg.Timestamp
		if ts <= 0 {
			ts = batch[i].recv
		}
		h := env.Hash()
		res, err := a.ins.ExecContext(ctx, h[:], ts, env.PubsubTopic(), msg.ContentTopic, a.curID, a.end+recHeaderSize, len(wire))
		if err != nil {
			return fmt.Errorf("archive: index: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			dups++
			continue
		}
		if id, err := res.LastInsertId(); err == nil {
			last = id
		}
		hdr := a.hdrs[i*recHeaderSize : (i+1)*recHeaderSize]
		putRecHeader(hdr, len(wire), batch[i].crc)
		a.iov = append(a.iov, hdr, wire)
		a.end += rec
		inserts++
		bytes += uint64(rec)
	}
	if len(a.iov) > 0 {
		if err = writeVec(a.cur, a.iov, pending); err != nil {
			return fmt.Errorf("archive: segment: %w", err)
		}
	}
	clear(a.iov)
	if _, err = a.wcon.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	if inserts > 0 {
		a.segMu.Lock()
		a.committed = last
		a.segMu.Unlock()
	}
	return nil
}

// roll starts a new segment; the syncer fsyncs and closes the old one.
func (a *Embedded) roll() error {
	f, err := createSegment(a.dir, a.curID+1)
	if err != nil {
		return fmt.Errorf("archive: segment: %w", err)
	}
	a.segMu.Lock()
	a.retired = append(a.retired, a.cur)
	a.cur, a.curID = f, a.curID+1
	a.segMu.Unlock()
	a.end, a.commitEnd = int64(segHeaderSize), int64(segHeaderSize)
	return nil
}

func (a *Embedded) syncLoop() {
	defer close(a.syncerDone)
	t := time.NewTicker(a.cfg.FsyncInterval)
	defer t.Stop()
	var ckptAt uint64 // inserts at the last checkpoint
	for {
		select {
		case <-t.C:
			if err := a.syncOnce(); err != nil {
				a.st.syncErrors.Add(1) // tried again on the next tick
				continue
			}
			if n := a.st.inserts.Load(); n-ckptAt >= checkpointRows {
				// Right after the fsync round the kernel holds little
				// segment data with blocks allocated, so the checkpoint's
				// own fsyncs do not wait for it. Wait until it is done, so
				// the next round's segment fsyncs do not overlap it.
				done := make(chan struct{})
				select {
				case a.ckpt <- done:
					ckptAt = n
				case <-a.quit:
					return
				}
				select {
				case <-done:
				case <-a.quit:
					return
				}
			}
		case <-a.quit:
			return
		}
	}
}

// syncOnce makes every committed row durable: it fsyncs the segments, then
// the directory and the index's WAL, and records the last row so covered
// in the watermark file. A segment whose fsync fails stays open for the
// next round, and the watermark does not move.
func (a *Embedded) syncOnce() error {
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
	a.st.syncs.Add(1)
	a.st.syncNs.Add(time.Since(start).Nanoseconds())
	if err != nil {
		return fmt.Errorf("archive: fsync: %w", err)
	}
	return nil
}

// syncIndex fsyncs the index's WAL, which holds every commit since the
// last checkpoint: with synchronous=NORMAL, SQLite does not fsync on commit.
func (a *Embedded) syncIndex() error {
	f, err := os.OpenFile(filepath.Join(a.dir, indexName+"-wal"), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkpoint copies the WAL into the database file. The writer runs it
// between batches when the syncer asks, so that at its next transaction
// SQLite finds the WAL fully copied and starts it over: a checkpoint run
// concurrently with the writer would never catch up, and the WAL would grow
// without bound. It is passive: it does not wait for readers.
func (a *Embedded) checkpoint() {
	start := time.Now()
	var busy, logFrames, copied int
	err := a.wcon.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied)
	if err != nil {
		a.st.syncErrors.Add(1)
	}
	a.st.ckpts.Add(1)
	a.st.ckptNs.Add(time.Since(start).Nanoseconds())
}

// Close implements Archive.
func (a *Embedded) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.room)
		a.room = make(chan struct{})
		a.mu.Unlock()
		select {
		case a.wake <- struct{}{}:
		default:
		}
		<-a.writerDone
		close(a.quit)
		<-a.syncerDone
		err := a.syncOnce()
		a.readMu.Lock()
		a.readClosed = true
		a.readMu.Unlock()
		a.segMu.Lock()
		for _, f := range a.retired { // left by a failed fsync, reported above
			f.Close()
		}
		a.retired = nil
		if a.cur != nil {
			if e := a.cur.Close(); err == nil {
				err = e
			}
			a.cur = nil
		}
		a.segMu.Unlock()
		if e := a.closeDBs(); err == nil {
			err = e
		}
		a.lock.Close() // releases the flock
		a.closeErr = err
	})
	return a.closeErr
}

func (a *Embedded) closeDBs() error {
	var err error
	if a.ins != nil {
		a.ins.Close()
	}
	if a.wcon != nil {
		a.wcon.Close()
	}
	if a.wdb != nil {
		err = a.wdb.Close()
	}
	if a.rdb != nil {
		if e := a.rdb.Close(); err == nil {
			err = e
		}
	}
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	return nil
}

// Stats returns a snapshot of the archive's counters.
func (a *Embedded) Stats() Stats {
	a.mu.Lock()
	qb, qm := a.qbytes, a.qmsgs
	a.mu.Unlock()
	return Stats{
		Messages: a.stored0 + a.st.inserts.Load(),
		Inserts:  a.st.inserts.Load(), Duplicates: a.st.dups.Load(), Ephemeral: a.st.eph.Load(),
		Failed: a.st.failed.Load(), Batches: a.st.batches.Load(), BytesAppended: a.st.bytes.Load(),
		CommitTime: time.Duration(a.st.commitNs.Load()), MaxCommit: time.Duration(a.st.maxCommitNs.Load()),
		Syncs: a.st.syncs.Load(), SyncErrors: a.st.syncErrors.Load(), SyncTime: time.Duration(a.st.syncNs.Load()),
		Checkpoints: a.st.ckpts.Load(), CheckpointTime: time.Duration(a.st.ckptNs.Load()),
		Queries: a.st.queries.Load(), QueuedBytes: qb, QueuedMessages: qm,
	}
}

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
