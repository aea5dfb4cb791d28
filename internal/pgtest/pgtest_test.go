package pgtest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDB checks that two databases are separate and that the server is
// PostgreSQL 15 or newer.
func TestDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	urls := []string{pgtest.DB(t), pgtest.DB(t)}
	if urls[0] == urls[1] {
		t.Fatalf("two calls gave the same database %s", urls[0])
	}
	for i, u := range urls {
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if i == 0 {
			if _, err := c.Exec(ctx, "CREATE TABLE only_in_first (x int)"); err != nil {
				t.Fatal(err)
			}
			var v int
			if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v < 150000 {
				t.Fatalf("server version %d, want 15 or newer", v)
			}
			continue
		}
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_first'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatal("the second database sees the first one's table")
		}
	}
}

// TestNoBinaries runs TestDB in a child process without PostgreSQL
// binaries: it skips, and fails when CI=true.
func TestNoBinaries(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") != "" {
		t.Skip("already the child")
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDB$", "-test.v")
		cmd.Env = append(os.Environ(), pgtest.BinEnv+"="+t.TempDir(), "CI="+ci, "PGTEST_CHILD=1")
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP: TestDB")):
			t.Errorf("without binaries: %v\n%s", err, out)
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL: TestDB")):
			t.Errorf("without binaries, CI=true: %v\n%s", err, out)
		}
	}
}
