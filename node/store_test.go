package node

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
)

// TestStoreThroughNodes: A archives what it relays and serves store; B
// (no store, --storenode A) answers GET /store/v3/messages from A, and A
// answers it from its own archive, with the same messages. /health
// reports Store and Store Client.
func TestStoreThroughNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := func(cfg Config) *Node {
		t.Helper()
		cfg.REST, cfg.RESTAddress = true, "127.0.0.1"
		return startTestNode(t, cfg)
	}
	index := filepath.Join(t.TempDir(), "a.sqlite3")
	a := start(Config{Relay: true, Store: true, DBURL: "sqlite://" + index})
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("sqlite://PATH: no index at PATH: %v", err)
	}
	b := start(Config{Relay: true, StoreNode: a.ListenAddresses()[0]})
	c := start(Config{Relay: true})

	topic := shard.RelayShard{}.PubsubTopic()
	const n = 25
	base := time.Now().UnixNano()
	var hashes []message.Hash
	for i := range n {
		env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte(fmt.Sprint("message ", i)), ContentTopic: "/app/1/chat/proto",
			Timestamp: base + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, env.Hash())
	}
	// Wait until the archive holds them all.
	for {
		res, err := a.Archive().Query(ctx, archive.Query{PubsubTopic: topic, Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == n {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("archive holds %d of %d", len(res.Messages), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
	get := func(node *Node, query string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + node.HTTPAddrs()[0] + "/store/v3/messages?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// Walk all pages forward through B (remote) and A (local).
	walk := func(node *Node, extra string) []string {
		t.Helper()
		var got []string
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			q := "includeData=true&ascending=true&pageSize=10&pubsubTopic=" + url.QueryEscape(topic) + extra
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			code, body := get(node, q)
			var resp rest.StoreResponse
			if code != 200 || json.Unmarshal([]byte(body), &resp) != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %s", code, body)
			}
			for _, m := range resp.Messages {
				if m.Message == nil || m.PubsubTopic != topic {
					t.Fatalf("message without data: %s", body)
				}
				got = append(got, string(m.Message.Payload))
			}
			if resp.PaginationCursor == "" {
				return got
			}
			cursor = resp.PaginationCursor
		}
		t.Fatal("paging does not end")
		return nil
	}
	health := func(n *Node) string {
		var s []string
		for _, p := range n.restAPI().Health().ProtocolsHealth {
			if strings.HasPrefix(p.Protocol, "Store") {
				s = append(s, fmt.Sprintf("%s=%s", p.Protocol, p.Health))
			}
		}
		return strings.Join(s, " ")
	}
	remote, local := walk(b, ""), walk(a, "")
	if len(remote) != n || strings.Join(remote, ",") != strings.Join(local, ",") || remote[0] != "message 0" || remote[n-1] != fmt.Sprint("message ", n-1) {
		t.Fatalf("through B: %v\nfrom A: %v", remote, local)
	}
	// C has no store, no --storenode and no store peer yet.
	if code, body := get(c, ""); code != 412 || body != "No suitable service peer & no discovery method" {
		t.Fatalf("C without a store peer: %d %s", code, body)
	}
	if h := health(c); h != "Store=NOT_MOUNTED Store Client=NOT_READY" {
		t.Errorf("C health %s", h)
	}
	// With peerAddr it asks A.
	if got := walk(c, "&peerAddr="+url.QueryEscape(a.ListenAddresses()[0])); strings.Join(got, ",") != strings.Join(local, ",") {
		t.Fatalf("through C with peerAddr: %v", got)
	}
	// A hash query returns exactly the requested messages.
	code, body := get(b, "hashes="+hex0x(hashes[3])+","+hex0x(hashes[17]))
	if code != 200 || !strings.Contains(body, hex0x(hashes[3])) || !strings.Contains(body, hex0x(hashes[17])) || strings.Count(body, "messageHash") != 2 {
		t.Fatalf("hash query: %d %s", code, body)
	}
	// A store error from A reaches B's client as nwaku's REST shows it.
	unknown := message.Hash{9}
	code, body = get(b, "cursor="+hex0x(unknown))
	if want := `{"requestId":"","statusCode":300,"statusDesc":"BAD_RESPONSE: BAD_RESPONSE: archive error: DRIVER_ERROR: cursor not found","messages":[]}`; code != 200 || body != want {
		t.Fatalf("unknown cursor through B: %d %s", code, body)
	}
	// An all-zero cursor is refused by B's client before it asks A, as
	// nwaku's store client (waku/waku_store/client.nim, query) and
	// node.query (waku/node/kernel_api/store.nim) answer it.
	code, body = get(b, "cursor="+hex0x(message.Hash{}))
	if want := `{"requestId":"","statusCode":400,"statusDesc":"BAD_REQUEST: invalid cursor","messages":[]}`; code != 200 || body != want {
		t.Fatalf("all-zero cursor through B: %d %s", code, body)
	}

	if h := health(a); h != "Store=READY Store Client=READY" {
		t.Errorf("A health %s", h)
	}
	if h := health(b); h != "Store=NOT_MOUNTED Store Client=READY" {
		t.Errorf("B health %s", h)
	}
	// A's metrics count the queries it answered, under nwaku's names.
	mfs, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var queries float64
	for _, mf := range mfs {
		if mf.GetName() == "waku_store_queries_total" {
			queries = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if queries < 4 {
		t.Errorf("waku_store_queries_total %v, want the remote queries A answered", queries)
	}
	if id := b.StorePeer(); id != a.Host().ID() {
		t.Errorf("B's store peer %s", id)
	}
}

func hex0x(h message.Hash) string { return "0x" + h.String() }

// TestStoreRefusesNwakuDatabase: --store-message-db-url pointing at the
// SQLite file of an nwaku archive stops the node with a clear error and
// leaves the file as it was.
func TestStoreRefusesNwakuDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.sqlite3")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	// nwaku v0.38.1's table (waku_archive/driver/sqlite_driver/queries.nim).
	if _, err := db.Exec(`CREATE TABLE messages (pubsubTopic BLOB NOT NULL, contentTopic BLOB NOT NULL, payload BLOB,
		version INTEGER NOT NULL, timestamp INTEGER NOT NULL, messageHash BLOB PRIMARY KEY NOT NULL, meta BLOB) WITHOUT ROWID`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{ListenAddress: "127.0.0.1", NoListen: true, Relay: true, Store: true, DBURL: "sqlite://" + path,
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		n.Stop(context.Background())
		t.Fatal("node started on nwaku's database")
	}
	if !errors.Is(err, archive.ErrNwakuDatabase) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want ErrNwakuDatabase naming %s", err, path)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Fatalf("nwaku's file changed (%v)", err)
	}
	if _, err := os.Stat(path + dburl.SegmentsSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segments directory created beside nwaku's file: %v", err)
	}
}
