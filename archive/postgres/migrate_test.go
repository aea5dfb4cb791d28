package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/postgres"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
)

// v1Schema is the database as the build before schema version 2 made it:
// one table keyed by hash (migration 1, unchanged).
const v1Schema = `CREATE TABLE courier_schema (version integer NOT NULL); INSERT INTO courier_schema VALUES (1);
CREATE TABLE courier_messages (
	hash          bytea  PRIMARY KEY,
	ts            bigint NOT NULL,
	pubsub_topic  bytea  NOT NULL,
	content_topic bytea  NOT NULL,
	wire          bytea  NOT NULL
);
ALTER TABLE courier_messages ALTER COLUMN wire SET STORAGE EXTERNAL;
CREATE INDEX courier_messages_time ON courier_messages (ts, hash);
CREATE INDEX courier_messages_pubsub ON courier_messages (pubsub_topic, ts, hash);
CREATE INDEX courier_messages_content ON courier_messages (pubsub_topic, content_topic, ts, hash);`

// partitions returns the partitions of courier_messages, by name.
func partitions(t *testing.T, url string) []string {
	t.Helper()
	rows, err := pgConn(t, url).Query(context.Background(), `SELECT c.relname::text FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'courier_messages'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	return names
}

// TestPostgresMigratesV1: a database at schema version 1 opens at this
// build's version with every message (hash, timestamp, topics, bytes),
// now in partitions by hour (and one year-long partition for a timestamp
// far in the past), with every hash in courier_hashes, whose key carries
// the timestamps (version 3); queries of each
// form find them, and a message stored before is a duplicate after.
func TestPostgresMigratesV1(t *testing.T) {
	url := pgtest.DB(t)
	c := pgConn(t, url)
	ctx := context.Background()
	if _, err := c.Exec(ctx, v1Schema); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Hour)
	var envs []*message.Envelope
	for i := range 60 {
		ts := now.Add(-time.Duration(i) * 7 * time.Minute).UnixNano() // 7 hours back
		if i == 59 {
			ts = 1_000_000_000 // 1970: far from now
		}
		env := newEnv(t, "/waku/2/rs/1/"+strconv.Itoa(i%2), "/mig/1/t"+strconv.Itoa(i%3)+"/proto", ts, []byte("payload "+strconv.Itoa(i)))
		h := env.Hash()
		if _, err := c.Exec(ctx, "INSERT INTO courier_messages VALUES ($1, $2, $3, $4, $5)",
			h[:], ts, []byte(env.PubsubTopic()), []byte(env.Message().ContentTopic), env.Wire()); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	a, err := postgres.Open(ctx, url, archive.Config{}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var v, hashes int
	if err := c.QueryRow(ctx, "SELECT (SELECT version FROM courier_schema), (SELECT count(*) FROM courier_hashes)").Scan(&v, &hashes); err != nil || v != 3 || hashes != 60 {
		t.Fatalf("version %d, %d hashes, %v; want 3, 60", v, hashes, err)
	}
	var keyDef string
	if err := c.QueryRow(ctx, "SELECT indexdef FROM pg_indexes WHERE indexname = 'courier_hashes_pkey'").Scan(&keyDef); err != nil || !strings.HasSuffix(keyDef, "(hash) INCLUDE (ts)") {
		t.Fatalf("courier_hashes' key %q, %v; want it on hash, including ts", keyDef, err)
	}
	parts := partitions(t, url)
	if len(parts) != 9 || parts[0] != "courier_messages_0_31536000" { // 8 hours and 1970
		t.Fatalf("partitions %v", parts)
	}
	if st := a.Stats(); st.Messages != 60 {
		t.Fatalf("%d messages after the migration, want 60", st.Messages)
	}
	res, err := a.Query(ctx, archive.Query{Forward: true, IncludeData: true, Limit: 100})
	if err != nil || len(res.Messages) != 60 {
		t.Fatalf("all: %d messages, %v", len(res.Messages), err)
	}
	for i, s := range res.Messages {
		e := envs[59-i] // oldest first
		if s.Hash != e.Hash() || s.Timestamp != e.Message().Timestamp || s.PubsubTopic != e.PubsubTopic() || string(s.Wire) != string(e.Wire()) {
			t.Fatalf("message %d: %x at %d on %s; want message %d", i, s.Hash, s.Timestamp, s.PubsubTopic, 59-i)
		}
	}
	from, to := now.Add(-3*time.Hour).UnixNano(), now.UnixNano()
	res, err = a.Query(ctx, archive.Query{PubsubTopic: "/waku/2/rs/1/0", ContentTopics: []string{"/mig/1/t0/proto"}, StartTime: &from, EndTime: &to, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []message.Hash
	for _, s := range res.Messages {
		got = append(got, s.Hash)
	}
	for i := 59; i >= 0; i-- {
		if ts := envs[i].Message().Timestamp; i%6 == 0 && ts >= from && ts <= to {
			want = append(want, envs[i].Hash())
		}
	}
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("content topic and time range: %x, want %x", got, want)
	}
	res, err = a.Query(ctx, archive.Query{Hashes: []message.Hash{envs[3].Hash(), envs[59].Hash()}, IncludeData: true})
	if err != nil || len(res.Messages) != 2 || res.Messages[0].Hash != envs[59].Hash() || string(res.Messages[1].Wire) != string(envs[3].Wire()) {
		t.Fatalf("hash lookup: %+v, %v", res, err)
	}
	c3 := envs[3].Hash()
	res, err = a.Query(ctx, archive.Query{Cursor: &c3, Limit: 2})
	if err != nil || len(res.Messages) != 2 || res.Messages[1].Hash != envs[4].Hash() {
		t.Fatalf("after a cursor: %+v, %v", res, err)
	}
	appendWait(t, a, envs[10])
	if st := a.Stats(); st.Duplicates != 1 || st.Inserts != 0 {
		t.Fatalf("a message stored before the migration: stats %+v", st)
	}
}

// TestPostgresRetentionDropsPartitions: retention by time drops the
// hourly partitions whose messages have all expired, deletes the expired
// rows of the partition where they end, and their hashes with them;
// messages still to come for a dropped hour get it made again.
func TestPostgresRetentionDropsPartitions(t *testing.T) {
	now := time.Now().Truncate(time.Hour).Add(30 * time.Minute)
	nowf := func() time.Time { return now }
	url := pgtest.DB(t)
	open := func(cfg archive.Config) *postgres.Archive {
		a, err := postgres.Open(context.Background(), url, cfg, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a := open(archive.Config{Now: nowf})
	var envs []*message.Envelope
	for i := range 12 { // every 30 minutes, 5.5 hours back to now
		env := newEnv(t, "p", "/a/1/b/c", now.Add(-time.Duration(11-i)*30*time.Minute).UnixNano(), []byte{byte(i)})
		appendWait(t, a, env)
		envs = append(envs, env)
	}
	a.Close()
	// time:7200 keeps the messages of the last two hours: the 5 from
	// now-2h; the hours before now-2h:30 go whole, now-2h:30 by row.
	if parts := partitions(t, url); len(parts) != 6 {
		t.Fatalf("partitions %v, want 6 hours", parts)
	}
	a = open(archive.Config{Now: nowf, Retention: "time:7200"})
	deadline := time.Now().Add(time.Minute)
	for a.Stats().RetentionRuns == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := a.Stats()
	if st.Deleted != 7 || st.RetentionErrors != 0 || st.Messages != 5 {
		t.Fatalf("stats %+v; want 7 deleted, 5 left", st)
	}
	res, err := a.Query(context.Background(), archive.Query{Forward: true})
	if err != nil || len(res.Messages) != 5 || res.Messages[0].Hash != envs[7].Hash() {
		t.Fatalf("left: %+v, %v", res, err)
	}
	var hashes int
	if err := pgConn(t, url).QueryRow(context.Background(), "SELECT count(*) FROM courier_hashes").Scan(&hashes); err != nil || hashes != 5 {
		t.Fatalf("%d hashes left, %v; want 5", hashes, err)
	}
	hour := func(d time.Duration) string {
		from := now.Truncate(time.Hour).Add(d).Unix()
		return "courier_messages_" + strconv.FormatInt(from, 10) + "_" + strconv.FormatInt(from+3600, 10)
	}
	if parts, want := partitions(t, url), []string{hour(-2 * time.Hour), hour(-time.Hour), hour(0)}; !slices.Equal(parts, want) {
		t.Fatalf("partitions %v, want %v", parts, want)
	}
	// An expired message comes again (store-sync, say): it is stored in
	// its hour made anew; the next run deletes it.
	appendWait(t, a, envs[0])
	if st := a.Stats(); st.Inserts != 1 || st.Failed != 0 {
		t.Fatalf("an expired message again: stats %+v", st)
	}
	if parts := partitions(t, url); len(parts) != 4 || parts[0] != hour(-5*time.Hour) {
		t.Fatalf("partitions %v, want its hour made again", parts)
	}
}
