// Package archive is the contract of the message archive: Archive, the
// interface the relay dispatcher and the store protocol use to store Waku
// messages keyed by their deterministic hash and to answer 13/WAKU2-STORE
// v3 queries; the rules every driver answers queries by (Query); the
// sentinel errors; the settings every driver takes (Config); and nwaku's
// retention grammar (ParseRetention). It links no database driver, so a
// package that only stores and queries through Archive (store, storesync)
// builds without cgo or pgx.
//
// # Drivers
//
//	archive/embedded   the default: an SQLite index of small rows plus segment files in one directory
//	archive/postgres   the same messages in a PostgreSQL table, the same queries in the same order
//	archive/dburl      either one by nwaku's --store-message-db-url (sqlite://PATH, postgres://...)
//
// One conformance suite, this package's tests, runs against both. What
// they share is in archive/internal: the write queue bounded in bytes and
// the done callbacks (queue), the query planner (plan), and the settings
// with their defaults, the counters behind Stats, the retention loop and
// the schema version check (driver).
//
// # Ordering and queries
//
// Messages sort by (timestamp, hash) as store v3 defines. The timestamp is
// the message's timestamp field when positive; a message without one is
// stored with the time the archive received it (Config.Now), as nwaku
// does, while its wire bytes keep the original. Cursors are exclusive
// message hashes; pages come back in forward order; filters are ANDed and
// the time range includes both ends, as in nwaku (see Query). A query on a
// pubsub topic and up to MaxContentTopics content topics reads one ordered
// index range per topic, each at most one page long, and merges them, so
// its cost does not grow with the archive. Every query form reads the wire
// bytes of at most one page plus one message (the one that tells whether
// there is a next page), hash lookups included: both drivers match a hash
// lookup's up to MaxQueryHashes hashes on their small index columns first
// and read bodies only for the page (on Postgres, 1,000 hashes of 150 kB
// messages read 3.2 MB from the server for a page of 20, not 150 MB).
//
// # Schema versions
//
// Both drivers number their schema and migrate it at Open, one version per
// transaction (SQLite's user_version; Postgres's courier_schema table,
// under an advisory lock so nodes sharing a database migrate once).
// Config.NoMigration refuses instead. A database from a newer build is
// refused (ErrSchema), and so is one that nwaku wrote (ErrNwakuDatabase,
// recognised by its messages table's messageHash column): it is read only
// to recognise it, never changed.
//
// # Retention
//
// Config.Retention takes nwaku's policies (ParseRetention): time, capacity,
// size. A goroutine applies them right after Open and every
// Config.RetentionInterval (30 minutes), beside the writer. The embedded
// archive deletes whole segments once every message in them has expired:
// the writer deletes their rows between batches, a few thousand at a time,
// and the file is then removed; nothing is rewritten. The rows of expired
// messages in the segments left are deleted the same way (time and
// capacity), so they are no longer served, while their bytes wait for
// their segment to go; the newest row always stays. Postgres keeps its
// messages in partitions of an hour (as nwaku's store nodes do) and drops
// a partition whole once every message in it has expired; only the rows of
// the partition where the expired messages end are deleted, in batches of
// a few thousand, each its own transaction.
package archive
