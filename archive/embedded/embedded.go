package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
	"github.com/couriernet/courier/archive/internal/queue"
	"github.com/couriernet/courier/message"
)

// Defaults and bounds of Options.
const (
	DefaultFsyncInterval = time.Second
	DefaultSegmentSize   = 256 << 20
	DefaultCacheSize     = 64 << 20
	// MinSegmentSize is the smallest SegmentSize: one record of the largest
	// message fits.
	MinSegmentSize = int64(segHeaderSize + recHeaderSize + message.MaxSize)
)

// Options are the embedded archive's own settings, beside the
// archive.Config every driver takes. The zero value gives the defaults.
type Options struct {
	// FsyncInterval is how often segments and index are fsynced (power-loss
	// durability). Committed messages survive the kill of the process at
	// once; a power loss may lose up to this interval. 0 means
	// DefaultFsyncInterval (1 s); negative is invalid.
	FsyncInterval time.Duration
	// SegmentSize is the size in bytes at which the writer starts a new
	// segment file. 0 means DefaultSegmentSize (256 MiB); less than
	// MinSegmentSize is invalid.
	SegmentSize int64
	// IndexPath is the SQLite index file (with SQLite's -wal and -shm
	// files beside it), for nwaku's --store-message-db-url=sqlite://PATH
	// (archive/dburl). "" means index.db in the archive's directory.
	IndexPath string
	// CacheSize is the SQLite page cache of the writer's connection to the
	// index, in bytes; each of the four query connections has a quarter of
	// it, so the archive's caches take at most twice CacheSize, and only
	// as the index grows. The writer reads the inner pages of the hash
	// index and the last pages of the other B-trees, which it holds at ten
	// million messages (the B-trees then have 44,000 inner pages of 1 KiB
	// in all), and the leaves of the newest time partition of the hash
	// index, where inserts land (about 20,000 pages when ten million
	// messages span 48 hours; package documentation, "The hash index by
	// time partition"). 0 means DefaultCacheSize (64 MiB); negative is
	// invalid.
	CacheSize int64
	// MmapSize is how many bytes of the index file each of the four query
	// connections maps into memory (SQLite's mmap_size; SQLite as built
	// here maps at most 2 GiB - 64 KiB, an index of about ten million
	// messages); pages past it are read with pread(2). The writer and the
	// syncer do not map the file. The mapping takes address space, not
	// memory of the process's own: the pages it shows are the kernel's
	// page cache of the index file, which reads fill anyway, and the
	// kernel may drop them as it would any cached file page. They do count
	// in the process's resident set size (RSS), once for each connection
	// that touched them: at ten million messages, after 4,000 queries
	// (1,000 of them of 20 random hashes), the store scenario's peak RSS
	// was 2.09 GB against 410 MB without the mapping. A small archive
	// maps a small file. A disk error while a query reads a mapped page
	// is a SIGBUS that ends the process, where pread(2) would have given
	// the query an error, which is why mapping is off unless asked for.
	// 0 (the default) maps nothing; negative is invalid.
	MmapSize int64
}

// config is what an Archive runs with: the common settings and its
// options, every default filled in.
type config struct {
	driver.Settings
	Options
}

