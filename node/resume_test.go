package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/resume"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

// TestStoreResume: B starts with --store-resume and A, a store node, as
// its static node; it fills its archive with the 30 messages A archived
// while B did not exist.
func TestStoreResume(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	committed := make(chan error, 64)
	a, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir(), Logger: quiet,
		OnArchived: func(_ *message.Envelope, err error) { committed <- err }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer a.Stop(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !servesStore(a) {
		srv, err := store.NewServer(a.Host(), a.Archive(), store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
	}
	topic := shard.RelayShard{}.PubsubTopic()
	var hashes []message.Hash
	for i := range 30 {
		env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte(fmt.Sprint("before B ", i)), ContentTopic: "/t/1/n/proto"})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, env.Hash())
	}
	for range 30 {
		if err := testwait.Recv(t, committed, "a commit"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, StoreResume: true, DataDir: t.TempDir(),
		StaticNodes: a.ListenAddresses()[:1], Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop(ctx)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := b.Archive().Query(ctx, archive.Query{Hashes: hashes, Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == len(hashes) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("B holds %d of %d messages after store resume", len(res.Messages), len(hashes))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func servesStore(n *Node) bool {
	for _, p := range n.Host().Mux().Protocols() {
		if p == store.ProtocolID {
			return true
		}
	}
	return false
}

// resumeLog receives the records of store resume's end.
type resumeLog chan slog.Record

func (h resumeLog) Enabled(context.Context, slog.Level) bool { return true }
func (h resumeLog) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "store resume done", "store resume failed", "store resume stopped at its limit":
		h <- r
	}
	return nil
}
func (h resumeLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h resumeLog) WithGroup(string) slog.Handler      { return h }

// attr returns the text of r's attribute key.
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
		}
		return true
	})
	return v
}

// resumeKV returns message i on shard 0 with timestamp ts, as a store
// response carries it.
func resumeKV(i int, ts int64) store.KeyValue {
	topic := shard.RelayShard{}.PubsubTopic()
	m := &message.Message{Payload: []byte(fmt.Sprint("resumed ", i)), ContentTopic: "/t/1/n/proto", Timestamp: ts}
	return store.KeyValue{Hash: m.Hash(topic, nil), Wire: m.Encode(nil), Message: m, PubsubTopic: topic}
}

// fakeStorePeer starts a relay node whose store protocol answers the n-th
// request (from 1) with page(req, n), and returns its address and the count
// of requests it answered.
func fakeStorePeer(t *testing.T, page func(req *store.Request, n int) *store.Response) (string, *atomic.Int64) {
	t.Helper()
	a := startTestNode(t, Config{Relay: true})
	var count atomic.Int64
	a.Host().SetStreamHandler(store.ProtocolID, func(st network.Stream) {
		defer st.Close()
		b, err := lpframe.Read(st, store.MaxRequestSize)
		if err != nil {
			st.Reset()
			return
		}
		req, err := store.DecodeRequest(b)
		if err != nil {
			st.Reset()
			return
		}
		res := page(req, int(count.Add(1)))
		res.RequestID, res.StatusCode, res.StatusDesc = req.RequestID, store.StatusOK, "OK"
		lpframe.Write(st, res.Append(nil))
	})
	return a.ListenAddresses()[0], &count
}

// resumeFrom starts a store node that resumes from the peer at addr, with
// limits changed by adjust (nil: the defaults), and returns it with the
// record its resume ended with.
func resumeFrom(t *testing.T, addr string, adjust func(*resume.Limits)) (*Node, slog.Record) {
	t.Helper()
	logs := make(resumeLog, 4)
	b, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, StoreResume: true, DataDir: t.TempDir(),
		StaticNodes: []string{addr}, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop(context.Background()) })
	if adjust != nil {
		adjust(&b.store.resumeLimits)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, testwait.Recv(t, logs, "the end of store resume")
}

// archived returns how many messages b's archive holds.
func archived(t *testing.T, b *Node) int {
	t.Helper()
	total := 0
	q := archive.Query{Forward: true, Limit: archive.MaxPageSize}
	for {
		res, err := b.Archive().Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		total += len(res.Messages)
		if res.Cursor == nil {
			return total
		}
		q.Cursor = res.Cursor
	}
}

