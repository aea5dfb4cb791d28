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
// # Retention
//
// Postgres deletes the oldest rows in batches of a few thousand, each its
// own transaction, so inserts and queries go on during a run.
package postgres
