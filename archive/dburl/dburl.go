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
	"net/url"
	"path/filepath"
	"strings"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/archive/postgres"
)

// Default is nwaku's default --store-message-db-url
// (tools/confutils/cli_args.nim): the embedded archive with its index at
// ./store.sqlite3.
const Default = "sqlite://store.sqlite3"

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

// ParseIn returns the Location url names for a node whose data directory
// is dataDir: "" is the embedded archive in dataDir/archive, or Default
// when dataDir is ""; "embedded" is dataDir/archive; any other url is
// Parse's. Errors wrap archive.ErrConfig.
func ParseIn(url, dataDir string) (Location, error) {
	switch {
	case url == "" && dataDir == "":
		url = Default
	case url == "" || url == "embedded":
		return Location{Dir: filepath.Join(dataDir, "archive")}, nil
	}
	return Parse(url)
}

// String describes l for logs and errors: "PostgreSQL <URL>" with the
// URL's password hidden, "embedded in <dir>" (index and segments both in
// the directory) or "embedded (index <file>, segments <dir>)".
func (l Location) String() string {
	switch {
	case l.Postgres != "":
		u, err := url.Parse(l.Postgres)
		if err != nil {
			return "PostgreSQL (unreadable URL)"
		}
		return "PostgreSQL " + u.Redacted()
	case l.Index == "":
		return "embedded in " + l.Dir
	}
	return fmt.Sprintf("embedded (index %s, segments %s)", l.Index, l.Dir)
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