// TestStoreResumeRefusesBadPages: a store peer whose answer breaks the
// query ends the resume at that page, with the pages before it archived.
func TestStoreResumeRefusesBadPages(t *testing.T) {
	now := time.Now().UnixNano()
	good := []store.KeyValue{resumeKV(1, now-3e9), resumeKV(2, now-2e9), resumeKV(3, now-1e9)}
	withCursor := func(kvs []store.KeyValue, c message.Hash) *store.Response {
		return &store.Response{Messages: kvs, Cursor: &c}
	}
	wrongHash := resumeKV(4, now-1e9)
	wrongHash.Hash[0] ^= 1
	old := resumeKV(5, now-7*time.Hour.Nanoseconds())
	cases := []struct {
		name string
		// second is the answer to the second request; the first one is
		// good with a cursor at its last message.
		second func(req *store.Request) *store.Response
		want   string
	}{
		{"same cursor again", func(*store.Request) *store.Response { return withCursor(good, good[2].Hash) },
			"cursor " + good[2].Hash.String() + " repeats an earlier one"},
		{"cursor of another message", func(*store.Request) *store.Response {
			return withCursor([]store.KeyValue{resumeKV(6, now)}, good[0].Hash)
		}, "is not the hash of the page's last message"},
		{"cursor after an empty page", func(*store.Request) *store.Response { return withCursor(nil, message.Hash{7}) },
			"a cursor after an empty page"},
		{"message before the window", func(*store.Request) *store.Response {
			return &store.Response{Messages: []store.KeyValue{old}}
		}, "outside the window"},
		{"message after the window", func(req *store.Request) *store.Response {
			return &store.Response{Messages: []store.KeyValue{resumeKV(8, *req.EndTime+1)}}
		}, "outside the window"},
		{"no data", func(*store.Request) *store.Response {
			return &store.Response{Messages: []store.KeyValue{{Hash: message.Hash{3}}}}
		},
			"without data"},
		{"wrong hash", func(*store.Request) *store.Response { return &store.Response{Messages: []store.KeyValue{wrongHash}} },
			"has hash"},
		{"more than asked for", func(*store.Request) *store.Response {
			var kvs []store.KeyValue
			for i := range archive.MaxPageSize + 1 {
				kvs = append(kvs, resumeKV(100+i, now))
			}
			return &store.Response{Messages: kvs}
		}, "101 messages, asked for at most 100"},
		{"back in time", func(*store.Request) *store.Response {
			early := resumeKV(9, now-4e9)
			return withCursor([]store.KeyValue{early}, early.Hash)
		}, "before the previous page's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr, count := fakeStorePeer(t, func(req *store.Request, n int) *store.Response {
				if n == 1 {
					return withCursor(good, good[2].Hash)
				}
				return c.second(req)
			})
			b, rec := resumeFrom(t, addr, nil)
			if rec.Message != "store resume failed" || !strings.Contains(attr(rec, "err"), c.want) || !strings.Contains(attr(rec, "err"), "page 2") {
				t.Fatalf("resume ended with %q err=%q; want a failure at page 2 saying %q", rec.Message, attr(rec, "err"), c.want)
			}
			if got := attr(rec, "archived"); got != "3" {
				t.Fatalf("archived %s messages, want the first page's 3", got)
			}
			if got := count.Load(); got != 2 {
				t.Fatalf("the peer was asked %d times, want 2", got)
			}
			testwait.Until(t, "the first page in the archive", func() bool { return archived(t, b) == 3 })
		})
	}
}

// TestStoreResumePageLimit: a peer that always has one more page gets
// 1,000 queries, and the resume stops there.
func TestStoreResumePageLimit(t *testing.T) {
	start := time.Now().Add(-time.Hour).UnixNano()
	addr, count := fakeStorePeer(t, func(req *store.Request, n int) *store.Response {
		kv := resumeKV(n, start+int64(n))
		return &store.Response{Messages: []store.KeyValue{kv}, Cursor: &kv.Hash}
	})
	_, rec := resumeFrom(t, addr, nil)
	if rec.Message != "store resume stopped at its limit" || !strings.Contains(attr(rec, "err"), "1000 pages") || attr(rec, "archived") != "1000" {
		t.Fatalf("resume ended with %q err=%q archived=%s; want the limit of 1000 pages", rec.Message, attr(rec, "err"), attr(rec, "archived"))
	}
	if got := count.Load(); got != 1000 {
		t.Fatalf("the peer was asked %d times, want 1000", got)
	}
}

// TestStoreResumeTimeLimit: the whole resume is bounded in time, however
// slowly the peer answers each page.
func TestStoreResumeTimeLimit(t *testing.T) {
	now := time.Now().UnixNano()
	addr, _ := fakeStorePeer(t, func(req *store.Request, n int) *store.Response {
		time.Sleep(200 * time.Millisecond)
		kv := resumeKV(n, now-1e12+int64(n))
		return &store.Response{Messages: []store.KeyValue{kv}, Cursor: &kv.Hash}
	})
	_, rec := resumeFrom(t, addr, func(l *resume.Limits) { l.Timeout = time.Second })
	if rec.Message != "store resume stopped at its limit" || !strings.Contains(attr(rec, "err"), "1s in all") {
		t.Fatalf("resume ended with %q err=%q; want the 1 s limit", rec.Message, attr(rec, "err"))
	}
}
