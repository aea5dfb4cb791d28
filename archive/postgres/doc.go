// Package postgres keeps the archive (archive.Archive) in a PostgreSQL
// table (pgx v5) and answers the same queries in the same order as the
// embedded archive (archive/embedded), with the planner both drivers
// share. Several nodes may share one database. See Archive for the write
// path and its durability.
//
// # Postgres beside the embedded archive
//
// Measured on the project machine (2 cores shared with other work, load
// average 12 to 15, 2026-11-30), PostgreSQL 15 from internal/pgtest on the
// same disk with its default durability:
//
//	go test -run '^$' -bench Drivers -benchtime 10000x ./archive/
//
//	seed mix (mean 65 kB)        embedded      Postgres
//	inserts acknowledged         4,672 msg/s   883 msg/s
//	query p50 / p99              0.54 / 14 ms  2.4 / 15 ms
//
// (queries: a page of 20 with data, one content topic, a time range). Each
// 65 kB value goes through Postgres's TOAST in 2 kB chunks and is written
// to its WAL and then its heap; the embedded archive appends it once. With
// 1,000-byte messages (courier bench --scenario store) the gap is smaller:
// 29,800 against 7,100 msg/s, query p50/p99 through the store protocol
// 0.33/3.3 ms against 0.45/5.7 ms.
//
// # Partitions
//
// Schema version 2 partitions courier_messages by timestamp, one
// partition an hour, as nwaku's production store nodes partition theirs
// (waku_archive/driver/postgres_driver/partitions_manager.nim, v0.38.1):
// each partition is keyed by (ts, hash) and has the two topic indexes, a
// time range query reads only the partitions of its range, and retention
// drops whole partitions instead of deleting rows. A partition is made
// when the first message of its hour is written; a timestamp more than 31
// days from now gets a year-long one, so that far timestamps cannot make
// a partition each (partitions.go). courier_hashes holds every message's
// hash and timestamp, keyed by hash, its key's index carrying the
// timestamp (INCLUDE, schema version 3, so that finding it reads no heap
// page of courier_hashes for a row on a page VACUUM marked all-visible):
// it keeps a hash stored once in the
// whole table (a partitioned table can only be unique within each
// partition) and finds a cursor's or a hash lookup's partition (nwaku's
// messages_lookup): a hash lookup is one statement that joins the two,
// each hash then one index lookup of its (ts, hash) in the one partition
// that holds it, and a page after a cursor bounds ts by the cursor's
// timestamp, so that the partitions beyond it are pruned. Each statement is planned once per connection, its
// partitions pruned as it starts (plan_cache_mode=force_generic_plan), and
// never compiled to machine code (jit=off: a plan over every partition
// looks costly enough to PostgreSQL to JIT each run, which took 0.5 to
// 1.5 s for a 1 ms hash lookup); a URL may set either.
// Open migrates a database of version 1 forward, every row kept.
//
// # Retention
//
// Partitions go whole, oldest first, while every message in them has
// expired: detached without blocking inserts and queries (DETACH
// PARTITION CONCURRENTLY), then dropped, as nwaku does. Only in the
// partition where the expired messages end are rows deleted, in batches
// of a few thousand, each its own transaction, their hashes with them; the
// hashes of the partitions dropped go in batches after.
package postgres