// resolve fills in the defaults of cfg and o and checks them. Errors wrap
// archive.ErrConfig.
func resolve(cfg archive.Config, o Options) (config, error) {
	s, err := driver.Resolve(cfg)
	if err != nil {
		return config{}, err
	}
	if o.FsyncInterval == 0 {
		o.FsyncInterval = DefaultFsyncInterval
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	switch {
	case o.FsyncInterval < 0:
		return config{}, driver.Errorf(archive.ErrConfig, "FsyncInterval %v is negative", o.FsyncInterval)
	case o.SegmentSize < MinSegmentSize:
		return config{}, driver.Errorf(archive.ErrConfig, "SegmentSize %d: 0 or at least %d", o.SegmentSize, MinSegmentSize)
	case o.CacheSize < 0:
		return config{}, driver.Errorf(archive.ErrConfig, "CacheSize %d is negative", o.CacheSize)
	case o.MmapSize < 0:
		return config{}, driver.Errorf(archive.ErrConfig, "MmapSize %d is negative", o.MmapSize)
	case o.SegmentSize > maxSegmentSize:
		return config{}, driver.Errorf(archive.ErrConfig, "SegmentSize %d over %d", o.SegmentSize, int64(maxSegmentSize))
	}
	return config{Settings: s, Options: o}, nil
}

// Archive is the default archive: an SQLite index of small rows (hash,
// timestamp, topics, segment position) and the message bytes appended once
// to segment files. See the package documentation for the design.
//
// # Goroutines and locks
//
// Three kinds of goroutine touch an Archive: callers (Append, Query,
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
type Archive struct {
	// Set by Open, read-only afterwards.
	dir     string
	cfg     config
	lock    *os.File // flock on dir/LOCK, held until Close
	stored0 uint64   // messages in the index at Open, after recovery

	// q is the queue between callers (Append) and the writer; its own
	// mutex guards it.
	q *queue.Queue

	// Owned by the writer goroutine (by Open before it starts, by Close
	// after it ends); no lock.
	wdb        *sql.DB   // one connection: the writer's
	wcon       *sql.Conn // that connection; the checkpoints that restart the WAL run on it too
	begin      *sql.Stmt // BEGIN IMMEDIATE
	commitTx   *sql.Stmt // COMMIT
	rollback   *sql.Stmt // ROLLBACK
	ins        *sql.Stmt // insertRow
	insAnyTime *sql.Stmt // insertRowAnyTime
	topicSel   *sql.Stmt
	topicIns   *sql.Stmt
	topics     map[string]int64 // topic ids (topicID)
	end        int64            // next free offset in cur (records committed or pending)
	commitEnd  int64            // end of the committed records in cur
	reserved   int64            // blocks of cur reserved up to here (reserveTo)
	iov        [][]byte
	hdrs       []byte

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

	// cdb is the syncer's connection, for its checkpoints beside the writer.
	cdb *sql.DB

	// Lifecycle: Close closes quit after the writer has ended (writerDone),
	// then waits for the syncer (syncerDone).
	quit       chan struct{}
	writerDone chan struct{}
	syncerDone chan struct{}
	closeOnce  sync.Once
	// ckpt carries the syncer's checkpoint requests to the writer, which
	// runs them between batches or while it waits for work.
	ckpt chan func()

	// st is updated atomically by whoever does the work.
	st driver.Counters
	// changed counts the rows the writer inserted or deleted, for the
	// syncer's checkpoints (retention's deletes count in st only after a
	// run).
	changed atomic.Uint64
	// chore is the size of the retention goroutine's next delete
	// (choreRows).
	chore int64
	// resetting is set by the syncer while it brings the WAL to a start
	// over; retention's deletes wait for it (waitReset).
	resetting atomic.Bool
	// retention applies Config.Retention; its deletes run on the writer,
	// sent through ckpt.
	retention *driver.RetentionLoop
}

var _ archive.Archive = (*Archive)(nil)

// Open opens or creates the archive in dir (created with mode 0755 if
// missing) and starts its writer and syncer goroutines. It holds dir until
// Close: a second Open of dir fails with archive.ErrLocked.
//
// Open recovers from a crash: index rows appended after the last fsync
// round whose segment bytes do not read back whole (length and CRC-32C)
// are deleted, and segment bytes past the last index row are cut off. Then
// it fsyncs. Errors wrap archive.ErrConfig, archive.ErrLocked,
// archive.ErrCorrupt, archive.ErrSchema, archive.ErrNwakuDatabase or come
// from SQLite or the file system.
func Open(dir string, cfg archive.Config, opts Options) (*Archive, error) {
	c, err := resolve(cfg, opts)
	if err != nil {
		return nil, err
	}
	// Before anything is created beside it: nwaku's file stays untouched.
	if err := refuseNwakuSQLite(indexPath(dir, &c.Options)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	a := &Archive{
		dir: dir, cfg: c, lock: lock,
		q: queue.New(c.QueueBytes), ckpt: make(chan func()), topics: map[string]int64{}, chore: 1024,
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
	a.retention = driver.StartRetention(c.Settings, a.retain, &a.st)
	return a, nil
}

// Close implements archive.Archive. Its error joins every step's that
// failed (the last fsync round, the segment and index closes); a second
// Close returns nil.
func (a *Archive) Close() error {
	var err error
	a.closeOnce.Do(func() {
		a.retention.Stop() // before the writer, which runs its deletes
		a.q.Close()
		<-a.writerDone
		close(a.quit)
		<-a.syncerDone
		errs := []error{a.syncOnce()}
		a.readMu.Lock()
		a.readClosed = true
		a.readMu.Unlock()
		a.segMu.Lock()
		for _, f := range a.retired { // left by a failed fsync, reported above
			f.Close()
		}
		a.retired = nil
		if a.cur != nil {
			// Truncating to its size gives back the blocks reserved past
			// it (ext4 and XFS free them even when the size stays).
			errs = append(errs, a.cur.Truncate(a.commitEnd), a.cur.Close())
			a.cur = nil
		}
		a.segMu.Unlock()
		errs = append(errs, a.closeDBs(), a.lock.Close()) // the lock's close releases the flock
		err = errors.Join(errs...)
	})
	return err
}

// Stats returns a snapshot of the archive's counters.
func (a *Archive) Stats() archive.Stats {
	qb, qm := a.q.Len()
	s := a.st.Snapshot()
	s.Messages = a.stored0 + s.Inserts - min(s.Deleted, a.stored0+s.Inserts)
	s.QueuedBytes, s.QueuedMessages = qb, qm
	return s
}
