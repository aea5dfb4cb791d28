package embedded_test

import (
	"context"
	"database/sql"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// v1Dir is an archive written by the build before schema version 2 (the
// index's user_version 1: topic names and 32-byte hashes in every index),
// from v1Messages: its index.db, a segment and the
// synced mark.
const v1Dir = "testdata/v1"

// v1Now is the receive time the archive in v1Dir stored for messages
// without a timestamp.
var v1Now = time.Unix(1_750_000_000, 0)

// v1Messages are the messages of v1Dir in append order, 240 of them plus
// message 10 again (a duplicate): three pubsub topics, five content topics
// and one that is not UTF-8, timestamps a second apart but for every
// 50th message, which has none (so these share the receive time and sort
// by hash), payloads of 50 to 650 random bytes.
func v1Messages(tb testing.TB) []*message.Envelope {
	var envs []*message.Envelope
	for i := range 240 {
		content := "/mig/1/t" + strconv.Itoa(i%5) + "/proto"
		if i%40 == 7 {
			content = "/mig/1/\xff\xfe/proto"
		}
		ts := int64(1_700_000_000_000_000_000) + int64(i)*int64(time.Second)
		if i%50 == 3 {
			ts = 0
		}
		r := rand.New(rand.NewPCG(uint64(i), 7))
		payload := make([]byte, 50+(i*37)%600)
		for j := range payload {
			payload[j] = byte(r.Uint32())
		}
		envs = append(envs, newEnv(tb, "/waku/2/rs/1/"+strconv.Itoa(i%3), content, ts, payload))
	}
	return append(envs, envs[10])
}

// TestEmbeddedMigratesV1: an archive written at schema version 1 opens at
// this build's version with every message: the same hashes, timestamps,
// topics and bytes, found by every query form (a content topic and time
// range, a hash lookup, pages after a cursor, no filter at all), and it
// goes on storing and refusing duplicates.
func TestEmbeddedMigratesV1(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, v1Dir, dir)
	if v := userVersion(t, filepath.Join(dir, "index.db")); v != 1 {
		t.Fatalf("testdata index at version %d, want 1", v)
	}
	var recv atomic.Int64
	recv.Store(v1Now.UnixNano())
	a := openT(t, dir, archive.Config{Now: func() time.Time { return time.Unix(0, recv.Load()) }})
	defer a.Close()
	envs := v1Messages(t)
	want := map[message.Hash]*message.Envelope{}
	for _, e := range envs {
		want[e.Hash()] = e
	}
	if st := a.Stats(); st.Messages != uint64(len(want)) {
		t.Fatalf("%d messages after the migration, want %d", st.Messages, len(want))
	}
	ctx := context.Background()
	// Every message, in store v3 order, page by page with cursors.
	var all []archive.Stored
	q := archive.Query{Forward: true, IncludeData: true, Limit: 7}
	for {
		res, err := a.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Messages...)
		if res.Cursor == nil {
			break
		}
		q.Cursor = res.Cursor
	}
	if len(all) != len(want) {
		t.Fatalf("paged through %d messages, want %d", len(all), len(want))
	}
	for i, s := range all {
		e := want[s.Hash]
		if e == nil {
			t.Fatalf("message %x not appended", s.Hash)
		}
		ts := e.Message().Timestamp
		if ts == 0 {
			ts = v1Now.UnixNano()
		}
		if s.PubsubTopic != e.PubsubTopic() || s.Timestamp != ts || string(s.Wire) != string(e.Wire()) {
			t.Fatalf("message %x: topic %q ts %d, %d bytes; want %q %d %d", s.Hash, s.PubsubTopic, s.Timestamp, len(s.Wire), e.PubsubTopic(), ts, len(e.Wire()))
		}
		if i > 0 {
			p := all[i-1]
			if p.Timestamp > s.Timestamp || (p.Timestamp == s.Timestamp && string(p.Hash[:]) >= string(s.Hash[:])) {
				t.Fatalf("messages %d and %d out of (timestamp, hash) order", i-1, i)
			}
		}
	}
	// A content topic on one pubsub topic and a time range.
	from, to := int64(1_700_000_000_000_000_000)+20*int64(time.Second), int64(1_700_000_000_000_000_000)+200*int64(time.Second)
	res, err := a.Query(ctx, archive.Query{PubsubTopic: "/waku/2/rs/1/1", ContentTopics: []string{"/mig/1/t1/proto"}, StartTime: &from, EndTime: &to, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, s := range res.Messages {
		got = append(got, (s.Timestamp-1_700_000_000_000_000_000)/int64(time.Second))
	}
	var wantTS []int64
	for i := 20; i <= 200; i++ {
		if i%3 == 1 && i%5 == 1 && i%40 != 7 && i%50 != 3 {
			wantTS = append(wantTS, int64(i))
		}
	}
	if !slices.Equal(got, wantTS) {
		t.Fatalf("content topic and time range: messages %v, want %v", got, wantTS)
	}
	// The topic that is not UTF-8, and a hash lookup.
	res, err = a.Query(ctx, archive.Query{ContentTopics: []string{"/mig/1/\xff\xfe/proto"}, Limit: 100})
	if err != nil || len(res.Messages) != 6 {
		t.Fatalf("non-UTF-8 content topic: %v messages, %v; want 6", len(res.Messages), err)
	}
	hashes := []message.Hash{envs[5].Hash(), envs[203].Hash(), {1, 2, 3}}
	res, err = a.Query(ctx, archive.Query{Hashes: hashes, IncludeData: true})
	if err != nil || len(res.Messages) != 2 || res.Messages[0].Hash != envs[5].Hash() || res.Messages[1].Hash != envs[203].Hash() ||
		string(res.Messages[1].Wire) != string(envs[203].Wire()) {
		t.Fatalf("hash lookup: %+v, %v", res, err)
	}
	// Appends go on; a message stored before the migration is a duplicate.
	appendWait(t, a, envs[100])
	fresh := newEnv(t, "/waku/2/rs/1/0", "/mig/1/t0/proto", 1_800_000_000_000_000_000, []byte("after"))
	appendWait(t, a, fresh)
	if st := a.Stats(); st.Inserts != 1 || st.Duplicates != 1 || st.Messages != uint64(len(want))+1 {
		t.Fatalf("stats after appends %+v", st)
	}
	// A message without a timestamp, received again in another time
	// partition, is a duplicate too.
	recv.Add(int64(10 * 24 * time.Hour))
	appendWait(t, a, envs[3])
	if st := a.Stats(); st.Inserts != 1 || st.Duplicates != 2 {
		t.Fatalf("stats after a message without a timestamp again %+v", st)
	}
	if v := userVersion(t, filepath.Join(dir, "index.db")); v != 3 {
		t.Fatalf("index at version %d after Open, want 3", v)
	}
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err == nil {
			_, err = io.Copy(dst, src)
			if cerr := dst.Close(); err == nil {
				err = cerr
			}
		}
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}
