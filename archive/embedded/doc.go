// Package embedded is the default archive (archive.Archive): an SQLite
// index of small rows plus the messages' bytes appended once to segment
// files, all in one directory. It answers the queries of archive.Query
// with the planner both drivers share, and keeps nwaku's durability:
// a committed message survives kill -9 of the process.
//
// # Design: an index of small rows, payloads appended once
//
// A message is written once, as the bytes it arrived in (Envelope.Wire, no
// re-encode), to the end of a segment file: an 8-byte record header
// (length, CRC-32C) and the wire bytes. An SQLite table holds one small row
// per message: hash, timestamp, the ids of its pubsub and content topics
// (a table of topic names) and the record's segment and offset. Indexes
// hold the hash's first 8 bytes (hkey: an integer that sorts as they do)
// instead of all 32: one on (time partition, hkey) for hash lookups and
// duplicates (the row holds the whole hash, which settles a 64-bit tie;
// see "The hash index by time partition" below), and (timestamp, hkey),
// (pubsub topic, timestamp, hkey), (pubsub topic, content topic,
// timestamp, hkey) for the store v3 orders, ties of (timestamp, hkey)
// sorted by hash. Reads pread the records into fresh buffers and check
// them; they never decode them.
//
// Why: as a B-tree value (SQLite blobs, 16 KiB pages) a 65 kB payload is
// written twice, to the WAL and then at the checkpoint, and capped near
// 3,400 msg/s here; an LSM writes it twice too (docs/archive.md has the
// measurements). Appending each payload once keeps the archive at
// the disk's own speed, as NATS JetStream's file store and Kafka's segments
// do. Its pages are 1 KiB because every insert into the hash index dirties
// a page at a random place; with 4 KiB pages the WAL took 1.3 KiB per
// message instead of 0.3 to 1.1 at 40,000 messages. That random page is
// what an archive of millions paid for until schema 3 (below): once the
// hash index outgrew the page cache, each insert read its leaf from the
// file and each checkpoint wrote back a page per message. Schema 1 kept topic names
// and 32-byte hashes in every index, 400 bytes of index per message; at a
// million 1,000-byte messages the insert rate of the last tenth was 0.45
// of the first's. Schema 2 takes about 200 bytes a message (index and WAL,
// 1.19 times the wire bytes on disk with the segments). At ten million
// on a quiet machine the last tenth ran at 0.60 of the first, and the
// writer's checkpoints that start the WAL over took a seventh of the last
// tenth's time; with the syncer's fsyncs below, two runs gave 0.67 and
// 0.80 (the first tenth's rate moves with the machine's other work).
// docs/archive.md ("The archive at scale", "What slows the last tenth")
// has the store scenario's figures and what they are made of.
//
// Checkpoints run beside the writer, on the syncer's connection, after
// its fsync rounds: a checkpoint on the writer stopped inserts for up to
// 40 % of a run of millions. A checkpoint beside a busy writer never
// copies the frames written while it runs, so SQLite never starts the WAL
// over by itself: when the WAL holds 256 Ki frames (270 MB), the syncer
// checkpoints until few frames are left and the writer copies those
// between two batches, after which SQLite starts the WAL over. SQLite
// fsyncs the database file only after a checkpoint that catches up with
// the WAL, which the syncer's never do beside a busy writer: so the syncer
// fsyncs it itself, beside the writer, after each of those checkpoints,
// and the writer's checkpoint, which does catch up, waits only for the
// pages it copies to reach the disk, not for every page copied since the
// WAL last started over: over a fill of ten million messages the writer's
// checkpoints took 4.3 and 4.7 s in two runs, against 22.3 and 23.8 s
// before, and the last tenth's insert rate rose from about 26,500 to
// 33,000 msg/s.
//
// The writer's connection has a page cache of Options.CacheSize (64 MiB):
// at ten million messages it holds the inner pages the writer reads (those
// of the hash index and the last pages of the others) and the leaves of
// the hash index's newest time partition (below). SQLite's own page
// cache walked all of it at most commits while the index was under 1 GiB;
// the package's (pcache.go) does not, which takes about 10 µs off each
// commit on an archive of 100,000 to 1,000,000 messages
// (BenchmarkAppendIndexFilled; docs/archive.md). With
// Options.MmapSize the query connections map the index file, so the pages
// they read are the kernel's page cache, with no read(2) or copy; it is
// off by default (see its cost there).
//
// # The hash index by time partition
//
// Schema 2's hash index, on hkey alone, took each insert to a random leaf
// of the whole index: at ten million messages 191,000 leaves, three times
// the writer's page cache, so most inserts read their leaf from the file
// or the WAL and each checkpoint wrote back a page a message, and the last
// tenth of a fill ran at 0.60 to 0.67 of the first (0.70 to 0.87 with
// schema 3, writer CPU 17 to 19 µs a message instead of 22 to 23). Schema
// 3 orders it by time partition first (partExpr: the timestamp in spans of
// 2^44 ns, 4 h 53 min), then hkey. A message's timestamp is part of its
// hash (waku.md §1), so a duplicate is in the partition of the message it
// repeats and its insert probes that partition alone; messages arrive with
// timestamps near their receive time, so inserts land in the newest
// partition, about a million entries (some 20,000 leaves of 1 KiB,
// estimated from schema 2's 191,000 for ten million) when ten million
// messages span 48 hours, which the writer's page cache holds. A lookup by
// hash alone (a store query's hashes, a cursor) probes each partition that
// holds rows, one probe of the time index to find each (partitions,
// index.go): about 11 partitions over 48 hours, so 20 hashes are some 220
// probes instead of 20 (at ten million messages, p50 0.90 and 1.07 ms
// before, 1.79 to 2.23 ms after, p99 under 4.2 ms). A message without a
// timestamp is stored at its receive time, so its duplicate may be in any
// partition: its insert probes them all (insertRowAnyTime), about 2.3 µs
// of the writer's time a partition (BenchmarkAppendUntimed: 33, 56 and 346
// µs a message with 1, 10 and 150 partitions, against 16 to 19 µs for a
// message with a timestamp, BenchmarkAppendIndex); a node keeps no relayed
// message without a timestamp (node.Config.ArchiveTimestampDrift, as
// nwaku's archive), so they come from store-sync, store resume or a
// program of its own. Both costs grow with the partitions that hold rows,
// which is where the rows' timestamps put them: a node keeps relayed
// messages within 20 s of its clock, so its partitions are those of its
// retention, but an archive fed timestamps spread over years (the drift
// check off, or a program of its own) can hold up to 2^20 of them, and a
// lookup by hash then probes each one. docs/archive.md, "The hash index by
// time partition", has the store scenario's figures before and after.
//
// # Figures
//
// Measured on the project machine (2 cores, ext4 on virtio, 24 GB, other
// work running, 2026-11-30) with
//
//	go test -run '^$' -bench WritePath -benchtime 10000x -count 5 ./archive/embedded/
//
// (the figures below were taken with the same method when it was a test),
// which runs, in alternating rounds in one process, 10,000 messages of the
// seed mix (25/50/25 % of 10,000/50,000/150,000-byte payloads, mean 65 kB)
// through each of: the append bound (the same bytes appended to one file in
// a directory on the same disk, an fsync every 64 messages), the archive
// alone, and decode+hash+archive; a run ends after the archive's Close
// (the last fsync). Medians of 5 rounds:
//
//	append bound (fsync every 64)   4,348 msg/s  1.00
//	archive alone                   4,787 msg/s  1.10 of the bound
//	decode+hash+archive             4,614 msg/s  1.06 of the bound
//
// Messages were acknowledged (committed, surviving kill -9) at a median
// 8,475 msg/s (archive alone, 6,200 to 12,200 over the rounds); over a whole
// run both the archive and the bound are held to the disk's write speed,
// about 300 MB/s while the measurement ran (10,500 msg/s, 680 MB/s, on the
// idle machine of the ARCHITECTURE table). The CRC-32C runs in Append
// on the caller's goroutine, unless the envelope carries it
// (message.Envelope.WireCRC: a relayed message that the relay decoded and
// hashed early, when gossipsub asked its id, which is one of 2 kB or more
// on first sight, while the relay keeps fewer such messages than its
// validation queue holds; package relay, earlydecode.go), or a publish
// whose hash was computed with its message id (message.Envelope.HashWithID:
// the relay's own publishes of 2 kB or more, lightpush's). Go benchmarks:
// go test -run '^$' -bench Append -benchtime 10000x ./archive/embedded/.
//
// The writer's CPU per message (Stats.WriterCPU: index transaction and
// segment write, kernel time included), before and after the WAL VFS and
// the segment reserve (2026-12-01, load average 1.6, three alternating
// runs of each build, medians):
//
//	go test -run '^$' -bench AppendIndex -benchtime 15000x ./archive/embedded/
//	go test -run '^$' -bench AppendInFlight -benchtime 4000x ./archive/embedded/
//
//	200-byte payloads, window 8 (7.5-8 msg/batch) 35.5 -> 22.4 µs
//	seed mix, window 32 (15 msg/batch)            35.7 -> 25.1 µs
//	seed mix, window 1 (1 msg/batch)              91   -> 66 µs
//
// and 18.2 -> 15.0 µs over the store scenario's million 1,000-byte
// messages (docs/archive.md, "The writer's CPU per message").
//
// # Write path and durability
//
// Append puts the envelope in a queue bounded in bytes (archive.Config.QueueBytes)
// and returns; when the queue is full it waits (push back, never a drop).
// One writer goroutine takes whatever is queued, up to archive.Config.MaxBatch,
// never waiting for more (group commit), and in one index transaction
// inserts the rows (a row whose hash is stored is not inserted: a
// duplicate stores nothing), writes the new records to the segment with
// one pwritev(2), then commits. Only then are the done callbacks called.
// So every message the index says is committed has its bytes in the
// kernel: it survives kill -9 of the process, as nwaku's SQLite default
// (WAL, synchronous=NORMAL) does.
//
// Two things keep the writer's system calls few. SQLite writes each WAL
// frame as two writes (its header, then its page); the writer's connection
// opens the index through a VFS of its own (walvfs.go, the default unix
// VFS but for the WAL's writes) that holds the frames a transaction
// appends and writes them, at most 64 KiB at a time, with the commit
// frame, before COMMIT returns: one write per commit instead of two per
// dirty page, and what is committed is in the kernel as before. And the
// writer reserves the current segment's blocks 16 MiB ahead of its
// records (fallocate(2), the file's size unchanged; never past
// Options.SegmentSize), so a record's write does not allocate blocks page
// by page; at most those 16 MiB are held past what the segment holds, and
// Close (or the next Open, after a crash) gives them back.
//
// A syncer goroutine makes it survive power loss every
// Options.FsyncInterval (1 s): it fsyncs the segments, the directory and the
// index's WAL, then records the last row so covered in the file "synced".
// After enough new rows it asks the writer to checkpoint the WAL between
// batches: a checkpoint run beside a busy writer never catches up, and
// the WAL would grow without bound; right after the fsync round, the
// checkpoint's own fsyncs do not wait for segment data. While the syncer
// brings the WAL to a start over (its checkpoints and fsyncs of the
// database file, then the writer's checkpoint), the next fsync round
// waits for it: a power loss then may lose more than FsyncInterval.
//
// Open recovers: rows after the "synced" mark whose records do not read
// back whole (length, CRC-32C) are deleted (after a power loss the WAL may
// reach the disk before the segment data), bytes past the last row are cut
// off and segment files past it removed. TestCrashKill9 kills a writing
// child process with SIGKILL and checks that every acknowledged message
// reads back byte-identical.
//
// # Files
//
//	index.db, index.db-wal, index.db-shm   the SQLite index
//	0000000001.seg ...                     segments, Options.SegmentSize each (256 MiB)
//	synced                                 the last row covered by an fsync round
//
// Options.IndexPath puts the index elsewhere (nwaku's sqlite://PATH); the
// segments, the synced mark and the lock stay in the directory.
//
// # Code
//
//	embedded.go   the Archive type, its goroutines and lock order; Options, Open, Close, Stats
//	writer.go     Append and the writer goroutine: batches, segment writes, index commits
//	sync.go       the syncer goroutine: fsync rounds and the "synced" watermark
//	recover.go    Open's crash recovery
//	index.go      the SQLite connections, WAL fsync and checkpoint
//	walvfs.go     the writer's VFS: the frames of a commit in one write
//	schema.go     the SQLite schema, its migrations, the refusal of nwaku's database
//	segment.go    the segment and record format
//	query.go      the planner's selections from the index, records read from the segments
//	retention.go  whole segments dropped, expired rows deleted on the writer
//
// # Retention
//
// The embedded archive deletes whole segments once every message in them
// has expired: the writer deletes their rows between batches, a few
// thousand at a time, and the file is then removed; nothing is rewritten.
// The rows of expired messages in the segments left are deleted the same
// way (time and capacity), so they are no longer served, while their
// bytes wait for their segment to go; the newest row always stays.
package embedded
