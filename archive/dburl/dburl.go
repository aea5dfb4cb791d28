// Package dburl opens the archive a database URL names, as nwaku's
// --store-message-db-url does (waku_archive/driver/builder.nim,
// common/databases/dburl.nim):
//
//	sqlite://PATH                                the embedded archive (archive/embedded):
//	                                             its SQLite index at PATH, its segments in PATH.segments
//	postgres://user:password@host:port/db        PostgreSQL (archive/postgres); postgresql:// too
//
// PATH is relative to the working directory unless it is absolute. It is
// the one package that links both drivers, SQLite (cgo) and pgx; a program
// that uses one driver imports it alone, and one that only reads or
// writes through archive.Archive (a store server, store-sync) imports
// neither.
package dburl

import (
	"context"
	"fmt"
	"strings"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/archive/postgres"
)

// SegmentsSuffix names the directory of an sqlite://PATH archive's
// segments: PATH + SegmentsSuffix, beside the index.
const SegmentsSuffix = ".segments"

// Config holds the settings of both drivers: every driver's, and each
// one's own. The zero value gives the defaults.
type Config struct {
	archive.Config
	// Embedded applies to the embedded archive; for sqlite://PATH, its
	// IndexPath is PATH.
	Embedded embedded.Options
	// Postgres applies to a postgres:// archive.
	Postgres postgres.Options
}

// Location is where an archive lives: in PostgreSQL, or in the embedded
// archive's directory.
type Location struct {
	// Postgres is the PostgreSQL URL; "" for the embedded archive.
	Postgres string
	// Dir is the embedded archive's directory (its segments).
	Dir string
	// Index is the embedded archive's SQLite index file; "" means
	// index.db in Dir.
	Index string
}

// isPostgres reports whether url names a PostgreSQL database
// (postgres:// or postgresql://).
func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// Parse returns the Location url names. Errors wrap archive.ErrConfig.
func Parse(url string) (Location, error) {
	if isPostgres(url) {
		return Location{Postgres: url}, nil
	}
	path, ok := strings.CutPrefix(url, "sqlite://")
	if !ok || path == "" {
		scheme, _, _ := strings.Cut(url, "://")
		return Location{}, fmt.Errorf("%w: database URL %q (scheme %q): want sqlite://PATH or postgres://user:password@host:port/db", archive.ErrConfig, url, scheme)
	}
	return Location{Dir: path + SegmentsSuffix, Index: path}, nil
}

// Open opens the archive url names (see Parse and Location.Open).
func Open(ctx context.Context, url string, cfg Config) (archive.Archive, error) {
	loc, err := Parse(url)
	if err != nil {
		return nil, err
	}
	return loc.Open(ctx, cfg)
}

// Open opens the archive at l: postgres.Open with cfg.Postgres, or
// embedded.Open of l.Dir with cfg.Embedded (its IndexPath set to l.Index
// when that is given). The zero Location is archive.ErrConfig; other
// errors are the driver's.
func (l Location) Open(ctx context.Context, cfg Config) (archive.Archive, error) {
	if l.Postgres != "" {
		a, err := postgres.Open(ctx, l.Postgres, cfg.Config, cfg.Postgres)
		if err != nil {
			return nil, err // not a nil *postgres.Archive in an Archive
		}
		return a, nil
	}
	if l.Dir == "" {
		return nil, fmt.Errorf("%w: a location with neither a PostgreSQL URL nor a directory", archive.ErrConfig)
	}
	if l.Index != "" {
		cfg.Embedded.IndexPath = l.Index
	}
	a, err := embedded.Open(l.Dir, cfg.Config, cfg.Embedded)
	if err != nil {
		return nil, err
	}
	return a, nil
}
