package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// statementNames name the archive's statements as nwaku's Postgres driver
// names its counterparts in its query metrics
// (common/databases/db_postgres/query_metrics.nim QueriesToMetricMap, and
// the prepared statements of waku_archive/driver/postgres_driver: a
// message insert is "InsertRow"): the first entry whose snippet the
// statement contains gives its name. A statement with no counterpart is
// "unknown_query_metric", as nwaku names a query its map misses (its
// partition creation among them). A hash query is one statement,
// "messages_lookup", as nwaku's.
var statementNames = []struct{ snippet, name string }{
	{"INSERT INTO courier_messages", "InsertRow"},
	{"FROM courier_hashes WHERE hash = ANY", "messages_lookup"},
	{"SELECT ts FROM courier_hashes WHERE hash", "SelectMessageByHashInMessagesLookup"},
	{"content_topic = ", "content_topic"},
	{"SELECT count(*) FROM courier_messages", "count_msgs"},
	{"VACUUM (ANALYZE)", "analyze_messages"},
	{"DETACH PARTITION", "detach_partition"},
	{"DROP TABLE IF EXISTS courier_", "drop_partition_table"},
	{"pg_advisory_unlock", "advisory_unlock"},
	{"pg_advisory_lock", "try_advisory_lock"},
	{"to_regclass", "check_version_table_exists"},
}

// UnknownStatement names a statement without a counterpart in nwaku.
const UnknownStatement = "unknown_query_metric"

// statementName returns the name of sql in statementNames, "" for the
// transaction statements (BEGIN, COMMIT, ROLLBACK), which nwaku's driver
// does not run.
func statementName(sql string) string {
	switch strings.ToLower(strings.TrimSpace(sql)) {
	case "begin", "begin read write", "commit", "rollback":
		return ""
	}
	for _, s := range statementNames {
		if strings.Contains(sql, s.snippet) {
			return s.name
		}
	}
	return UnknownStatement
}

// statementTracer reports each statement the pool runs to fn, with its
// name and the time from sending it to the end of its result (nwaku's
// "waitFinish" phase; pgx does not time the send apart). A statement of a
// pipelined batch is timed from the previous one's result, the first
// from the batch's start.
type statementTracer struct {
	fn func(name string, d time.Duration)
}

type traceKey struct{}

// traced is what the tracer keeps in a call's context: the statement's
// name ("" in a batch, whose statements are named as they end) and when
// it, or the batch's previous statement, started.
type traced struct {
	name string
	at   time.Time
}

var (
	_ pgx.QueryTracer = statementTracer{}
	_ pgx.BatchTracer = statementTracer{}
)

func (t statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	name := statementName(data.SQL)
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, &traced{name: name, at: time.Now()})
}

func (t statementTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if q, ok := ctx.Value(traceKey{}).(*traced); ok && q.name != "" && data.Err == nil {
		t.fn(q.name, time.Since(q.at))
	}
}

func (t statementTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, &traced{at: time.Now()})
}

func (t statementTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	prev, ok := ctx.Value(traceKey{}).(*traced)
	if !ok {
		return
	}
	now := time.Now()
	if name := statementName(data.SQL); name != "" && data.Err == nil {
		t.fn(name, now.Sub(prev.at))
	}
	prev.at = now // the batch's queries are read one at a time
}

func (t statementTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
