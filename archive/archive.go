package archive

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/couriernet/courier/message"
)

// Archive stores envelopes keyed by message hash and answers store v3
// queries. Implementations are safe for concurrent use.
type Archive interface {
	// Append queues env for storage and returns at once unless the queue
	// (bounded in bytes) is full, in which case it blocks until there is
	// room or ctx ends (push back, never drop). done (may be nil) is called
	// exactly once from the writer goroutine, after the batch holding env is
	// committed (err nil), or with the error. Ephemeral messages and
	// duplicates are acknowledged with nil without being stored. The archive
	// keeps env (and env.Wire()) until done runs; it never modifies them.
	//
	// Append returns ctx.Err() when ctx ends while it waits, ErrClosed after
	// Close, and ErrBadEnvelope for a nil envelope or message or wire bytes
	// over message.MaxSize; when Append returns an error, done is not called.
	// done must not block (nor call Append): it runs on the writer
	// goroutine, and the next batch waits for it.
	Append(ctx context.Context, env *message.Envelope, done func(error)) error
	// Query answers a store v3 query. Errors wrap ErrBadQuery (invalid
	// query; ErrUnknownCursor is one of them), ErrClosed, ErrCorrupt or come
	// from the index or the file system.
	Query(ctx context.Context, q Query) (*Result, error)
	// Stats returns a snapshot of the archive's counters since it was
	// opened. A driver fills the fields that apply to it and leaves the
	// others zero (a database without segment files appends no bytes).
	Stats() Stats
	// Close flushes and commits everything queued, fsyncs, stops the writer
	// goroutine and releases the files. Appends waiting for room return
	// ErrClosed. Calling Close again returns nil.
	Close() error
}

// Query is a store v3 query (13/WAKU2-STORE, StoreQueryRequest) with the
// semantics of nwaku v0.38.1's archive drivers (waku_archive/archive.nim and
// waku_archive/driver/{sqlite,postgres}_driver): every filter that is set is
// ANDed with the others, hashes included. Every implementation of Archive
// answers exactly these rules:
//
//   - PubsubTopic: "" selects every pubsub topic.
//   - ContentTopics: a message matches when its content topic is one of
//     them; empty selects every content topic. They need no PubsubTopic.
//   - StartTime <= timestamp <= EndTime, both inclusive, Unix nanoseconds;
//     nil is unbounded. The spec (rfc-index 13/store.md) makes the end
//     exclusive; nwaku's drivers compare timestamp <= endTime, and interop
//     with nwaku wins.
//   - Hashes: a message matches when its hash is one of them; hashes not
//     stored are left out. Hashes are ANDed with the other filters as nwaku
//     does (js-waku sends a pubsub topic along with the hashes).
//   - Cursor: the page starts strictly after (Forward) or ends strictly
//     before (backward) the cursor's (timestamp, hash), in every query form,
//     hash lookups included.
//
// The order is (timestamp, hash), both ascending. With a Cursor, more than
// MaxContentTopics content topics is ErrTooManyContentTopics; without one
// any number is accepted, as nwaku checks the count only when a cursor is
// present. An empty query selects every stored message.
type Query struct {
	PubsubTopic   string
	ContentTopics []string
	// StartTime and EndTime bound the message timestamp in Unix nanoseconds,
	// both inclusive; nil means unbounded.
	StartTime, EndTime *int64
	// Hashes selects the messages with these hashes (at most MaxQueryHashes).
	Hashes []message.Hash
	// Cursor is the hash of the message the page starts after (Forward) or
	// ends before (backward), exclusive; nil starts at the first (Forward) or
	// last message. An all-zero cursor is ErrZeroCursor; a cursor not stored
	// is ErrUnknownCursor.
	Cursor *message.Hash
	// Forward pages from old to new; false (the store v3 default) pages from
	// new to old. Results are always in forward order.
	Forward bool
	// Limit is the page size: 0 means DefaultPageSize, more than MaxPageSize
	// means MaxPageSize, negative is invalid.
	Limit int
	// IncludeData reads each message's stored bytes into Stored.Wire; false
	// returns hashes, topics and timestamps only (a presence query).
	IncludeData bool
}

// Result is one page of a query.
type Result struct {
	// Messages are in forward order: by timestamp, then hash.
	Messages []Stored
	// Cursor is the hash to pass as Query.Cursor for the next page in the
	// same direction: the last message of the page (forward) or the first
	// (backward). nil means there are no more pages.
	Cursor *message.Hash
}

