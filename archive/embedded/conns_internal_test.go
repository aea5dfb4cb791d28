package embedded

import (
	"context"
	"database/sql"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/message"
)

// sqliteMaxMmap is the most SQLite, as mattn/go-sqlite3 builds it, maps:
// SQLITE_MAX_MMAP_SIZE, 0x7fff0000 on Linux.
const sqliteMaxMmap = 0x7fff0000

// TestConnectionPragmas: every query connection (all four, held at once)
// maps the index file, MmapSize bytes of it capped at SQLite's limit, or
// none by default; a negative MmapSize is refused; the writer's and the syncer's
// connections map none. Each kind has its page cache (cache_size, in
// KiB when negative): CacheSize on the writer's, a quarter on each
// query connection, 1 MiB on the syncer's; the writer's temporary tables
// are in memory. A query reads through the
// mapping what the writer committed.
func TestConnectionPragmas(t *testing.T) {
	for _, tc := range []struct {
		opts     Options
		readMmap int64
	}{
		{Options{}, 0},
		{Options{MmapSize: 1 << 20, CacheSize: 8 << 20}, 1 << 20},
		{Options{MmapSize: 1 << 40}, sqliteMaxMmap},
	} {
		a, err := Open(t.TempDir(), archive.Config{}, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		pragmas := func(who string, q interface {
			QueryRowContext(context.Context, string, ...any) *sql.Row
		}, mmap, cache int64) {
			t.Helper()
			var gotMmap, gotCache int64
			if err := q.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&gotMmap); err != nil {
				t.Fatal(err)
			}
			if err := q.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&gotCache); err != nil {
				t.Fatal(err)
			}
			if gotMmap != mmap || gotCache != cache {
				t.Errorf("%+v: %s connection: mmap_size %d, cache_size %d; want %d and %d", tc.opts, who, gotMmap, gotCache, mmap, cache)
			}
		}
		pragmas("writer's", a.wcon, 0, -a.cfg.CacheSize>>10)
		var temp int
		if err := a.wcon.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp); err != nil || temp != 2 {
			t.Errorf("writer's connection: temp_store %d, %v; want 2 (memory)", temp, err)
		}
		pragmas("syncer's", a.cdb, 0, -1024)
		var conns []*sql.Conn
		for range readConns {
			c, err := a.rdb.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			pragmas("query", c, tc.readMmap, -a.cfg.CacheSize/readConns>>10)
		}
		if st := a.rdb.Stats(); st.OpenConnections != readConns {
			t.Errorf("%d query connections open, want %d", st.OpenConnections, readConns)
		}
		for _, c := range conns {
			c.Close()
		}
		env := archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", 1000, []byte("mapped"))
		archivetest.AppendWait(t, a, env)
		res, err := a.Query(ctx, archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
		if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Wire) != string(env.Wire()) {
			t.Errorf("%+v: lookup of the message appended: %+v, %v", tc.opts, res, err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
