package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const indexName = "index.db"

// indexPath returns the index file's path: Options.IndexPath, else
// index.db in the archive's directory.
func (a *Archive) indexPath() string { return indexPath(a.dir, &a.cfg.Options) }

func indexPath(dir string, o *Options) string {
	if o.IndexPath != "" {
		return o.IndexPath
	}
	return filepath.Join(dir, indexName)
}

// Connection settings of the index. The writer's page cache holds the
// inner pages inserts descend through and the pages they append to (see
// Options.CacheSize); each of the readConns read connections has a
// quarter of it, and maps the file when Options.MmapSize asks it to.
const (
	readConns = 4
	// walResetFrames is how many frames the WAL may hold before the writer
	// checkpoints, between two batches, what the syncer's checkpoints
	// left, so that SQLite starts the WAL over (see syncLoop): each time
	// the writer stops for it, so the larger, the rarer. 1 KiB pages: a
	// WAL of about 270 MB at most, 20 s of inserts at 10,000 msg/s.
	walResetFrames = 256 << 10
	// walTailFrames is how many frames the syncer's checkpoints may leave
	// to the writer's; walTailPasses bounds the checkpoints it runs to get
	// there (startWALOver: each is followed by an fsync of the database
	// file, and copies what was written during the one before).
	walTailFrames = 4 << 10
	walTailPasses = 8
)

// insertRow stores a row unless one with its hash is stored: ?1 is the
// hkey, ?2 the hash, ?3 the message's own timestamp; 0 rows affected is a
// duplicate. The timestamp is part of the hash (waku.md §1,
// "Deterministic hash"), so a stored duplicate is in the same time
// partition and one probe of the hash index finds it.
const insertRow = `INSERT INTO messages(hkey, hash, ts, pubsub_id, content_id, seg, off, len)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
	WHERE NOT EXISTS (SELECT 1 FROM messages INDEXED BY messages_part_hkey
		WHERE ` + partExpr + ` = (?3 >> ` + partShift + `) AND hkey = ?1 AND hash = ?2)`

// insertRowAnyTime is insertRow for a message without a timestamp, stored
// at its receive time (?3): a duplicate received earlier has another, so
// it looks in every time partition.
var insertRowAnyTime = partitions(minTS, maxTS) + `INSERT INTO messages(hkey, hash, ts, pubsub_id, content_id, seg, off, len)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
	WHERE NOT EXISTS (SELECT 1 FROM messages INDEXED BY messages_part_hkey
		WHERE ` + partExpr + ` IN (SELECT p FROM parts) AND hkey = ?1 AND hash = ?2)`

// minTS and maxTS are the lo and hi of partitions for every timestamp a
// row can have (a receive time from archive.Config.Now may be before 1970).
var minTS, maxTS = strconv.FormatInt(math.MinInt64, 10), strconv.FormatInt(math.MaxInt64, 10)

// partitions returns a recursive common table expression, parts(p), of
// the time partitions (partExpr) that hold rows with timestamps from lo to
// hi (SQL expressions, Unix ns, both ends inclusive): each step probes the
// time index once for the first row of the next partition, so a lookup by
// hash probes the partitions that hold rows, not every span between the
// first and the last. The last p may be past hi's partition or NULL.
func partitions(lo, hi string) string {
	return `WITH RECURSIVE parts(p) AS (
		SELECT min(ts) >> ` + partShift + ` FROM messages WHERE ts >= ` + lo + `
		UNION ALL
		SELECT (SELECT min(ts) FROM messages WHERE ts >= (p + 1) << ` + partShift + `) >> ` + partShift + `
		FROM parts WHERE p < (` + hi + `) >> ` + partShift + `)
	`
}