// Stored is one archived message.
type Stored struct {
	Hash        message.Hash
	PubsubTopic string
	// Wire is the encoded WakuMessage exactly as it was appended (at most
	// message.MaxSize bytes), nil unless Query.IncludeData. It is not
	// decoded: the archive checks its length and CRC-32C only, so a store
	// server can write it into a response as it is. It is a fresh buffer
	// that the caller owns.
	Wire []byte
	// Timestamp orders the archive, in Unix nanoseconds: the message's
	// timestamp field when it is positive, otherwise the time the archive
	// received the message (as nwaku does).
	Timestamp int64
}

// Query limits (nwaku waku_store/common.nim and waku_archive/archive.nim).
const (
	// DefaultPageSize is the page size of a query whose Limit is 0.
	DefaultPageSize = 20
	// MaxPageSize is the largest page a query returns.
	MaxPageSize = 100
	// MaxContentTopics is the most content topics a query with a cursor may
	// name.
	MaxContentTopics = 10
	// MaxQueryHashes is the most hashes a hash lookup may name.
	MaxQueryHashes = 1000
)

// Sentinel errors. Errors returned by this package wrap at most one of them.
var (
	// ErrClosed is returned by Append and Query after Close.
	ErrClosed = errors.New("archive: closed")
	// ErrBadQuery marks a query that breaks the rules of Query.
	ErrBadQuery = errors.New("archive: bad query")
	// ErrUnknownCursor is a query whose cursor is not stored; it wraps
	// ErrBadQuery.
	ErrUnknownCursor = badQuery("cursor not stored")
	// ErrZeroCursor is a query whose cursor is all zero bytes; it wraps
	// ErrBadQuery.
	ErrZeroCursor = badQuery("all-zero cursor")
	// ErrTooManyContentTopics is a query with a cursor and more than
	// MaxContentTopics content topics; it wraps ErrBadQuery.
	ErrTooManyContentTopics = badQuery("too many content topics")
	// ErrBadEnvelope is returned by Append for a nil envelope or message, or
	// wire bytes over message.MaxSize.
	ErrBadEnvelope = errors.New("archive: bad envelope")
	// ErrConfig is wrapped by every configuration error of the drivers'
	// Open functions (archive/embedded, archive/postgres, archive/dburl)
	// and of ParseRetention.
	ErrConfig = errors.New("archive: invalid config")
	// ErrLocked is returned by the embedded archive's Open when another
	// Open holds the directory.
	ErrLocked = errors.New("archive: directory in use")
	// ErrCorrupt marks a segment record that does not match its index row
	// (length or CRC-32C), or an index that points past a segment's end.
	ErrCorrupt = errors.New("archive: corrupt segment")
	// ErrSchema is returned by the drivers' Open when the database's
	// schema version is newer than this build's, or older with
	// Config.NoMigration, or a migration fails.
	ErrSchema = errors.New("archive: database schema")
	// ErrNwakuDatabase is returned by the drivers' Open for a database
	// that nwaku wrote. It is detected by its schema and never modified.
	ErrNwakuDatabase = errors.New("archive: database written by nwaku")
)

type queryError struct{ msg string }

func (e *queryError) Error() string { return "archive: bad query: " + e.msg }
func (e *queryError) Unwrap() error { return ErrBadQuery }

func badQuery(msg string) error { return &queryError{msg} }

// Defaults and bounds of Config.
const (
	DefaultQueueBytes = 64 << 20
	DefaultMaxBatch   = 1024
	// MinQueueBytes is the smallest QueueBytes: two of the largest messages
	// with what the queue counts for each (queueItemOverhead).
	MinQueueBytes = int64(2 * (message.MaxSize + queueItemOverhead))
)

// queueItemOverhead is what one queued envelope counts besides its wire
// bytes (the drivers' write queue, archive/internal/queue).
const queueItemOverhead = 256

