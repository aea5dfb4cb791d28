package embedded_test

import (
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// nwakuSQLiteSchema is nwaku v0.38.1's SQLite archive table
// (migrations/message_store/ up to 00010_dropStoredAt).
const nwakuSQLiteSchema = `
PRAGMA journal_mode=WAL;
CREATE TABLE messages (pubsubTopic BLOB NOT NULL, contentTopic BLOB NOT NULL, payload BLOB,
	version INTEGER NOT NULL, timestamp INTEGER NOT NULL, messageHash BLOB, meta BLOB,
	CONSTRAINT messageIndex PRIMARY KEY (messageHash)) WITHOUT ROWID;
CREATE INDEX i_ts ON messages (timestamp);
INSERT INTO messages VALUES ('/waku/2/rs/1/0', '/app/1/t/proto', x'01', 0, 1700000000000000000, x'aa', NULL);
PRAGMA user_version = 10;`

// TestEmbeddedRefusesNwaku: an index file nwaku wrote is refused with
// ErrNwakuDatabase, and no byte of it changes, nor does a WAL appear.
func TestEmbeddedRefusesNwaku(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(nwakuSQLiteSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	files := func() map[string][32]byte {
		m := map[string][32]byte{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			m[e.Name()] = sha256.Sum256(b)
		}
		return m
	}
	before := files()
	for _, cfg := range []archive.Config{{}, {Vacuum: true, Retention: "capacity:1"}} {
		a, err := embedded.Open(dir, cfg, embedded.Options{})
		if !errors.Is(err, archive.ErrNwakuDatabase) || a != nil {
			t.Fatalf("Open on nwaku's index: %v, want ErrNwakuDatabase", err)
		}
		t.Log(err)
	}
	after := files()
	delete(after, "LOCK") // the directory lock Open takes first
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s changed", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

// TestEmbeddedSchemaVersion: a new index is at this build's version, an
// index from a newer build is refused, and NoMigration refuses an index
// that is not at it.
func TestEmbeddedSchemaVersion(t *testing.T) {
	if a, err := embedded.Open(t.TempDir(), archive.Config{NoMigration: true}, embedded.Options{}); !errors.Is(err, archive.ErrSchema) || a != nil {
		t.Fatalf("NoMigration on a new archive: %v, want ErrSchema", err)
	}
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	appendWait(t, a, newEnv(t, "p", "/a/1/b/c", 1, []byte("x")))
	a.Close()
	a = openT(t, dir, archive.Config{NoMigration: true, Vacuum: true})
	if st := a.Stats(); st.Messages != 1 {
		t.Fatalf("reopened with %d messages, want 1", st.Messages)
	}
	a.Close()
	db, err := sql.Open("sqlite3", filepath.Join(dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v < 1 {
		t.Fatalf("user_version %d, %v", v, err)
	}
	var cols []string
	rows, err := db.Query("SELECT name FROM pragma_table_info('messages')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	rows.Close()
	if !slices.Equal(cols, []string{"id", "hkey", "hash", "ts", "pubsub_id", "content_id", "seg", "off", "len"}) {
		t.Fatalf("columns %v", cols)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if a, err := embedded.Open(dir, archive.Config{}, embedded.Options{}); !errors.Is(err, archive.ErrSchema) || a != nil {
		t.Fatalf("an index from a newer build: %v, want ErrSchema", err)
	}
}
