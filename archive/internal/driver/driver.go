// Package driver holds what the archive's drivers (archive/embedded and
// archive/postgres) share besides the write queue and the query planner:
// the common settings with their defaults, the counters behind
// archive.Stats, the retention loop, the schema version check and the
// migration loop.
package driver

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/couriernet/courier/archive"
)

// Settings is an archive.Config with every default filled in and its
// retention policy parsed: what a driver runs with.
type Settings struct {
	archive.Config
	// Policy is Config.Retention parsed.
	Policy archive.Retention
}

// Resolve fills in the default of every zero field of cfg and checks it.
// Errors wrap archive.ErrConfig.
func Resolve(cfg archive.Config) (Settings, error) {
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = archive.DefaultQueueBytes
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = archive.DefaultMaxBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetentionInterval == 0 {
		cfg.RetentionInterval = archive.DefaultRetentionInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.QueueBytes < archive.MinQueueBytes:
		return Settings{}, Errorf(archive.ErrConfig, "QueueBytes %d: 0 or at least %d", cfg.QueueBytes, archive.MinQueueBytes)
	case cfg.MaxBatch < 0:
		return Settings{}, Errorf(archive.ErrConfig, "MaxBatch %d is negative", cfg.MaxBatch)
	case cfg.RetentionInterval < 0:
		return Settings{}, Errorf(archive.ErrConfig, "RetentionInterval %v is negative", cfg.RetentionInterval)
	}
	r, err := archive.ParseRetention(cfg.Retention)
	if err != nil {
		return Settings{}, err
	}
	return Settings{Config: cfg, Policy: r}, nil
}

// Errorf returns an error wrapping sentinel with the formatted text.
func Errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}

// CheckVersion compares a database's schema version with this build's.
// Errors wrap archive.ErrSchema.
func CheckVersion(have, want int, apply bool) error {
	switch {
	case have > want:
		return fmt.Errorf("%w: the database has schema version %d, newer than this build's %d", archive.ErrSchema, have, want)
	case have < want && !apply:
		return fmt.Errorf("%w: the database has schema version %d, this build needs %d, and migrations are off (--store-message-db-migration=false)", archive.ErrSchema, have, want)
	}
	return nil
}

// Migrate brings a database from schema version have to want, calling
// step(v) to take it from v to v+1. When the database held a schema
// already (have > 0), each step is logged to log ("archive: <what>:
// migrating", then "migrated" with how long it took). It stops at the
// first step that fails; the error wraps archive.ErrSchema.
func Migrate(log *slog.Logger, what string, have, want int, step func(v int) error) error {
	for v := have; v < want; v++ {
		if have > 0 {
			log.Info("archive: "+what+": migrating", "from", v, "to", v+1)
		}
		start := time.Now()
		if err := step(v); err != nil {
			return fmt.Errorf("%w: migration to version %d: %v", archive.ErrSchema, v+1, err)
		}
		if have > 0 {
			log.Info("archive: "+what+": migrated", "to", v+1, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}