// Config holds the settings every driver takes; each driver adds its own
// (archive/embedded.Options, archive/postgres.Options), and
// archive/dburl.Config holds all three. The zero value gives the defaults.
type Config struct {
	// QueueBytes bounds the bytes of queued and uncommitted envelopes (wire
	// length plus about 256 bytes each); Append blocks while it is full.
	// 0 means DefaultQueueBytes (64 MiB); less than MinQueueBytes is invalid.
	QueueBytes int64
	// MaxBatch is the most messages committed in one index transaction. The
	// writer commits whatever is queued, up to MaxBatch, never waiting for
	// more. 0 means DefaultMaxBatch (1024); negative is invalid.
	MaxBatch int
	// Now gives the receive time stored for messages without a positive
	// timestamp, and the time retention measures age from. nil means
	// time.Now.
	Now func() time.Time
	// Retention is the retention policy in nwaku's grammar (see
	// ParseRetention), e.g. "time:172800" or "capacity:100000;size:20GB".
	// "" and "none" keep every message: the library deletes nothing unless
	// told (the node's --store-message-retention-policy defaults to
	// DefaultRetention, as nwaku's).
	Retention string
	// RetentionInterval is how often the policy is applied, first right
	// after Open; the writer goes on while it runs. 0 means
	// DefaultRetentionInterval (30 minutes, nwaku's
	// WakuArchiveDefaultRetentionPolicyInterval); negative is invalid.
	RetentionInterval time.Duration
	// NoMigration refuses to create or migrate the schema at Open
	// (--store-message-db-migration=false): a database that is not at this
	// build's schema version, a new one included, fails with ErrSchema.
	NoMigration bool
	// Vacuum rebuilds the index (SQLite VACUUM; Postgres VACUUM ANALYZE of
	// the archive's table) at Open (--store-message-db-vacuum).
	Vacuum bool
	// Logger receives the policy in force at Open, what a driver notes
	// there (a migration, a fallback) and each retention run's outcome.
	// nil means slog.Default().
	Logger *slog.Logger
	// OnInsert, when set, is called once for each message the writer
	// acknowledges without error and does not skip as ephemeral (stored,
	// or already stored: nwaku's insert also succeeds for a duplicate),
	// with its envelope and the time from its Append to the commit of the
	// batch that holds it, which is what a caller of nwaku's insert waits
	// for (nwaku waku_archive/archive.nim times driver.put for
	// waku_archive_insert_duration_seconds). It runs on the writer
	// goroutine, one call at a time, before the message's done callback,
	// so it must be quick and must not block; it must not keep env past
	// the call unless the caller of Append allows it. nil means none.
	OnInsert func(env *message.Envelope, d time.Duration)
	// OnFailure, when set, is called once for each batch the writer fails
	// to commit, with the error (it wraps the file system's or the
	// database's: a full disk is syscall.ENOSPC from a segment write, or
	// SQLite's or Postgres's own "disk is full" error) and how many of the
	// batch's messages were not ephemeral; their done callbacks get the
	// same error. It runs on the writer goroutine, one call at a time,
	// before those callbacks, so it must be quick and must not block. The
	// writer goes on with the next batch: once the cause is gone (space
	// freed), commits succeed again and OnInsert is called again. nil
	// means none.
	OnFailure func(err error, messages int)
	// OnQuery, when set, receives the duration of every Query that reaches
	// the index or database, successful or not (nwaku's
	// waku_archive_query_duration_seconds times driver.getMessages). It
	// runs on the caller's goroutine. nil means none.
	OnQuery func(d time.Duration)
}

// Stats is a snapshot of an archive's counters since Open.
type Stats struct {
	Messages   uint64 // messages in the archive: those found at Open plus Inserts
	Inserts    uint64 // messages stored
	Duplicates uint64 // messages acknowledged without storing: hash already stored
	Ephemeral  uint64 // messages acknowledged without storing: ephemeral
	Failed     uint64 // messages acknowledged with an error
	Batches    uint64 // index transactions committed or failed
	// BytesAppended counts segment bytes written: wire bytes plus an 8-byte
	// record header per stored message.
	BytesAppended uint64
	// CommitTime is the total time of all batches, from the start of the
	// index transaction to its commit (segment writes included); divide by
	// Batches for the mean. MaxCommit is the longest.
	CommitTime, MaxCommit time.Duration
	Syncs                 uint64        // fsync rounds (segments, then index)
	SyncErrors            uint64        // failed fsync rounds and checkpoints
	SyncTime              time.Duration // total time of the fsync rounds
	Checkpoints           uint64        // index WAL checkpoints, after fsync rounds, beside the writer or on it
	CheckpointTime        time.Duration // total time of the checkpoints
	// WriterCheckpointTime is the part of CheckpointTime the embedded
	// archive's writer spent checkpointing between batches instead of
	// writing (the rest ran beside it).
	WriterCheckpointTime time.Duration
	Queries              uint64 // queries answered, successful or not
	QueuedBytes          int64  // bytes queued or in the batch being committed
	QueuedMessages       int    // envelopes queued or in the batch being committed
	Deleted              uint64 // messages deleted by retention
	RetentionRuns        uint64 // retention runs finished, successful or not
	RetentionErrors      uint64 // retention runs that failed
	Retries              uint64 // Postgres: batches tried again after losing the server
	// WriterCPU is the user+system CPU time the embedded archive's writer
	// spent committing batches (index transaction, segment pwritev,
	// kernel time included); zero outside Linux and for Postgres. The
	// CRC-32C runs in Append, on the caller's goroutine, or came with the
	// envelope (message.Envelope.WireCRC), and is not in it.
	WriterCPU time.Duration
}
