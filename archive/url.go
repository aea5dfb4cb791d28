package archive

import (
	"context"
	"strings"
)

// IsPostgresURL reports whether url names a PostgreSQL database
// (postgres:// or postgresql://, as nwaku's --store-message-db-url).
func IsPostgresURL(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// OpenURL opens the archive a --store-message-db-url names. Today that is a
// PostgreSQL URL (postgres://user:password@host:port/db), opened with
// OpenPostgres; the embedded archive is opened with Open. Other URLs fail
// with ErrConfig.
func OpenURL(ctx context.Context, url string, cfg Config) (Archive, error) {
	if !IsPostgresURL(url) {
		scheme, _, _ := strings.Cut(url, "://")
		return nil, errorf(ErrConfig, "database URL scheme %q: want postgres://", scheme)
	}
	p, err := OpenPostgres(ctx, url, cfg)
	if err != nil {
		return nil, err // not a nil *Postgres in an Archive
	}
	return p, nil
}
