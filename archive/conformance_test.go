package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

func TestDuplicatesIgnored(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, reopen := d.open(t, archive.Config{})
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
		if st.Inserts != 1 || st.Duplicates != 2 || st.BytesAppended != uint64(len(env.Wire())+d.recordOverhead) {
			t.Fatalf("stats %+v; want 1 insert, 2 duplicates, %d bytes", st, len(env.Wire())+d.recordOverhead)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		// After reopening, the index still knows the hash.
		a = reopen(archive.Config{})
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
	})
}

func TestEphemeralNotStored(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{})
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
	})
}

func TestNoTimestampUsesReceiveTime(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		recv := time.Unix(1_800_000_000, 123)
		a, _ := d.open(t, archive.Config{Now: func() time.Time { return recv }})
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
	})
}

func TestBadInput(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{})
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
	})
}

func TestCloseFlushes(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, reopen := d.open(t, archive.Config{MaxBatch: 3})
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
		a = reopen(archive.Config{})
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
	})
}

func TestAppendPushesBack(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{QueueBytes: archive.MinQueueBytes})
		defer a.Close()
		entered, release := make(chan struct{}), make(chan struct{})
		first := newEnv(t, "p", "/a/1/b/c", 1, []byte("first"))
		if err := a.Append(context.Background(), first, func(error) { close(entered); <-release }); err != nil {
			t.Fatal(err)
		}
		testwait.Recv(t, entered, "the writer") // the writer is held; the queue is empty
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
	})
}

func TestConcurrentAppendQuery(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, _ := d.open(t, archive.Config{MaxBatch: 16})
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
	})
}

func TestCloseReleasesBlockedAppend(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		a, reopen := d.open(t, archive.Config{QueueBytes: archive.MinQueueBytes})
		entered, release := make(chan struct{}), make(chan struct{})
		if err := a.Append(context.Background(), newEnv(t, "p", "/a/1/b/c", 1, []byte("first")), func(error) { close(entered); <-release }); err != nil {
			t.Fatal(err)
		}
		testwait.Recv(t, entered, "the writer")
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
		if err := testwait.Recv(t, blocked, "the blocked Append"); !errors.Is(err, archive.ErrClosed) {
			t.Fatalf("blocked Append: %v, want ErrClosed", err)
		}
		close(release)
		if err := testwait.Recv(t, closed, "Close"); err != nil {
			t.Fatal(err)
		}
		a = reopen(archive.Config{})
		defer a.Close()
		res, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", Forward: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Messages); got != 3 {
			t.Fatalf("%d messages stored, want 3", got)
		}
	})
}

// TestTimePartitions: messages spread over 60 days (the embedded index
// keeps its hash index by spans of about 4.9 hours, so about 300 of them)
// are found by hash, by hash within a time range and from a cursor in any
// partition; a message without a timestamp received again 10 days later,
// in another partition, is a duplicate.
func TestTimePartitions(t *testing.T) {
	const n, step = 120, 12 * time.Hour
	t0 := int64(1_800_000_000_000_000_000)
	forDrivers(t, func(t *testing.T, d driver) {
		var recv atomic.Int64
		recv.Store(t0 + int64(n)*int64(step))
		a, _ := d.open(t, archive.Config{Now: func() time.Time { return time.Unix(0, recv.Load()) }})
		defer a.Close()
		var envs []*message.Envelope
		for i := range n {
			envs = append(envs, newEnv(t, "/waku/2/rs/1/0", "/app/1/p/proto", t0+int64(i)*int64(step), fmt.Appendf(nil, "m%d", i)))
			appendWait(t, a, envs[i])
		}
		untimed := newEnv(t, "/waku/2/rs/1/0", "/app/1/p/proto", 0, []byte("untimed"))
		appendWait(t, a, untimed)
		recv.Add(int64(10 * 24 * time.Hour))
		appendWait(t, a, untimed)
		appendWait(t, a, envs[3])
		if st := a.Stats(); st.Inserts != n+1 || st.Duplicates != 2 {
			t.Fatalf("stats %+v; want %d inserts, 2 duplicates", st, n+1)
		}
		ctx := context.Background()
		hashes := []message.Hash{envs[0].Hash(), envs[57].Hash(), envs[n-1].Hash(), untimed.Hash(), {9}}
		res, err := a.Query(ctx, archive.Query{Hashes: hashes, Forward: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []message.Hash
		for _, s := range res.Messages {
			got = append(got, s.Hash)
		}
		if want := hashes[:4]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("by hash: %x, want %x", got, want)
		}
		from, to := t0+50*int64(step), t0+60*int64(step)
		res, err = a.Query(ctx, archive.Query{Hashes: []message.Hash{envs[49].Hash(), envs[50].Hash(), envs[60].Hash(), envs[61].Hash()}, StartTime: &from, EndTime: &to, Forward: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 2 || res.Messages[0].Hash != envs[50].Hash() || res.Messages[1].Hash != envs[60].Hash() {
			t.Fatalf("by hash in a time range: %d messages, want messages 50 and 60", len(res.Messages))
		}
		for _, i := range []int{0, 33, n - 2} {
			c := envs[i].Hash()
			res, err = a.Query(ctx, archive.Query{Cursor: &c, Forward: true, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) != 1 || res.Messages[0].Hash != envs[i+1].Hash() {
				t.Fatalf("after the cursor of message %d: %d messages, want message %d", i, len(res.Messages), i+1)
			}
		}
	})
}

// TestNoTimestampBefore1970: a message without a timestamp received at a
// time before 1970 (a clock that is wrong, or a test's) is stored once,
// found by hash and usable as a cursor.
func TestNoTimestampBefore1970(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		recv := time.Unix(-365*24*3600, 0)
		a, _ := d.open(t, archive.Config{Now: func() time.Time { return recv }})
		defer a.Close()
		env := newEnv(t, "/waku/2/rs/1/0", "/app/1/t/proto", 0, []byte("before 1970"))
		later := newEnv(t, "/waku/2/rs/1/0", "/app/1/t/proto", 5, []byte("after"))
		appendWait(t, a, env)
		appendWait(t, a, env)
		appendWait(t, a, later)
		if st := a.Stats(); st.Inserts != 2 || st.Duplicates != 1 {
			t.Fatalf("stats %+v; want 2 inserts, 1 duplicate", st)
		}
		ctx := context.Background()
		res, err := a.Query(ctx, archive.Query{Hashes: []message.Hash{env.Hash()}})
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Timestamp != recv.UnixNano() {
			t.Fatalf("by hash: %+v, %v; want the message at %d", res, err, recv.UnixNano())
		}
		c := env.Hash()
		res, err = a.Query(ctx, archive.Query{Cursor: &c, Forward: true})
		if err != nil || len(res.Messages) != 1 || res.Messages[0].Hash != later.Hash() {
			t.Fatalf("after its cursor: %+v, %v; want the later message", res, err)
		}
	})
}
