package archive

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
)

// Embedded is the default archive: an SQLite index of small rows (hash,
// timestamp, topics, segment position) and the message bytes appended once
// to segment files. See the package documentation for the design.
//
// # Goroutines and locks
//
// Three kinds of goroutine touch an Embedded: callers (Append, Query,
// Stats, Close), the writer (writeLoop: takes batches from the queue,
// writes segments, commits the index) and the syncer (syncLoop: fsyncs
// segments, directory and index WAL, then moves the watermark). The fields
// below are grouped by the goroutine that owns them.
//
// Lock order: syncMu before segMu. The queue's mutex and readMu are never
// held together with another lock, and no lock is held while waiting on a
// channel or calling a done callback. The writer and the syncer talk through wake,
// ckpt and quit, never by holding each other's locks. The retention
// goroutine sends its deletes to the writer through ckpt too, and takes
// readMu exclusively only to remove a segment file.
type Embedded struct {
	// Set by Open, read-only afterwards.
	dir     string
	cfg     Config
	lock    *os.File // flock on dir/LOCK, held until Close
	stored0 uint64   // messages in the index at Open, after recovery

	// q is the queue between callers (Append) and the writer; its own
	// mutex guards it.
	q *writeQueue

	// Owned by the writer goroutine (by Open before it starts, by Close
	// after it ends); no lock.
	wdb       *sql.DB   // one connection: the writer's
	wcon      *sql.Conn // that connection; checkpoints run on it too
	ins       *sql.Stmt
	end       int64 // next free offset in cur (records committed or pending)
	commitEnd int64 // end of the committed records in cur
	iov       [][]byte
	hdrs      []byte

	// Shared by the writer and the syncer, guarded by segMu. The writer is
	// the only one to replace cur and curID (in roll, holding segMu), so it
	// reads them without the lock; the syncer takes retired and reads cur
	// and committed holding it.
	segMu     sync.Mutex
	cur       *os.File   // the segment being appended to
	curID     int64      // its id
	retired   []*os.File // finished segments not yet fsynced and closed
	committed int64      // id of the last committed row

	// syncMu serializes fsync rounds: the syncer's, Open's and Close's.
	syncMu sync.Mutex

	// Queries hold readMu shared; Close takes it exclusively to set
	// readClosed before it closes rdb.
	readMu     sync.RWMutex
	readClosed bool
	rdb        *sql.DB // read-only connections for queries

	// Lifecycle: Close closes quit after the writer has ended (writerDone),
	// then waits for the syncer (syncerDone).
	quit       chan struct{}
	writerDone chan struct{}
	syncerDone chan struct{}
	closeOnce  sync.Once
	closeErr   error
	// ckpt carries the syncer's checkpoint requests to the writer, which
	// runs them between batches or while it waits for work.
	ckpt chan func()

	// st is updated atomically by whoever does the work.
	st counters
	// retention applies Config.Retention; its deletes run on the writer,
	// sent through ckpt.
	retention *retentionLoop
}

var _ Archive = (*Embedded)(nil)

// Open opens or creates the archive in dir (created with mode 0755 if
// missing) and starts its writer and syncer goroutines. It holds dir until
// Close: a second Open of dir fails with ErrLocked.
//
// Open recovers from a crash: index rows appended after the last fsync
// round whose segment bytes do not read back whole (length and CRC-32C)
// are deleted, and segment bytes past the last index row are cut off. Then
// it fsyncs. Errors wrap ErrConfig, ErrLocked, ErrCorrupt or come from
// SQLite or the file system.
func Open(dir string, cfg Config) (*Embedded, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Before anything is created beside it: nwaku's file stays untouched.
	if err := refuseNwakuSQLite(indexPath(dir, &cfg)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	a := &Embedded{
		dir: dir, cfg: cfg, lock: lock,
		q: newWriteQueue(cfg.QueueBytes), ckpt: make(chan func()),
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
	a.retention = startRetention(cfg, a, &a.st)
	return a, nil
}

// Close implements Archive.
func (a *Embedded) Close() error {
	a.closeOnce.Do(func() {
		a.retention.stop() // before the writer, which runs its deletes
		a.q.close()
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

// Stats returns a snapshot of the archive's counters.
func (a *Embedded) Stats() Stats {
	qb, qm := a.q.len()
	s := a.st.snapshot()
	s.Messages = a.stored0 + s.Inserts - min(s.Deleted, a.stored0+s.Inserts)
	s.QueuedBytes, s.QueuedMessages = qb, qm
	return s
}

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
