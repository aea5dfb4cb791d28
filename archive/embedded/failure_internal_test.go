package embedded

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/archivetest"
	"github.com/couriernet/courier/message"
)

// TestWriteFailureAndRecovery: while the current segment cannot be
// written (its file swapped for a read-only handle, so pwritev fails with
// EBADF), each batch is reported once to OnFailure with its message count,
// its done callbacks get the error and nothing is stored; once the file
// is writable again the same messages commit, OnInsert sees them, and
// the archive holds each once.
func TestWriteFailureAndRecovery(t *testing.T) {
	var mu sync.Mutex
	var failures []error
	var failed, inserted int
	cfg := archive.Config{
		OnFailure: func(err error, n int) { mu.Lock(); failures = append(failures, err); failed += n; mu.Unlock() },
		OnInsert:  func(*message.Envelope, time.Duration) { mu.Lock(); inserted++; mu.Unlock() },
	}
	a, err := Open(t.TempDir(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	ro, err := os.Open(a.cur.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	a.segMu.Lock()
	rw := a.cur
	a.cur = ro
	a.segMu.Unlock()

	const n = 5
	var envs []*message.Envelope
	for i := range n {
		envs = append(envs, archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", int64(1000+i), []byte{byte(i)}))
	}
	appendAll := func() []error {
		errs := make(chan error, n)
		for _, env := range envs {
			if err := a.Append(context.Background(), env, func(err error) { errs <- err }); err != nil {
				t.Fatal(err)
			}
		}
		var out []error
		for range n {
			out = append(out, <-errs)
		}
		return out
	}
	for i, err := range appendAll() {
		if !errors.Is(err, syscall.EBADF) {
			t.Errorf("message %d on an unwritable segment: done(%v), want EBADF", i, err)
		}
	}
	mu.Lock()
	if failed != n || len(failures) == 0 || !errors.Is(failures[0], syscall.EBADF) || inserted != 0 {
		t.Errorf("OnFailure: %d calls for %d messages (%v), OnInsert %d; want %d messages, EBADF, no insert", len(failures), failed, failures, inserted, n)
	}
	mu.Unlock()
	if st := a.Stats(); st.Failed != n || st.Inserts != 0 {
		t.Errorf("stats: %d failed, %d inserted; want %d and 0", st.Failed, st.Inserts, n)
	}

	a.segMu.Lock()
	a.cur = rw
	a.segMu.Unlock()
	for i, err := range appendAll() {
		if err != nil {
			t.Errorf("message %d once writable: %v", i, err)
		}
	}
	mu.Lock()
	if inserted != n || failed != n {
		t.Errorf("after recovery: OnInsert %d, OnFailure messages %d; want %d and %d", inserted, failed, n, n)
	}
	mu.Unlock()
	res, err := a.Query(context.Background(), archive.Query{Forward: true, IncludeData: true, Limit: archive.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != n {
		t.Fatalf("archive holds %d messages, want %d", len(res.Messages), n)
	}
	for i, m := range res.Messages {
		if m.Hash != envs[i].Hash() || string(m.Wire) != string(envs[i].Wire()) {
			t.Errorf("message %d: %s, want %s", i, m.Hash, envs[i].Hash())
		}
	}
}
