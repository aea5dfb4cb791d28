package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
)

// pgMigrations are the Postgres schema versions: pgMigrations[i] takes the
// database from version i to i+1. Each runs in one transaction with the
// version update; the version is the one row of courier_schema. Append
// only: a released migration is never edited.
var pgMigrations = []func(ctx context.Context, tx pgx.Tx) error{
	// 1: one row per message, keyed by hash, with the indexes of the store
	// v3 orders (timestamp, then hash). Topics are bytea: a WakuMessage's
	// content topic need not be valid UTF-8 (or free of NUL), and a row
	// refused for it would fail its whole batch. Wire bytes are stored out
	// of line without compression (payloads are mostly incompressible).
	execMigration(`CREATE TABLE courier_messages (
		hash          bytea  PRIMARY KEY,
		ts            bigint NOT NULL,
		pubsub_topic  bytea  NOT NULL,
		content_topic bytea  NOT NULL,
		wire          bytea  NOT NULL
	);
	ALTER TABLE courier_messages ALTER COLUMN wire SET STORAGE EXTERNAL;
	CREATE INDEX courier_messages_time ON courier_messages (ts, hash);
	CREATE INDEX courier_messages_pubsub ON courier_messages (pubsub_topic, ts, hash);
	CREATE INDEX courier_messages_content ON courier_messages (pubsub_topic, content_topic, ts, hash);`),
	// 2: the messages partitioned by timestamp (partitions.go), keyed by
	// (ts, hash) in each partition, and courier_hashes, one row a message,
	// keyed by hash alone: it keeps a hash stored once in the whole table
	// and finds a hash's timestamp, and with it its partition (nwaku's
	// messages_lookup). The rows of version 1 move over.
	migrateToPartitions,
	// 3: courier_hashes' key carries each hash's timestamp (INCLUDE), so a
	// hash lookup or a cursor finds its timestamp in the index alone (an
	// index-only scan: no heap page of courier_hashes read for a row on a
	// page VACUUM marked all-visible). The index is built again, with
	// courier_hashes locked (its reads and writes wait, on every node
	// sharing the database): 2.97 s for five million hashes measured.
	execMigration(`ALTER TABLE courier_hashes DROP CONSTRAINT courier_hashes_pkey;
	ALTER TABLE courier_hashes ADD CONSTRAINT courier_hashes_pkey PRIMARY KEY (hash) INCLUDE (ts);`),
}

func execMigration(stmt string) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, stmt)
		return err
	}
}

// migrateToPartitions is migration 2.
func migrateToPartitions(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `ALTER TABLE courier_messages RENAME TO courier_messages_v1;
	ALTER INDEX courier_messages_time RENAME TO courier_messages_v1_time;
	ALTER INDEX courier_messages_pubsub RENAME TO courier_messages_v1_pubsub;
	ALTER INDEX courier_messages_content RENAME TO courier_messages_v1_content;
	CREATE TABLE courier_messages (
		ts            bigint NOT NULL,
		hash          bytea  NOT NULL,
		pubsub_topic  bytea  NOT NULL,
		content_topic bytea  NOT NULL,
		wire          bytea  NOT NULL,
		PRIMARY KEY (ts, hash)
	) PARTITION BY RANGE (ts);
	ALTER TABLE courier_messages ALTER COLUMN wire SET STORAGE EXTERNAL;
	CREATE INDEX courier_messages_pubsub ON courier_messages (pubsub_topic, ts, hash);
	CREATE INDEX courier_messages_content ON courier_messages (pubsub_topic, content_topic, ts, hash);
	CREATE TABLE courier_hashes (
		hash bytea  PRIMARY KEY,
		ts   bigint NOT NULL
	);
	CREATE INDEX courier_hashes_ts ON courier_hashes (ts);`); err != nil {
		return err
	}
	// One timestamp of each hour (and far range) that holds rows.
	rows, err := tx.Query(ctx, "SELECT min(ts) FROM courier_messages_v1 GROUP BY ts / $1", partitionWidth)
	if err != nil {
		return err
	}
	ts, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if _, err := createPartitions(ctx, tx, ts, time.Now().UnixNano()); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO courier_hashes (hash, ts) SELECT hash, ts FROM courier_messages_v1;
	INSERT INTO courier_messages (ts, hash, pubsub_topic, content_topic, wire)
		SELECT ts, hash, pubsub_topic, content_topic, wire FROM courier_messages_v1;
	DROP TABLE courier_messages_v1;`)
	return err
}

// pgSchemaLock is the advisory lock key that serializes the migrations of
// nodes sharing one database.
const pgSchemaLock = 0x636f7572 // "cour"

// migratePostgres refuses a database nwaku wrote and brings the schema to
// the newest version, or (apply false) checks that it is there; it logs
// each migration of an existing database to log, with how long it took
// (version 3 builds courier_hashes' key again).
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, apply bool, log *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return pgErr(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", pgSchemaLock); err != nil {
		return pgErr(err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", pgSchemaLock)
	if err := pgRefuseNwaku(ctx, conn.Conn()); err != nil {
		return err
	}
	var have int
	var exists bool
	err = conn.QueryRow(ctx, "SELECT to_regclass('courier_schema') IS NOT NULL").Scan(&exists)
	if err == nil && exists {
		err = conn.QueryRow(ctx, "SELECT version FROM courier_schema").Scan(&have)
	}
	if err != nil {
		return pgErr(err)
	}
	if err := driver.CheckVersion(have, len(pgMigrations), apply); err != nil {
		return err
	}
	return driver.Migrate(log, "postgres", have, len(pgMigrations), func(v int) error {
		return pgx.BeginFunc(ctx, conn.Conn(), func(tx pgx.Tx) error {
			if v == 0 {
				if _, err := tx.Exec(ctx, "CREATE TABLE courier_schema (version integer NOT NULL); INSERT INTO courier_schema VALUES (0)"); err != nil {
					return err
				}
			}
			if err := pgMigrations[v](ctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE courier_schema SET version = $1", v+1)
			return err
		})
	})
}

// pgRefuseNwaku returns archive.ErrNwakuDatabase when the current schema holds
// nwaku's archive: a messages or messages_lookup table with its
// messageHash column (unquoted in nwaku's SQL, so folded to lower case;
// nwaku migrations/message_store_postgres/).
func pgRefuseNwaku(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT DISTINCT table_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name IN ('messages', 'messages_lookup')
		AND column_name = 'messagehash' ORDER BY 1`)
	if err != nil {
		return pgErr(err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return pgErr(err)
	}
	if len(found) > 0 {
		return fmt.Errorf("%w: it has nwaku's table(s) %v; courier leaves this database untouched: give --store-message-db-url another database", archive.ErrNwakuDatabase, found)
	}
	return nil
}
