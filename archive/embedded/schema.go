package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
)

// sqliteMigrations are the embedded index's schema versions:
// sqliteMigrations[i] takes the index from version i to i+1, in one
// transaction with the version (SQLite's user_version). Append only: a
// released migration is never edited.
var sqliteMigrations = []string{
	// 1: one small row per message; the bytes are in the segments.
	`CREATE TABLE IF NOT EXISTS messages (
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
	CREATE INDEX IF NOT EXISTS messages_content ON messages(pubsub_topic, content_topic, ts, hash);`,
}

// migrateSQLite sets the index's pragmas and brings its schema to the
// newest version, or (apply false) checks that it is there. The writer
// checkpoints after its fsync rounds (see Archive.checkpoint), so SQLite
// never checkpoints on its own on the commit path; pages are 1 KiB (see
// the package documentation).
func migrateSQLite(ctx context.Context, conn *sql.Conn, apply bool) error {
	var have int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	if err := driver.CheckVersion(have, len(sqliteMigrations), apply); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA page_size=1024; PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0"); err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	for v := have; v < len(sqliteMigrations); v++ {
		err := func() (err error) {
			if _, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				return err
			}
			defer func() {
				if err != nil {
					conn.ExecContext(context.Background(), "ROLLBACK")
				}
			}()
			if _, err = conn.ExecContext(ctx, sqliteMigrations[v]); err != nil {
				return err
			}
			if _, err = conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
				return err
			}
			_, err = conn.ExecContext(ctx, "COMMIT")
			return err
		}()
		if err != nil {
			return fmt.Errorf("%w: migration to version %d: %v", archive.ErrSchema, v+1, err)
		}
	}
	return nil
}

// refuseNwakuSQLite returns archive.ErrNwakuDatabase when the SQLite file at path
// holds nwaku's archive: a messages table with its messageHash column
// (nwaku migrations/message_store/, waku_archive/driver/sqlite_driver).
// It opens the file immutable, so nothing is written, not even a WAL index.
func refuseNwakuSQLite(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?immutable=1")
	if err != nil {
		return fmt.Errorf("archive: index: %w", err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT name FROM pragma_table_info('messages')")
	if err != nil {
		return fmt.Errorf("archive: index %s: %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("archive: index %s: %w", path, err)
		}
		if strings.EqualFold(name, "messageHash") {
			return fmt.Errorf("%w: %s has nwaku's messages table; courier leaves it untouched: give --store-message-db-url another path", archive.ErrNwakuDatabase, path)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("archive: index %s: %w", path, err)
	}
	return nil
}
