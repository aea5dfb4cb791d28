package store

import (
	"context"
	"os"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/postgres"
	"github.com/couriernet/courier/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openPostgres opens a Postgres archive on a fresh database of the test
// server (skipped without PostgreSQL, failed under CI=true).
func openPostgres(t testing.TB) archive.Archive {
	t.Helper()
	a, err := postgres.Open(context.Background(), pgtest.DB(t), archive.Config{}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// The protocol tests again, answered from the Postgres archive.
func TestQueryFormsPostgres(t *testing.T) { testQueryForms(t, openPostgres) }
func TestPagingPostgres(t *testing.T)     { testPaging(t, openPostgres) }
func TestErrorsPostgres(t *testing.T)     { testErrors(t, openPostgres) }
