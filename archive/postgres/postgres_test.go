package postgres_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/archive/postgres"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
)

var (
	newEnv     = archivetest.NewEnv
	appendWait = archivetest.AppendWait
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openPG opens an archive on a new database and returns it with a function
// that opens the same database again (after Close). Both close what they
// open at the end of the test.
func openPG(t *testing.T, cfg archive.Config) (archive.Archive, func(archive.Config) archive.Archive) {
	url := pgtest.DB(t)
	reopen := func(cfg archive.Config) archive.Archive {
		a, err := postgres.Open(context.Background(), url, cfg, postgres.Options{})
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	return reopen(cfg), reopen
}

func pgConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// nwakuPostgresSchema is the shape of nwaku v0.38.1's Postgres archive
// (migrations/message_store_postgres/: version table, messages
// partitioned by timestamp, messages_lookup), enough to be recognised.
const nwakuPostgresSchema = `
CREATE TABLE version (version INTEGER NOT NULL);
INSERT INTO version VALUES (7);
CREATE TABLE messages (
	messageHash VARCHAR NOT NULL, pubsubTopic VARCHAR NOT NULL, contentTopic VARCHAR NOT NULL,
	payload VARCHAR, version INTEGER NOT NULL, timestamp BIGINT NOT NULL, meta VARCHAR,
	CONSTRAINT messageIndex PRIMARY KEY (timestamp, messageHash)
) PARTITION BY RANGE (timestamp);
CREATE TABLE messages_2024 PARTITION OF messages FOR VALUES FROM (0) TO (9000000000000000000);
CREATE TABLE messages_lookup (timestamp BIGINT NOT NULL, messageHash VARCHAR NOT NULL,
	CONSTRAINT messageIndexLookupTable PRIMARY KEY (messageHash, timestamp));
INSERT INTO messages VALUES ('aa', '/waku/2/rs/1/0', '/app/1/t/proto', 'cGF5bG9hZA==', 0, 1700000000000000000, NULL);
INSERT INTO messages_lookup VALUES (1700000000000000000, 'aa');`

// TestPostgresRefusesNwaku: a database holding nwaku's archive is refused
// with ErrNwakuDatabase and left exactly as it was.
func TestPostgresRefusesNwaku(t *testing.T) {
	url := pgtest.DB(t)
	c := pgConn(t, url)
	ctx := context.Background()
	if _, err := c.Exec(ctx, nwakuPostgresSchema); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var s string
		err := c.QueryRow(ctx, `SELECT string_agg(table_name::text, ',' ORDER BY table_name) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&s)
		if err != nil {
			t.Fatal(err)
		}
		var rows string
		err = c.QueryRow(ctx, `SELECT (SELECT string_agg(messageHash || timestamp, ',') FROM messages) || (SELECT string_agg(messageHash, ',') FROM messages_lookup) || (SELECT version FROM version)`).Scan(&rows)
		if err != nil {
			t.Fatal(err)
		}
		return s + " " + rows
	}
	before := snapshot()
	for _, cfg := range []archive.Config{{}, {Vacuum: true, Retention: "capacity:1"}} {
		a, err := postgres.Open(ctx, url, cfg, postgres.Options{})
		if !errors.Is(err, archive.ErrNwakuDatabase) || a != nil {
			t.Fatalf("Open on nwaku's database: %v, want ErrNwakuDatabase", err)
		}
		t.Log(err)
		a2, err := dburl.Open(ctx, url, dburl.Config{Config: cfg})
		if !errors.Is(err, archive.ErrNwakuDatabase) || a2 != nil {
			t.Fatalf("dburl.Open on nwaku's database: %v, want ErrNwakuDatabase", err)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("nwaku's database changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestPostgresSchemaVersion: a new database is migrated to this build's
// version; NoMigration refuses a database not at it, and a database from a
// newer build is refused either way.
func TestPostgresSchemaVersion(t *testing.T) {
	ctx := context.Background()
	fresh := pgtest.DB(t)
	if a, err := postgres.Open(ctx, fresh, archive.Config{NoMigration: true}, postgres.Options{}); !errors.Is(err, archive.ErrSchema) || a != nil {
		t.Fatalf("NoMigration on an empty database: %v, want ErrSchema", err)
	}
	a, reopen := openPG(t, archive.Config{})
	appendWait(t, a, newEnv(t, "p", "/a/1/b/c", 1, []byte("x")))
	a.Close()
	a = reopen(archive.Config{NoMigration: true, Vacuum: true}) // at the current version: fine
	if st := a.Stats(); st.Messages != 1 {
		t.Fatalf("reopened with %d messages, want 1", st.Messages)
	}
	a.Close()
	url := pgtest.DB(t)
	b, err := postgres.Open(ctx, url, archive.Config{}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	c := pgConn(t, url)
	var v int
	if err := c.QueryRow(ctx, "SELECT version FROM courier_schema").Scan(&v); err != nil || v < 1 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if _, err := c.Exec(ctx, "UPDATE courier_schema SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	if b, err := postgres.Open(ctx, url, archive.Config{}, postgres.Options{}); !errors.Is(err, archive.ErrSchema) || b != nil {
		t.Fatalf("a database from a newer build: %v, want ErrSchema", err)
	}
}

// cutProxy forwards TCP connections to target until cut, which closes
// them and refuses new ones until restore. It counts the bytes it
// forwards from the server.
type cutProxy struct {
	l          net.Listener
	target     string
	mu         sync.Mutex
	down       bool
	conns      []net.Conn
	fromServer atomic.Int64
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, countReader{s, &p.fromServer}); c.Close() }()
		}
	}()
	return p
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestPostgresRidesOutARestart: while the connection to the server is cut
// the writer retries its batch instead of failing it; once the server is
// back every message is acknowledged without error and stored once.
func TestPostgresRidesOutARestart(t *testing.T) {
	db := pgtest.DB(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.l.Addr().String()
	a, err := postgres.Open(context.Background(), u.String(), archive.Config{}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	appendWait(t, a, newEnv(t, "p", "/a/1/b/c", 1, []byte("before")))
	proxy.cut()
	acks := make(chan error, 10)
	for i := range 10 {
		if err := a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", int64(10+i), []byte{byte(i)}), func(err error) { acks <- err }); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for a.Stats().Retries == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the writer did not retry")
		}
		time.Sleep(10 * time.Millisecond)
	}
	proxy.restore()
	for range 10 {
		if err := <-acks; err != nil {
			t.Fatalf("acknowledged with %v", err)
		}
	}
	res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); len(res.Messages) != 11 || st.Failed != 0 || st.Messages != 11 {
		t.Fatalf("%d messages stored, stats %+v; want 11, none failed", len(res.Messages), st)
	}
}

// TestPostgresHashQueryReadsOnePage: a hash lookup with IncludeData reads
// the bodies of one page (and the one after it, which tells whether there
// is a next page) from the server, not those of every hash it names.
func TestPostgresHashQueryReadsOnePage(t *testing.T) {
	db := pgtest.DB(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.l.Addr().String()
	a, err := postgres.Open(context.Background(), u.String(), archive.Config{}, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const n, size, limit = 100, 100_000, 10
	hashes := make([]message.Hash, n)
	acks := make(chan error, n)
	for i := range n {
		payload := make([]byte, size)
		payload[0], payload[1] = byte(i), byte(i>>8)
		env := newEnv(t, "p", "/a/1/b/c", int64(1000+i), payload)
		hashes[i] = env.Hash()
		if err := a.Append(context.Background(), env, func(err error) { acks <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if err := <-acks; err != nil {
			t.Fatal(err)
		}
	}
	slices.Reverse(hashes)   // the order asked does not matter
	cursor := &hashes[n-1-3] // the message at 1003
	for _, tc := range []struct {
		name      string
		q         archive.Query
		firstTS   int64
		wantCount int
	}{
		{"forward", archive.Query{Hashes: hashes, IncludeData: true, Forward: true, Limit: limit}, 1000, limit},
		{"backward", archive.Query{Hashes: hashes, IncludeData: true, Limit: limit}, 1000 + n - limit, limit},
		{"forward after a cursor", archive.Query{Hashes: hashes, IncludeData: true, Forward: true, Limit: limit, Cursor: cursor}, 1004, limit},
		{"backward before a cursor", archive.Query{Hashes: hashes, IncludeData: true, Limit: limit, Cursor: cursor}, 1000, 3},
	} {
		before := proxy.fromServer.Load()
		res, err := a.Query(context.Background(), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		read := proxy.fromServer.Load() - before
		if len(res.Messages) != tc.wantCount || res.Messages[0].Timestamp != tc.firstTS {
			t.Fatalf("%s: %d messages from %d, want %d from %d", tc.name, len(res.Messages), res.Messages[0].Timestamp, tc.wantCount, tc.firstTS)
		}
		for i, m := range res.Messages {
			if m.Timestamp != tc.firstTS+int64(i) || len(m.Wire) < size {
				t.Fatalf("%s: message %d at %d with %d wire bytes", tc.name, i, m.Timestamp, len(m.Wire))
			}
		}
		// At most limit+1 bodies, and 64 KiB for everything else.
		if maxRead := int64((limit+1)*size + 64<<10); read > maxRead {
			t.Errorf("%s: read %d bytes from the server for a page of %d messages of %d bytes, want at most %d", tc.name, read, len(res.Messages), size, maxRead)
		}
		t.Logf("%s: %d bytes read from the server for %d of %d hashes", tc.name, read, len(res.Messages), n)
	}
}

// TestPostgresStatementNames: each statement the archive runs is reported
// to OnStatement under nwaku's name for its counterpart: one InsertRow per
// message, and the query kinds of store queries.
func TestPostgresStatementNames(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	opts := postgres.Options{OnStatement: func(name string, d time.Duration) {
		if d <= 0 {
			t.Errorf("%s took %v", name, d)
		}
		mu.Lock()
		got[name]++
		mu.Unlock()
	}}
	a, err := postgres.Open(context.Background(), pgtest.DB(t), archive.Config{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	snapshot := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(got)
		clear(got)
		return out
	}
	if s := snapshot(); s["check_version_table_exists"] != 1 || s["try_advisory_lock"] != 1 || s["advisory_unlock"] != 1 {
		t.Errorf("at Open: %v", s)
	}
	// The first append also makes its partitions (statements nwaku's map
	// has no name for, as nwaku's partition manager's).
	appendWait(t, a, newEnv(t, "/waku/2/rs/0/0", "/a/1/b/c", 999, []byte{9}))
	if s := snapshot(); s["InsertRow"] != 1 || s[postgres.UnknownStatement] == 0 {
		t.Errorf("first append: %v, want InsertRow 1 and the partitions' statements", s)
	}
	var hashes []message.Hash
	for i := range 5 {
		env := newEnv(t, "/waku/2/rs/0/0", "/a/1/b/c", int64(1000+i), []byte{byte(i)})
		hashes = append(hashes, env.Hash())
		appendWait(t, a, env)
	}
	if s := snapshot(); !maps.Equal(s, map[string]int{"InsertRow": 5}) {
		t.Errorf("after 5 appends: %v", s)
	}
	for _, tc := range []struct {
		q    archive.Query
		want map[string]int
	}{
		{archive.Query{PubsubTopic: "/waku/2/rs/0/0", ContentTopics: []string{"/a/1/b/c"}, Limit: 2}, map[string]int{"content_topic": 1}},
		{archive.Query{Hashes: hashes, Limit: 2}, map[string]int{"messages_lookup": 1}},
		{archive.Query{PubsubTopic: "/waku/2/rs/0/0", Limit: 2}, map[string]int{postgres.UnknownStatement: 1}},
		{archive.Query{PubsubTopic: "/waku/2/rs/0/0", ContentTopics: []string{"/a/1/b/c"}, Limit: 2, Cursor: &hashes[2]},
			map[string]int{"SelectMessageByHashInMessagesLookup": 1, "content_topic": 1}},
	} {
		if _, err := a.Query(context.Background(), tc.q); err != nil {
			t.Fatal(err)
		}
		if s := snapshot(); !maps.Equal(s, tc.want) {
			t.Errorf("query %+v: %v, want %v", tc.q, s, tc.want)
		}
	}
}
