package archive_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// timings records what Config.OnInsert and Config.OnQuery receive.
type timings struct {
	mu      sync.Mutex
	inserts []time.Duration
	hashes  []message.Hash
	queries []time.Duration
}

func (tm *timings) config() archive.Config {
	return archive.Config{
		OnInsert: func(env *message.Envelope, d time.Duration) {
			tm.mu.Lock()
			tm.inserts, tm.hashes = append(tm.inserts, d), append(tm.hashes, env.Hash())
			tm.mu.Unlock()
		},
		OnQuery: func(d time.Duration) { tm.mu.Lock(); tm.queries = append(tm.queries, d); tm.mu.Unlock() },
	}
}

func (tm *timings) counts() (inserts, queries int) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return len(tm.inserts), len(tm.queries)
}

// TestObservers checks that OnInsert receives one positive duration per
// message acknowledged without error and not ephemeral (a duplicate
// included, as nwaku's put succeeds for one), before the message's done
// callback and with its envelope, and that OnQuery receives one per query that reaches the
// index, none for a query refused by its rules.
func TestObservers(t *testing.T) {
	forDrivers(t, func(t *testing.T, d driver) {
		var tm timings
		a, _ := d.open(t, tm.config())
		defer a.Close()
		envs := []*message.Envelope{
			newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 100, []byte("one")),
			newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 101, []byte("two")),
			newEnv(t, "/waku/2/rs/1/1", "/app/1/chat/proto", 102, []byte("three")),
			newEnv(t, "/waku/2/rs/1/0", "/app/1/chat/proto", 100, []byte("one")), // duplicate
		}
		eph := &message.Message{Payload: []byte("x"), ContentTopic: "/app/1/t/proto", Timestamp: 5, Ephemeral: true}
		wire := eph.Encode(nil)
		dm, err := message.Decode(wire, nil)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, message.NewEnvelope(dm, "/waku/2/rs/1/0", wire, nil))
		for i, env := range envs {
			seen := make(chan int, 1)
			if err := a.Append(context.Background(), env, func(err error) {
				if err != nil {
					t.Errorf("message %d acknowledged with %v", i, err)
				}
				n, _ := tm.counts()
				seen <- n
			}); err != nil {
				t.Fatal(err)
			}
			want := min(i+1, 4) // the ephemeral message is not timed
			select {
			case n := <-seen:
				if n != want {
					t.Fatalf("message %d: OnInsert called %d times by its done callback, want %d", i, n, want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("message %d not acknowledged", i)
			}
		}
		if st := a.Stats(); st.Inserts != 3 || st.Duplicates != 1 || st.Ephemeral != 1 {
			t.Fatalf("stats %+v; want 3 inserts, 1 duplicate, 1 ephemeral", st)
		}
		for i, dur := range tm.inserts {
			if dur <= 0 {
				t.Errorf("insert %d took %v", i, dur)
			}
			if tm.hashes[i] != envs[i].Hash() {
				t.Errorf("insert %d: message %s, appended %s", i, tm.hashes[i], envs[i].Hash())
			}
		}
		if _, err := a.Query(context.Background(), archive.Query{Forward: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Query(context.Background(), archive.Query{Limit: -1}); !errors.Is(err, archive.ErrBadQuery) {
			t.Fatalf("Limit -1: %v", err)
		}
		if _, q := tm.counts(); q != 1 {
			t.Fatalf("OnQuery called %d times, want 1", q)
		}
	})
}
