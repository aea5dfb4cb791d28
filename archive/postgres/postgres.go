package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/driver"
	"github.com/couriernet/courier/archive/internal/queue"
	"github.com/couriernet/courier/message"
)

// DefaultMaxConns is the default of Options.MaxConns, nwaku's default
// --store-max-num-db-connections (tools/confutils/cli_args.nim).
const DefaultMaxConns = 50

// DefaultConnectTimeout bounds opening each connection to the database
// (TCP, TLS and the start-up exchange) when the URL sets no
// connect_timeout. pgx and libpq (nwaku's) wait for ever on a server that
// accepts and never answers, and Open with them, so a node whose database
// URL names such a server never finished starting.
const DefaultConnectTimeout = 10 * time.Second

// Options are the Postgres archive's own settings, beside the
// archive.Config every driver takes. The zero value gives the defaults.
type Options struct {
	// MaxConns bounds the connections to the database
	// (--store-max-num-db-connections). 0 means DefaultMaxConns (50);
	// negative is invalid.
	MaxConns int
	// OnStatement, when set, is called after each statement the archive
	// runs that succeeded, with nwaku's name for it and the time it took
	// (see statementNames): nwaku's query_count and query_time_secs. It
	// runs on the goroutine of the statement's caller and must not block.
	OnStatement func(name string, d time.Duration)
}

// config is what an Archive runs with: the common settings and its
// options, every default filled in.
type config struct {
	driver.Settings
	Options
}

// resolve fills in the defaults of cfg and o and checks them. Errors wrap
// archive.ErrConfig.
func resolve(cfg archive.Config, o Options) (config, error) {
	s, err := driver.Resolve(cfg)
	if err != nil {
		return config{}, err
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConns < 0 {
		return config{}, driver.Errorf(archive.ErrConfig, "MaxConns %d is negative", o.MaxConns)
	}
	return config{Settings: s, Options: o}, nil
}

// Archive is the archive in a PostgreSQL database (pgx v5): the table
// courier_messages, partitioned by hour, holds each message's hash,
// timestamp, topics and wire bytes (bytea, stored uncompressed out of
// line), and courier_hashes each hash with its timestamp (see the package
// documentation). It answers the same queries in the same order as the
// embedded archive (archive/embedded).
//
// Writes: Append queues (bounded in bytes, push back) and one writer
// goroutine inserts whatever is queued, up to Config.MaxBatch, in one
// transaction, after making the partitions it needs: one statement per
// message (its hash into courier_hashes, ON CONFLICT DO NOTHING, and only
// if that stored it, its row into courier_messages),
// all sent in one pipeline (pgx.Batch), so a batch costs one round trip
// and one commit (group commit). One INSERT ... SELECT FROM unnest(...) of
// the whole batch measured the same (430 msg/s at the seed mix, both, with
// 32 MB of shared_buffers) and needs the batch copied into arrays first.
// The done callbacks run after the commit returns, and PostgreSQL's commit
// is durable (synchronous_commit on, its default), so an acknowledged
// message survives the kill of the node and of the database server.
//
// Several nodes may share one database: each row is keyed by its hash, so
// a message relayed to two of them is stored once.
type Archive struct {
	cfg  config
	pool *pgxpool.Pool
	q    *queue.Queue

	writerDone chan struct{}
	quit       chan struct{} // closed by Close: stops the writer's retries
	retention  *driver.RetentionLoop
	closeOnce  sync.Once
	// readMu: queries hold it shared; Close exclusively, so a query never
	// runs on a closed pool.
	readMu     sync.RWMutex
	readClosed bool

	stored0 uint64 // rows at Open
	st      driver.Counters
	// parts are the partitions of courier_messages as the writer last saw
	// them; the writer alone reads and sets them (ensurePartitions).
	parts []partition
}

var _ archive.Archive = (*Archive)(nil)

// sessionDefaults are the settings of the archive's sessions, set on
// each connection as it starts; a URL that sets one keeps its own.
//
// plan_cache_mode=force_generic_plan: each statement is planned once per
// connection, for every partition, and the partitions a run does not need
// are pruned as it starts (the statements bound ts by parameters for
// that: query.go); a plan of its own for each run of a query would cost
// more than the query (PostgreSQL 15, 49 partitions, a million rows: 1.6
// to 3 ms to plan a page after a cursor each time, against 0.2 ms to run
// its generic plan, whose planning, 3 to 6 ms, comes once a connection).
//
// jit=off: a generic plan over every partition carries row estimates of
// the whole table, above jit_above_cost, so PostgreSQL would compile each
// run of a page's query to machine code: 0.5 to 1.5 s of JIT for a hash
// lookup that runs in 1 ms (PostgreSQL 15, a million rows, 48
// partitions). No query of the archive reads enough rows to gain from it.
var sessionDefaults = map[string]string{
	"plan_cache_mode": "force_generic_plan",
	"jit":             "off",
}

func setSessionDefaults(params map[string]string) {
	for k, v := range sessionDefaults {
		if _, ok := params[k]; !ok {
			params[k] = v
		}
	}
}

// Open connects to the database at url
// (postgres://user:password@host:port/db, or any form pgx accepts),
// refuses a database written by nwaku (archive.ErrNwakuDatabase; nothing in it is
// changed), applies the schema migrations this build knows unless
// Config.NoMigration (archive.ErrSchema then, if the database is
// behind), and starts the writer and the retention loop. Errors wrap
// archive.ErrConfig, archive.ErrNwakuDatabase, archive.ErrSchema or come
// from pgx.
func Open(ctx context.Context, url string, cfg archive.Config, opts Options) (*Archive, error) {
	c, err := resolve(cfg, opts)
	if err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: database URL: %v", archive.ErrConfig, err)
	}
	pc.MaxConns = int32(c.MaxConns)
	if c.OnStatement != nil {
		pc.ConnConfig.Tracer = statementTracer{fn: c.OnStatement}
	}
	setSessionDefaults(pc.ConnConfig.RuntimeParams)
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("archive: postgres: %w", err)
	}
	p := &Archive{cfg: c, pool: pool, q: queue.New(c.QueueBytes), writerDone: make(chan struct{}), quit: make(chan struct{})}
	if err := p.start(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	go p.writeLoop()
	p.retention = driver.StartRetention(c.Settings, p.retain, &p.st)
	return p, nil
}

