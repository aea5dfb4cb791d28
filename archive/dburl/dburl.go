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
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
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
		return Location{}, fmt.Errorf("%w: database URL %q (scheme %q): want sqlite://PATH or postgres://user:password@host:port/db", archive.ErrConfig, Redact(url), scheme)
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
// URL's passwords hidden (Redact), "embedded in <dir>" (index and segments
// both in the directory) or "embedded (index <file>, segments <dir>)".
func (l Location) String() string {
	switch {
	case l.Postgres != "":
		return "PostgreSQL " + Redact(l.Postgres)
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

// Open opens the archive at l: postgres.Open with cfg.Postgres (its errors
// with the URL's passwords hidden wherever the URL appears whole), or
// embedded.Open of l.Dir with cfg.Embedded (its IndexPath set to l.Index
// when that is given). The zero Location is archive.ErrConfig, and so is an
// index file whose directory does not exist: as with nwaku's SQLite
// driver, sqlite://PATH creates the file but not its directories, so that
// a mistyped path is not a new empty archive. Other errors are the
// driver's.
func (l Location) Open(ctx context.Context, cfg Config) (archive.Archive, error) {
	if l.Postgres != "" {
		a, err := postgres.Open(ctx, l.Postgres, cfg.Config, cfg.Postgres)
		if err != nil {
			return nil, redactError(l.Postgres, err) // not a nil *postgres.Archive in an Archive
		}
		return a, nil
	}
	if l.Dir == "" {
		return nil, fmt.Errorf("%w: a location with neither a PostgreSQL URL nor a directory", archive.ErrConfig)
	}
	if err := l.Check(); err != nil {
		return nil, err
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

// Check refuses, before anything is opened or created, an sqlite://PATH
// location whose PATH is in a directory that does not exist or is not a
// directory (see Open). Other locations pass. Errors wrap
// archive.ErrConfig.
func (l Location) Check() error {
	if l.Postgres != "" || l.Index == "" {
		return nil
	}
	index := l.Index
	dir := filepath.Dir(index)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: database URL sqlite://%s: directory %s does not exist; create it, or give a path in an existing directory", archive.ErrConfig, index, dir)
	case err != nil:
		return fmt.Errorf("%w: database URL sqlite://%s: %v", archive.ErrConfig, index, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: database URL sqlite://%s: %s is not a directory", archive.ErrConfig, index, dir)
	}
	return nil
}

// hidden stands for a password Redact hides: pgx's mask, and net/url's.
const hidden = "xxxxx"

// Redact returns a database URL fit for logs and errors: the password of
// its user info and the value of each query parameter whose name contains
// "password" (password, sslpassword, ...; libpq's keywords, in any case)
// replaced with "xxxxx", the rest as it was. A URL that does not parse is
// cut the same way, by its "://", "@", "/", "?", "&" and "#".
func Redact(dbURL string) string {
	scheme, rest, ok := strings.Cut(dbURL, "://")
	if !ok {
		scheme, rest = "", dbURL
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		if user, _, hasPassword := strings.Cut(authority[:i], ":"); hasPassword {
			authority = user + ":" + hidden + authority[i:]
		}
	}
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		query, fragment := tail[q+1:], ""
		if f := strings.IndexByte(query, '#'); f >= 0 {
			query, fragment = query[:f], query[f:]
		}
		params := strings.Split(query, "&")
		for i, kv := range params {
			k, _, hasValue := strings.Cut(kv, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if hasValue && strings.Contains(strings.ToLower(name), "password") {
				params[i] = k + "=" + hidden
			}
		}
		tail = tail[:q+1] + strings.Join(params, "&") + fragment
	}
	if !ok {
		return authority + tail
	}
	return scheme + "://" + authority + tail
}

// redactError returns err with each whole occurrence of dbURL in its text
// replaced by Redact(dbURL); it unwraps to err. pgx hides the passwords
// of the URLs it quotes itself.
func redactError(dbURL string, err error) error {
	shown := Redact(dbURL)
	if shown == dbURL || !strings.Contains(err.Error(), dbURL) {
		return err
	}
	return &urlError{msg: strings.ReplaceAll(err.Error(), dbURL, shown), err: err}
}

// urlError is an error whose text has a database URL's passwords hidden.
type urlError struct {
	msg string
	err error
}

func (e *urlError) Error() string { return e.msg }

// Unwrap returns the original error, whose text may hold the passwords.
func (e *urlError) Unwrap() error { return e.err }
