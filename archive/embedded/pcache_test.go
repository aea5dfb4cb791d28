package embedded

import (
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
)

// TestPageCacheSwap fills an index of random 32-byte keys, whose page
// splits put pages out of order, so that B-tree balances swap pages
// through the lock page's number, in transactions of 8 rows with every
// tenth rolled back (which truncates the cache), with the index's page
// size and another (whose lock page has another number). Every committed
// row must be found through the index, no rolled-back row may be, and
// SQLite's integrity check must pass.
func TestPageCacheSwap(t *testing.T) {
	if pageCacheErr != nil {
		t.Fatal(pageCacheErr)
	}
	for _, size := range []int{1024, 4096} {
		t.Run(fmt.Sprintf("page_size=%d", size), func(t *testing.T) { testPageCacheSwap(t, size) })
	}
}

func testPageCacheSwap(t *testing.T, pageSize int) {
	db, err := sql.Open(sqliteDriver, "file:"+filepath.Join(t.TempDir(), "swap.db")+"?_cache_size=-65536")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	mustExec(t, db, fmt.Sprintf("PRAGMA page_size=%d; PRAGMA journal_mode=WAL", pageSize))
	mustExec(t, db, "CREATE TABLE t(k INTEGER PRIMARY KEY, h BLOB NOT NULL); CREATE INDEX t_h ON t(h)")
	var got int
	if err := db.QueryRow("PRAGMA page_size").Scan(&got); err != nil || got != pageSize {
		t.Fatalf("page_size %d, %v; want %d", got, err, pageSize)
	}
	key := func(i int) []byte {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i))
		h := sha256.Sum256(b[:])
		return h[:]
	}
	const rows, perTx = 20_000, 8
	before := pageCacheSwaps()
	for tx := 0; tx*perTx < rows; tx++ {
		mustExec(t, db, "BEGIN")
		for i := tx * perTx; i < (tx+1)*perTx; i++ {
			mustExec(t, db, "INSERT INTO t(k, h) VALUES (?, ?)", i, key(i))
		}
		end := "COMMIT"
		if tx%10 == 9 {
			end = "ROLLBACK"
		}
		mustExec(t, db, end)
	}
	if pageCacheSwaps() == before {
		t.Fatal("no balance swapped two pages: the test does not reach the case it is for")
	}
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	var n int
	for i := range rows {
		var k int
		err := db.QueryRow("SELECT k FROM t INDEXED BY t_h WHERE h = ?", key(i)).Scan(&k)
		rolledBack := (i/perTx)%10 == 9
		switch {
		case rolledBack && err != sql.ErrNoRows:
			t.Fatalf("row %d of a rolled-back transaction: k %d, %v", i, k, err)
		case !rolledBack && (err != nil || k != i):
			t.Fatalf("row %d: k %d, %v", i, k, err)
		case !rolledBack:
			n++
		}
	}
	if want := rows * 9 / 10; n != want {
		t.Fatalf("found %d rows, want %d", n, want)
	}
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