func (p *Archive) start(ctx context.Context) error {
	if err := migratePostgres(ctx, p.pool, !p.cfg.NoMigration, p.cfg.Logger); err != nil {
		return err
	}
	if p.cfg.Vacuum {
		if _, err := p.pool.Exec(ctx, "VACUUM (ANALYZE) courier_messages, courier_hashes"); err != nil {
			return fmt.Errorf("archive: postgres: vacuum: %w", err)
		}
	}
	var n int64
	err := p.pool.QueryRow(ctx, "SELECT count(*) FROM courier_messages").Scan(&n)
	if err != nil {
		return fmt.Errorf("archive: postgres: %w", err)
	}
	p.stored0 = uint64(n)
	p.parts, err = listPartitions(ctx, p.pool)
	return err
}

// Append implements archive.Archive.
func (p *Archive) Append(ctx context.Context, env *message.Envelope, done func(error)) error {
	it, err := queue.NewItem(env, done, p.cfg.Now, p.cfg.OnInsert != nil)
	if err != nil {
		return err
	}
	return p.q.Put(ctx, it)
}

func (p *Archive) writeLoop() {
	defer close(p.writerDone)
	var batch []queue.Item
	var rows pgBatch
	for {
		var ok bool
		if batch, ok = p.q.Take(batch, p.cfg.MaxBatch, nil); !ok {
			return
		}
		err := p.commitRetrying(batch, &rows)
		p.q.Release(batch)
		queue.Finish(batch, err, &p.st, p.cfg.OnInsert, p.cfg.OnFailure)
		clear(batch)
	}
}

// pgRetryFor bounds how long the writer tries a batch again after it
// failed for want of the server (connection refused or lost, the server
// shutting down): a restart of PostgreSQL stalls the archive, and Append
// pushes back, instead of failing messages. Close stops the retries.
const pgRetryFor = 30 * time.Second

// commitRetrying commits batch, trying again with backoff (50 ms doubling
// to 2 s) while the error is the connection's and pgRetryFor has not
// passed. A batch whose commit reached the server but whose answer was
// lost is inserted again: its rows are then skipped as duplicates.
func (p *Archive) commitRetrying(batch []queue.Item, rows *pgBatch) error {
	wait := 50 * time.Millisecond
	deadline := time.Now().Add(pgRetryFor)
	for {
		err := p.commit(batch, rows)
		if err == nil || !retryable(err) || time.Now().After(deadline) {
			return err
		}
		p.st.Retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.quit:
			t.Stop()
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// retryable reports whether err is the connection's rather than the
// statement's: no server error at all (refused, reset, timed out), or one
// of class 08 (connection exception), 57P01 to 57P03 (the server shutting
// down or starting) or a serialization failure or deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return true
	}
	switch pe.Code {
	case "57P01", "57P02", "57P03", "40001", "40P01":
		return true
	}
	return strings.HasPrefix(pe.Code, "08")
}

