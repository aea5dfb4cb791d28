package embedded

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/mattn/go-sqlite3"

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
	// 2: the compact rows of an archive of millions (see the package
	// documentation): topics by number, and indexes that hold the first 8
	// bytes of the hash (hkey) instead of all 32. Rows keep their id, and
	// with it the segment order and the "synced" watermark.
	`CREATE TABLE topics (
		id   INTEGER PRIMARY KEY,
		name TEXT    NOT NULL UNIQUE -- a pubsub or a content topic
	);
	INSERT OR IGNORE INTO topics(name) SELECT pubsub_topic FROM messages GROUP BY 1;
	INSERT OR IGNORE INTO topics(name) SELECT content_topic FROM messages GROUP BY 1;
	CREATE TABLE messages_v2 (
		id         INTEGER PRIMARY KEY, -- append order: segment order
		hkey       INTEGER NOT NULL,    -- the hash's first 8 bytes, ordered as they are (hkey)
		hash       BLOB    NOT NULL,    -- 32 bytes
		ts         INTEGER NOT NULL,    -- Unix ns, orders with hash
		pubsub_id  INTEGER NOT NULL,    -- topics.id
		content_id INTEGER NOT NULL,    -- topics.id
		seg        INTEGER NOT NULL,    -- segment id
		off        INTEGER NOT NULL,    -- offset of the wire bytes in the segment
		len        INTEGER NOT NULL     -- wire bytes
	);
	INSERT INTO messages_v2 (id, hkey, hash, ts, pubsub_id, content_id, seg, off, len)
		SELECT m.id, courier_hkey(m.hash), m.hash, m.ts, p.id, c.id, m.seg, m.off, m.len
		FROM messages m JOIN topics p ON p.name = m.pubsub_topic JOIN topics c ON c.name = m.content_topic
		ORDER BY m.id;
	DROP TABLE messages;
	ALTER TABLE messages_v2 RENAME TO messages;
	CREATE INDEX messages_hkey ON messages(hkey);
	CREATE INDEX messages_time ON messages(ts, hkey);
	CREATE INDEX messages_pubsub ON messages(pubsub_id, ts, hkey);
	CREATE INDEX messages_content ON messages(pubsub_id, content_id, ts, hkey);`,
	// 3: the hash index by time partition (partExpr) and hkey, so that
	// inserts land in the newest partition's part of it and not anywhere
	// in an index of millions.
	`DROP INDEX messages_hkey;
	CREATE INDEX messages_part_hkey ON messages((ts >> 44), hkey);`,
}

// partExpr is a row's time partition, the key the hash index
// (messages_part_hkey) sorts by before hkey: its timestamp in spans of
// 2^44 ns (4 h 53 min), as the index of migration 3 has it, word for word
// (SQLite uses an index on an expression only for the same expression).
// Partitions run from math.MinInt64 >> 44 to math.MaxInt64 >> 44: a
// message's timestamp is positive, but one without is stored at its
// receive time (archive.Config.Now), which may be before 1970. partShift
// is its shift, which every statement that computes a partition uses.
const (
	partShift = "44"
	partExpr  = "(ts >> " + partShift + ")"
)

// hkey is a hash's index key: its first 8 bytes as a big-endian integer
// with the top bit flipped, so that SQLite's signed order of hkey is the
// byte order of the hashes' first 8 bytes. The indexes keep hkey, 8 bytes
// instead of 32: a hash lookup finds the rows of its hkey (one, but for a
// 64-bit collision) and compares the whole hash in the row, and the order
// indexes sort by (ts, hkey), which is the store v3 order (ts, hash) but
// for ties of both, which the query sorts by hash.
func hkey(h []byte) int64 {
	var b [8]byte
	copy(b[:], h)
	return int64(binary.BigEndian.Uint64(b[:]) ^ 1<<63)
}

// sqliteDriver is the database/sql driver of the index: SQLite (mattn)
// with courier_hkey(hash), the hkey function, for the migration to
// version 2. sqliteConns is the same driver, for the connectors of
// openIndex.
const sqliteDriver = "courier-sqlite3"

var sqliteConns = &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc("courier_hkey", func(h []byte) int64 { return hkey(h) }, true)
}}

func init() { sql.Register(sqliteDriver, sqliteConns) }

// connector opens connections to the index with dsn and runs pragmas,
// if any, on each one before database/sql uses it: settings that the
// driver's DSN does not take, such as mmap_size.
type connector struct {
	dsn     string
	pragmas string
}

func (c connector) Connect(context.Context) (sqldriver.Conn, error) {
	conn, err := sqliteConns.Open(c.dsn)
	if err != nil || c.pragmas == "" {
		return conn, err
	}
	if _, err := conn.(*sqlite3.SQLiteConn).Exec(c.pragmas, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (connector) Driver() sqldriver.Driver { return sqliteConns }

// migrateSQLite sets the index's pragmas and brings its schema to the
// newest version, or (apply false) checks that it is there; it logs each
// migration to log, with how long it took (version 3 rebuilds the hash
// index: tens of seconds for ten million messages). The writer
// checkpoints after its fsync rounds (see Archive.checkpoint), so SQLite
// never checkpoints on its own on the commit path; pages are 1 KiB (see
// the package documentation).
func migrateSQLite(ctx context.Context, conn *sql.Conn, apply bool, log *slog.Logger) error {
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
	return driver.Migrate(log, "index", have, len(sqliteMigrations), func(v int) (err error) {
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
	})
}

// refuseNwakuSQLite returns archive.ErrNwakuDatabase when the SQLite file at path
// holds nwaku's archive: a messages table with its messageHash column
// (nwaku migrations/message_store/, waku_archive/driver/sqlite_driver).
// It opens the file immutable, so nothing is written, not even a WAL index.
func refuseNwakuSQLite(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := sql.Open(sqliteDriver, "file:"+(&url.URL{Path: path}).EscapedPath()+"?immutable=1")
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
