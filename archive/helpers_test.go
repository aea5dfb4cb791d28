package archive_test

import (
	"context"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/archive/postgres"
	"github.com/couriernet/courier/internal/pgtest"
)

var (
	newEnv     = archivetest.NewEnv
	makeEnv    = archivetest.MakeEnv
	seedMix    = archivetest.SeedMix
	appendWait = archivetest.AppendWait
	meanSize   = archivetest.MeanSize
)

const benchPool = archivetest.BenchPool

// driver opens archives of one implementation for the conformance tests,
// which run against every driver.
type driver struct {
	name string
	// recordOverhead is what Stats.BytesAppended counts per message besides
	// its wire bytes.
	recordOverhead int
	// open opens an archive on a new, empty store and returns it with a
	// function that opens the same store again (after Close). Both close
	// what they open at the end of the test. The embedded archive takes
	// opts (at most one; Postgres has no use for them).
	open func(t testing.TB, cfg archive.Config, opts ...embedded.Options) (archive.Archive, func(archive.Config) archive.Archive)
}

var drivers = []driver{
	{name: "embedded", recordOverhead: 8, open: func(t testing.TB, cfg archive.Config, opts ...embedded.Options) (archive.Archive, func(archive.Config) archive.Archive) {
		dir := t.TempDir()
		var o embedded.Options
		if len(opts) > 0 {
			o = opts[0]
		}
		reopen := func(cfg archive.Config) archive.Archive {
			a, err := embedded.Open(dir, cfg, o)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { a.Close() })
			return a
		}
		return reopen(cfg), reopen
	}},
	{name: "postgres", open: func(t testing.TB, cfg archive.Config, _ ...embedded.Options) (archive.Archive, func(archive.Config) archive.Archive) {
		url := pgtest.DB(t)
		reopen := func(cfg archive.Config) archive.Archive {
			a, err := postgres.Open(context.Background(), url, cfg, postgres.Options{})
			if err != nil {
				t.Fatalf("postgres.Open: %v", err)
			}
			t.Cleanup(func() { a.Close() })
			return a
		}
		return reopen(cfg), reopen
	}},
}

// forDrivers runs f as a subtest for each driver. The Postgres subtests
// skip when PostgreSQL is not installed (and fail when CI=true).
func forDrivers(t *testing.T, f func(t *testing.T, d driver)) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) { f(t, d) })
	}
}