// pgBatch holds the column arrays of one insert, reused between batches.
type pgBatch struct {
	hashes, pubsub, content, wires [][]byte
	ts                             []int64
	seen                           map[message.Hash]struct{}
}

// insertRow stores one message: its hash in courier_hashes, then, if
// the hash was new there, the row in its partition of courier_messages. A
// hash already stored is skipped (0 rows affected).
const insertRow = `WITH h AS (INSERT INTO courier_hashes (hash, ts) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING RETURNING hash)
INSERT INTO courier_messages (ts, hash, pubsub_topic, content_topic, wire)
SELECT $2, hash, $3, $4, $5 FROM h ON CONFLICT DO NOTHING`

func (p *Archive) commit(batch []queue.Item, b *pgBatch) error {
	start := time.Now()
	defer func() { p.st.CommitTook(time.Since(start)) }()
	b.hashes, b.pubsub, b.content, b.wires, b.ts = b.hashes[:0], b.pubsub[:0], b.content[:0], b.wires[:0], b.ts[:0]
	if b.seen == nil {
		b.seen = make(map[message.Hash]struct{})
	}
	clear(b.seen)
	var dups uint64
	for i := range batch {
		env := batch[i].Env
		msg := env.Message()
		if msg.Ephemeral {
			continue
		}
		h := env.Hash()
		if _, ok := b.seen[h]; ok {
			dups++
			continue
		}
		b.seen[h] = struct{}{}
		ts := msg.Timestamp
		if ts <= 0 {
			ts = batch[i].Recv
		}
		b.hashes = append(b.hashes, h[:])
		b.ts = append(b.ts, ts)
		b.pubsub = append(b.pubsub, []byte(env.PubsubTopic()))
		b.content = append(b.content, []byte(msg.ContentTopic))
		b.wires = append(b.wires, env.Wire())
	}
	defer clear(b.wires) // do not keep the batch's wire bytes alive
	if len(b.hashes) == 0 {
		p.st.Dups.Add(dups)
		return nil
	}
	ctx := context.Background()
	n, bytes, err := p.insert(ctx, b)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" { // no partition for a row: dropped since the writer looked
		if p.parts, err = listPartitions(ctx, p.pool); err == nil {
			n, bytes, err = p.insert(ctx, b)
		}
	}
	if err != nil {
		return fmt.Errorf("archive: postgres: insert: %w", err)
	}
	p.st.Inserts.Add(uint64(n))
	p.st.Dups.Add(dups + uint64(int64(len(b.hashes))-n))
	p.st.Bytes.Add(uint64(bytes))
	return nil
}

// insert makes the partitions b needs and inserts it in one transaction;
// it returns the rows inserted and their wire bytes.
func (p *Archive) insert(ctx context.Context, b *pgBatch) (n, bytes int64, err error) {
	if err := p.ensurePartitions(ctx, b.ts); err != nil {
		return 0, 0, err
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		n, bytes = 0, 0
		var pb pgx.Batch
		for i := range b.hashes {
			pb.Queue(insertRow, b.hashes[i], b.ts[i], b.pubsub[i], b.content[i], b.wires[i])
		}
		br := tx.SendBatch(ctx, &pb)
		for i := range b.hashes {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			if tag.RowsAffected() == 1 {
				n++
				bytes += int64(len(b.wires[i]))
			}
		}
		return br.Close()
	})
	return n, bytes, err
}

// Close implements archive.Archive: it commits what is queued, stops the
// writer and the retention loop and closes the connections. A batch that
// fails is reported to its done callbacks, so Close itself returns nil,
// the second time too.
func (p *Archive) Close() error {
	p.closeOnce.Do(func() {
		close(p.quit)
		p.q.Close()
		<-p.writerDone
		p.retention.Stop()
		p.readMu.Lock()
		p.readClosed = true
		p.readMu.Unlock()
		p.pool.Close()
	})
	return nil
}

// Stats returns a snapshot of the archive's counters. Messages counts the
// rows at Open plus this archive's inserts less its retention deletes; rows
// written by other nodes sharing the database since Open are not counted.
func (p *Archive) Stats() archive.Stats {
	qb, qm := p.q.Len()
	s := p.st.Snapshot()
	s.Messages = p.stored0 + s.Inserts - min(s.Deleted, p.stored0+s.Inserts)
	s.QueuedBytes, s.QueuedMessages = qb, qm
	return s
}

// pgErr wraps an error of a query.
func pgErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("archive: postgres: %w", err)
}
