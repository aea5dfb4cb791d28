package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

func TestAppendQueryRoundTrip(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	_, wires := seedMix(t, 4, 1)
	var envs []*message.Envelope
	for i, w := range wires {
		m, err := message.Decode(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		env := message.NewEnvelope(m, "/waku/2/rs/1/"+string(rune('0'+i%2)), w, nil)
		envs = append(envs, env)
		appendWait(t, a, env)
	}
	b := openT(t, t.TempDir(), archive.Config{})
	defer b.Close()
	appendWait(t, b, envs[0])
	for _, arch := range []*archive.Embedded{a, b} {
		for _, env := range envs {
			res, err := arch.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
			if err != nil {
				t.Fatal(err)
			}
			if arch == b && env != envs[0] {
				if len(res.Messages) != 0 {
					t.Fatalf("found %d messages never appended to b", len(res.Messages))
				}
				continue
			}
			if len(res.Messages) != 1 || res.Cursor != nil {
				t.Fatalf("got %d messages, cursor %v; want 1, nil", len(res.Messages), res.Cursor)
			}
			s := res.Messages[0]
			if s.Hash != env.Hash() || s.PubsubTopic != env.PubsubTopic() || s.Timestamp != env.Message().Timestamp {
				t.Fatalf("got %x %q %d, want %x %q %d", s.Hash, s.PubsubTopic, s.Timestamp, env.Hash(), env.PubsubTopic(), env.Message().Timestamp)
			}
			if !bytes.Equal(s.Wire, env.Wire()) {
				t.Fatalf("message %x does not read back identical", env.Hash())
			}
		}
	}
	st := a.Stats()
	var want uint64
	for _, w := range wires {
		want += uint64(len(w) + 8)
	}
	if st.Inserts != 4 || st.BytesAppended != want || st.Duplicates != 0 || st.Failed != 0 || st.Batches < 4 {
		t.Fatalf("stats %+v; want 4 inserts, %d bytes, at least 4 batches", st, want)
	}
}

func TestDuplicatesIgnored(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	env := newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 100, []byte("hello"))
	// The same message twice in one batch (or two), then again later, then
	// as a different *Envelope with the same hash.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 2 {
		wg.Add(1)
		if err := a.Append(context.Background(), env, func(err error) { errs <- err; wg.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	appendWait(t, a, newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 100, []byte("hello")))
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("duplicate acknowledged with %v", err)
		}
	}
	st := a.Stats()
	if st.Inserts != 1 || st.Duplicates != 2 || st.BytesAppended != uint64(len(env.Wire())+8) {
		t.Fatalf("stats %+v; want 1 insert, 2 duplicates, %d bytes", st, len(env.Wire())+8)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// After reopening, the index still knows the hash.
	a = openT(t, dir, archive.Config{})
	defer a.Close()
	appendWait(t, a, env)
	if st := a.Stats(); st.Inserts != 0 || st.Duplicates != 1 || st.Messages != 1 {
		t.Fatalf("after reopen: stats %+v; want 0 inserts, 1 duplicate, 1 message", st)
	}
	appendWait(t, a, newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 101, []byte("again")))
	if st := a.Stats(); st.Messages != 2 {
		t.Fatalf("after a new insert: %d messages, want 2", st.Messages)
	}
	res, err := a.Query(context.Background(), archive.Query{Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 {
		t.Fatalf("stored %d messages, want 2", len(res.Messages))
	}
}

func TestEphemeralNotStored(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	m := &message.Message{Payload: []byte("x"), ContentTopic: "/app/1/t/proto", Timestamp: 5, Ephemeral: true}
	wire := m.Encode(nil)
	dm, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := message.NewEnvelope(dm, "/waku/2/rs/1/0", wire, nil)
	appendWait(t, a, env)
	res, err := a.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 0 {
		t.Fatal("ephemeral message stored")
	}
	if st := a.Stats(); st.Ephemeral != 1 || st.Inserts != 0 || st.BytesAppended != 0 {
		t.Fatalf("stats %+v; want 1 ephemeral, nothing stored", st)
	}
}

func TestNoTimestampUsesReceiveTime(t *testing.T) {
	recv := time.Unix(1_800_000_000, 123)
	a := openT(t, t.TempDir(), archive.Config{Now: func() time.Time { return recv }})
	defer a.Close()
	env := newEnv(t, "/waku/2/rs/1/0", "/app/1/t/proto", 0, []byte("no time"))
	appendWait(t, a, env)
	res, err := a.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Timestamp != recv.UnixNano() {
		t.Fatalf("got %+v, want timestamp %d", res.Messages, recv.UnixNano())
	}
	if !bytes.Equal(res.Messages[0].Wire, env.Wire()) {
		t.Fatal("stored message changed")
	}
}

func TestBadInput(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	if err := a.Append(context.Background(), nil, nil); !errors.Is(err, archive.ErrBadEnvelope) {
		t.Fatalf("nil envelope: %v", err)
	}
	if err := a.Append(context.Background(), &message.Envelope{}, nil); !errors.Is(err, archive.ErrBadEnvelope) {
		t.Fatalf("zero envelope: %v", err)
	}
	big := &message.Message{Payload: make([]byte, message.MaxSize), ContentTopic: "/a/1/b/c"}
	wire := big.Encode(nil)
	if err := a.Append(context.Background(), message.NewEnvelope(big, "t", wire, nil), nil); !errors.Is(err, archive.ErrBadEnvelope) {
		t.Fatalf("%d-byte message: %v", len(wire), err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []archive.Config{
		{QueueBytes: -1}, {QueueBytes: archive.MinQueueBytes - 1},
		{FsyncInterval: -time.Second},
		{SegmentSize: -1}, {SegmentSize: archive.MinSegmentSize - 1},
		{MaxBatch: -1},
	} {
		a, err := archive.Open(t.TempDir(), cfg)
		if !errors.Is(err, archive.ErrBadConfig) || a != nil {
			t.Errorf("Open with %+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}

func TestCloseFlushes(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{MaxBatch: 3})
	var envs []*message.Envelope
	var mu sync.Mutex
	acked := 0
	for i := range 50 {
		env := newEnv(t, "/waku/2/rs/1/0", "/app/1/t/proto", int64(1000+i), []byte{byte(i), 1, 2, 3})
		envs = append(envs, env)
		done := func(err error) {
			if err != nil {
				t.Errorf("acknowledged with %v", err)
			}
			mu.Lock()
			acked++
			mu.Unlock()
		}
		if err := a.Append(context.Background(), env, done); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if acked != 50 {
		t.Fatalf("%d of 50 acknowledged after Close", acked)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := a.Append(context.Background(), envs[0], nil); !errors.Is(err, archive.ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := a.Query(context.Background(), archive.Query{}); !errors.Is(err, archive.ErrClosed) {
		t.Fatalf("Query after Close: %v", err)
	}
	a = openT(t, dir, archive.Config{})
	defer a.Close()
	hashes := make([]message.Hash, len(envs))
	for i, e := range envs {
		hashes[i] = e.Hash()
	}
	res, err := a.Query(context.Background(), archive.Query{Hashes: hashes, Forward: true, Limit: 100, IncludeData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 50 {
		t.Fatalf("read back %d of 50", len(res.Messages))
	}
	for i, s := range res.Messages {
		if s.Hash != envs[i].Hash() || !bytes.Equal(s.Wire, envs[i].Wire()) {
			t.Fatalf("message %d does not read back", i)
		}
	}
}

// TestAppendPushesBack fills the queue while the writer is held in a done
// callback: Append waits for room and gives up when its context ends.
func TestAppendPushesBack(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{QueueBytes: archive.MinQueueBytes})
	defer a.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	first := newEnv(t, "p", "/a/1/b/c", 1, []byte("first"))
	if err := a.Append(context.Background(), first, func(error) { close(entered); <-release }); err != nil {
		t.Fatal(err)
	}
	<-entered // the writer is held; the queue is empty
	payload := make([]byte, message.MaxSize-100)
	var acks sync.WaitGroup
	for i := range 2 {
		acks.Add(1)
		env := newEnv(t, "p", "/a/1/b/c", int64(10+i), payload)
		if err := a.Append(context.Background(), env, func(error) { acks.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	if st := a.Stats(); st.QueuedMessages != 2 {
		t.Fatalf("%d queued, want 2", st.QueuedMessages)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	third := newEnv(t, "p", "/a/1/b/c", 12, payload)
	if err := a.Append(ctx, third, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append to a full queue: %v, want context.Canceled", err)
	}
	close(release)
	acks.Add(1)
	if err := a.Append(context.Background(), third, func(error) { acks.Done() }); err != nil {
		t.Fatal(err)
	}
	acks.Wait()
	if st := a.Stats(); st.Inserts != 4 || st.QueuedMessages != 0 {
		t.Fatalf("stats %+v; want 4 inserts, nothing queued", st)
	}
}

func TestSegmentRoll(t *testing.T) {
	dir := t.TempDir()
	cfg := archive.Config{SegmentSize: archive.MinSegmentSize}
	a := openT(t, dir, cfg)
	_, wires := seedMix(t, 12, 3)
	var hashes []message.Hash
	for _, w := range wires {
		m, _ := message.Decode(w, nil)
		env := message.NewEnvelope(m, "p", w, nil)
		hashes = append(hashes, env.Hash())
		if err := a.Append(context.Background(), env, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) < 4 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	for _, s := range segs {
		if fi, _ := os.Stat(s); fi.Size() > archive.MinSegmentSize {
			t.Fatalf("%s has %d bytes, over SegmentSize", s, fi.Size())
		}
	}
	a = openT(t, dir, cfg)
	defer a.Close()
	res, err := a.Query(context.Background(), archive.Query{Hashes: hashes, IncludeData: true, Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != len(wires) {
		t.Fatalf("read %d of %d", len(res.Messages), len(wires))
	}
	for i, s := range res.Messages {
		if !bytes.Equal(s.Wire, wires[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
}

// TestRecoverTail: bytes past the last index row are cut off on Open, and
// appending continues after the committed records.
func TestRecoverTail(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	e1 := newEnv(t, "p", "/a/1/b/c", 1, []byte("one"))
	appendWait(t, a, e1)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "0000000001.seg")
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte{0xee}, 1000))
	f.Close()
	os.WriteFile(filepath.Join(dir, "0000000002.seg"), []byte("uncommitted"), 0o644)

	a = openT(t, dir, archive.Config{})
	defer a.Close()
	if fi2, _ := os.Stat(seg); fi2.Size() != fi.Size() {
		t.Fatalf("segment has %d bytes after recovery, want %d", fi2.Size(), fi.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, "0000000002.seg")); !os.IsNotExist(err) {
		t.Fatalf("segment past the index kept: %v", err)
	}
	e2 := newEnv(t, "p", "/a/1/b/c", 2, []byte("two"))
	appendWait(t, a, e2)
	res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true, IncludeData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || !bytes.Equal(res.Messages[0].Wire, e1.Wire()) || !bytes.Equal(res.Messages[1].Wire, e2.Wire()) {
		t.Fatalf("got %d messages, want e1 and e2 intact", len(res.Messages))
	}
}

// TestRecoverTornRows simulates a power loss: the index holds rows whose
// bytes never reached the disk. Rows after the last fsync round that do not
// read back whole are dropped; a damaged record before it is reported by
// Query as ErrCorrupt.
func TestRecoverTornRows(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	var envs []*message.Envelope
	for i := range 3 {
		env := newEnv(t, "p", "/a/1/b/c", int64(i+1), bytes.Repeat([]byte{byte(i)}, 100))
		envs = append(envs, env)
		appendWait(t, a, env)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "0000000001.seg")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the payloads of the first and the last message.
	first := bytes.Index(data, envs[0].Wire())
	last := bytes.Index(data, envs[2].Wire())
	if first < 0 || last < 0 {
		t.Fatal("wire bytes not found in the segment")
	}
	data[first+10] ^= 0xff
	data[last+10] ^= 0xff
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The last fsync round covered only the first two rows.
	if err := os.WriteFile(filepath.Join(dir, "synced"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	a = openT(t, dir, archive.Config{})
	defer a.Close()
	res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashesOf(res.Messages); !slices.Equal(got, []message.Hash{envs[0].Hash(), envs[1].Hash()}) {
		t.Fatalf("after recovery: %d rows, want the first two", len(got))
	}
	if _, err := a.Query(context.Background(), archive.Query{Hashes: []message.Hash{envs[0].Hash()}, IncludeData: true}); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("reading a damaged record: %v, want ErrCorrupt", err)
	}
	// The torn record's space is reused: append again and read back.
	appendWait(t, a, envs[2])
	res, err = a.Query(context.Background(), archive.Query{Hashes: []message.Hash{envs[1].Hash(), envs[2].Hash()}, IncludeData: true, Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || !bytes.Equal(res.Messages[1].Wire, envs[2].Wire()) {
		t.Fatal("re-appended message does not read back")
	}
}

func hashesOf(ss []archive.Stored) []message.Hash {
	out := make([]message.Hash, len(ss))
	for i, s := range ss {
		out[i] = s.Hash
	}
	return out
}

func TestErrorsHavePrefix(t *testing.T) {
	for _, err := range []error{archive.ErrClosed, archive.ErrBadQuery, archive.ErrUnknownCursor,
		archive.ErrBadEnvelope, archive.ErrBadConfig, archive.ErrLocked, archive.ErrCorrupt} {
		if !strings.HasPrefix(err.Error(), "archive: ") {
			t.Errorf("%q lacks the prefix", err)
		}
	}
	if !errors.Is(archive.ErrUnknownCursor, archive.ErrBadQuery) {
		t.Error("ErrUnknownCursor does not wrap ErrBadQuery")
	}
}

// TestConcurrentAppendQuery appends from several goroutines while others
// query; every message is stored once and pages never repeat or skip.
func TestConcurrentAppendQuery(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{MaxBatch: 16})
	defer a.Close()
	const writers, each = 4, 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var qwg sync.WaitGroup
	for range 2 {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true, Limit: 50, IncludeData: true})
				if err != nil {
					t.Error(err)
					return
				}
				for i := 1; i < len(res.Messages); i++ {
					if res.Messages[i-1].Timestamp >= res.Messages[i].Timestamp {
						t.Error("page out of order")
						return
					}
				}
			}
		}()
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ts := int64(1 + w*each + i)
				env, err := makeEnv("p", "/a/1/b/c", ts, []byte(fmt.Sprint(ts)))
				if err != nil {
					t.Error(err)
					return
				}
				// Every message twice: one is a duplicate.
				for range 2 {
					if err := a.Append(context.Background(), env, nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	appendWait(t, a, newEnv(t, "q", "/a/1/b/c", 1, []byte("barrier")))
	close(stop)
	qwg.Wait()
	if st := a.Stats(); st.Inserts != writers*each+1 || st.Duplicates != writers*each {
		t.Fatalf("stats %+v; want %d inserts, %d duplicates", st, writers*each+1, writers*each)
	}
	var n int
	q := archive.Query{PubsubTopic: "p", Forward: true, Limit: 100}
	for {
		res, err := a.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			n++
			if m.Timestamp != int64(n) {
				t.Fatalf("message %d has timestamp %d", n, m.Timestamp)
			}
		}
		if res.Cursor == nil {
			break
		}
		q.Cursor = res.Cursor
	}
	if n != writers*each {
		t.Fatalf("paged through %d, want %d", n, writers*each)
	}
}

// TestCloseReleasesBlockedAppend: an Append waiting for room returns
// ErrClosed once Close starts, and Close still commits what was queued.
func TestCloseReleasesBlockedAppend(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{QueueBytes: archive.MinQueueBytes})
	entered, release := make(chan struct{}), make(chan struct{})
	if err := a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", 1, []byte("first")), func(error) { close(entered); <-release }); err != nil {
		t.Fatal(err)
	}
	<-entered
	payload := make([]byte, message.MaxSize-100)
	for i := range 2 {
		if err := a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", int64(10+i), payload), nil); err != nil {
			t.Fatal(err)
		}
	}
	blocked := make(chan error)
	go func() { blocked <- a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", 12, payload), nil) }()
	closed := make(chan error)
	go func() { closed <- a.Close() }()
	if err := <-blocked; !errors.Is(err, archive.ErrClosed) {
		t.Fatalf("blocked Append: %v, want ErrClosed", err)
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	a = openT(t, dir, archive.Config{})
	defer a.Close()
	res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.Messages); got != 3 {
		t.Fatalf("%d messages stored, want 3", got)
	}
}

func TestOpenLocks(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	if b, err := archive.Open(dir, archive.Config{}); !errors.Is(err, archive.ErrLocked) || b != nil {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openT(t, dir, archive.Config{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