func (a *Archive) openIndex() error {
	path := a.indexPath() // Open has refused an nwaku database there
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_synchronous=NORMAL&_busy_timeout=10000&_txlock=immediate"
	cache := func(bytes int64) string { return "&_cache_size=" + strconv.FormatInt(-max(bytes>>10, 1), 10) }
	// The writer's connection writes the WAL through walVFS (walvfs.go).
	if err := walVFSOnce(); err != nil {
		return err
	}
	if pageCacheErr != nil {
		a.cfg.Logger.Info("archive: index: commits walk the writer's page cache (pcache.go)", "err", pageCacheErr)
	}
	var err error
	if a.wdb, err = sql.Open(sqliteDriver, dsn+cache(a.cfg.CacheSize)+"&vfs="+walVFS); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	a.wdb.SetMaxOpenConns(1) // the writer's
	a.wdb.SetMaxIdleConns(1)
	a.wdb.SetConnMaxLifetime(0)
	ctx := context.Background()
	if a.wcon, err = a.wdb.Conn(ctx); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	if err := migrateSQLite(ctx, a.wcon, !a.cfg.NoMigration, a.cfg.Logger); err != nil {
		return err
	}
	if a.cfg.Vacuum {
		if _, err := a.wcon.ExecContext(ctx, "VACUUM"); err != nil {
			return fmt.Errorf("archive: index: vacuum: %w", err)
		}
	}
	// From here the writer's temporary tables are small (the partitions
	// of insertRowAnyTime, the ids of a retention chore): in memory, they
	// cost a message without a timestamp 33 to 39 µs of the writer's time
	// against 157 µs with SQLite's default temporary files
	// (BenchmarkAppendUntimed/partitions=1). Migrations and VACUUM, whose
	// sorts are as large as the index, ran before, with the default.
	if _, err := a.wcon.ExecContext(ctx, "PRAGMA temp_store=MEMORY"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	// The batch's transaction statements are prepared too: parsed again at
	// every batch, they cost about 0.6 µs of the writer's 18 a message in
	// batches of one (BenchmarkAppendIndex/window=1), as at the seed's rate.
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&a.begin, "BEGIN IMMEDIATE"},
		{&a.commitTx, "COMMIT"},
		{&a.rollback, "ROLLBACK"},
		{&a.ins, insertRow},
		{&a.insAnyTime, insertRowAnyTime},
		{&a.topicSel, "SELECT id FROM topics WHERE name = ?"},
		{&a.topicIns, "INSERT INTO topics(name) VALUES (?)"},
	} {
		if *st.stmt, err = a.wcon.PrepareContext(ctx, st.sql); err != nil {
			return fmt.Errorf("archive: index: %w", err)
		}
	}
	// With Options.MmapSize the query connections map the index file
	// (mmap_size): a page a query reads is the kernel's, with no read(2)
	// or copy (docs/archive.md, "The archive at scale").
	a.rdb = sql.OpenDB(connector{
		dsn:     dsn + cache(a.cfg.CacheSize/readConns) + "&_query_only=1",
		pragmas: "PRAGMA mmap_size=" + strconv.FormatInt(a.cfg.MmapSize, 10),
	})
	a.rdb.SetMaxOpenConns(readConns)
	a.rdb.SetMaxIdleConns(readConns)
	if a.cdb, err = sql.Open(sqliteDriver, dsn+cache(1<<20)); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	a.cdb.SetMaxOpenConns(1) // the syncer's checkpoints
	a.cdb.SetMaxIdleConns(1)
	return nil
}

// topicID returns the id of the pubsub or content topic name in the
// topics table, adding it in the writer's transaction if it is new. It
// runs on the writer; the ids it caches are dropped when a batch fails,
// since the rows of new topics go with its transaction.
func (a *Archive) topicID(ctx context.Context, name string) (int64, error) {
	if id, ok := a.topics[name]; ok {
		return id, nil
	}
	var id int64
	err := a.topicSel.QueryRowContext(ctx, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = a.topicIns.ExecContext(ctx, name); err == nil {
			id, err = res.LastInsertId()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("archive: index: topic: %w", err)
	}
	if len(a.topics) >= maxCachedTopics {
		clear(a.topics) // many topics: the table answers
	}
	a.topics[name] = id
	return id, nil
}

// maxCachedTopics bounds the writer's cache of topic ids.
const maxCachedTopics = 16 << 10

// syncIndex fsyncs the index's WAL, which holds every commit since the
// last checkpoint: with synchronous=NORMAL, SQLite does not fsync on commit.
func (a *Archive) syncIndex() error { return fsyncPath(a.indexPath() + "-wal") }

// syncDB fsyncs the index's database file beside the writer, for
// startWALOver; its time counts in Stats.CheckpointTime.
func (a *Archive) syncDB() {
	start := time.Now()
	if err := fsyncPath(a.indexPath()); err != nil {
		a.st.SyncErrors.Add(1)
	}
	a.st.CkptNs.Add(time.Since(start).Nanoseconds())
}

// fsyncPath fsyncs the file at path; a missing file has nothing to sync.
func fsyncPath(path string) error {
	if fsyncHook != nil {
		fsyncHook(path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
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

// fsyncHook, when set (by tests), is called with the path of each file
// fsyncPath syncs.
var fsyncHook func(path string)

// checkpointBeside copies the WAL into the database file on the
// syncer's own connection while the writer goes on (PASSIVE: it waits for
// no one), and returns the frames the WAL held when it started and how
// many of them it copied. Such a checkpoint never copies the frames
// written while it runs, so SQLite never starts the WAL over by itself:
// see syncLoop.
func (a *Archive) checkpointBeside() (frames, copied int) {
	start := time.Now()
	var busy int
	if err := a.cdb.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		a.st.SyncErrors.Add(1)
	}
	a.st.Ckpts.Add(1)
	a.st.CkptNs.Add(time.Since(start).Nanoseconds())
	return frames, copied
}

// checkpoint copies the rest of the WAL into the database file on the
// writer, between batches, so that at its next transaction SQLite finds
// the WAL fully copied and starts it over. It is passive: it does not
// wait for readers.
func (a *Archive) checkpoint() {
	start := time.Now()
	var busy, logFrames, copied int
	err := a.wcon.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied)
	if err != nil {
		a.st.SyncErrors.Add(1)
	}
	d := time.Since(start).Nanoseconds()
	a.st.Ckpts.Add(1)
	a.st.CkptNs.Add(d)
	a.st.CkptWriterNs.Add(d)
}

// closeDBs closes the statement and connections of the index; its error
// joins every close that failed.
func (a *Archive) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{a.begin, a.commitTx, a.rollback, a.ins, a.insAnyTime, a.topicSel, a.topicIns} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if a.wcon != nil {
		errs = append(errs, a.wcon.Close())
	}
	if a.wdb != nil {
		errs = append(errs, a.wdb.Close())
	}
	for _, db := range []*sql.DB{a.rdb, a.cdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	return nil
}
