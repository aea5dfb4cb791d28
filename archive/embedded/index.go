package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3" // the index
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

func (a *Archive) openIndex() error {
	path := a.indexPath() // Open has refused an nwaku database there
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
	if err := migrateSQLite(ctx, a.wcon, !a.cfg.NoMigration); err != nil {
		return err
	}
	if a.cfg.Vacuum {
		if _, err := a.wcon.ExecContext(ctx, "VACUUM"); err != nil {
			return fmt.Errorf("archive: index: vacuum: %w", err)
		}
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

// syncIndex fsyncs the index's WAL, which holds every commit since the
// last checkpoint: with synchronous=NORMAL, SQLite does not fsync on commit.
func (a *Archive) syncIndex() error {
	f, err := os.OpenFile(a.indexPath()+"-wal", os.O_RDWR, 0)
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
func (a *Archive) checkpoint() {
	start := time.Now()
	var busy, logFrames, copied int
	err := a.wcon.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &copied)
	if err != nil {
		a.st.SyncErrors.Add(1)
	}
	a.st.Ckpts.Add(1)
	a.st.CkptNs.Add(time.Since(start).Nanoseconds())
}

// closeDBs closes the statement and connections of the index; its error
// joins every close that failed.
func (a *Archive) closeDBs() error {
	var errs []error
	if a.ins != nil {
		errs = append(errs, a.ins.Close())
	}
	if a.wcon != nil {
		errs = append(errs, a.wcon.Close())
	}
	if a.wdb != nil {
		errs = append(errs, a.wdb.Close())
	}
	if a.rdb != nil {
		errs = append(errs, a.rdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	return nil
}
