package embedded

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/internal/archivetest"
)

// TestStartWALOverSyncsIndexBeside: bringing the WAL to a start over
// fsyncs the database file beside the writer, after a checkpoint of the
// syncer's and before the writer's own checkpoint, and the WAL then
// starts over: the next batch's frames are the only ones it holds.
func TestStartWALOverSyncsIndexBeside(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir, archive.Config{}, Options{FsyncInterval: time.Hour}) // the test is the syncer
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const n = 2000
	done := make(chan error, n)
	for i := range n {
		payload := binary.BigEndian.AppendUint64(nil, uint64(i))
		env := archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", int64(1000+i), payload)
		if err := a.Append(context.Background(), env, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	frames := func() int {
		var busy, log, copied int
		if err := a.cdb.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &copied); err != nil {
			t.Fatal(err)
		}
		return log
	}
	before := frames()
	if before < n/10 {
		t.Fatalf("the WAL holds %d frames after %d inserts, want at least %d", before, n, n/10)
	}

	var mu sync.Mutex
	var dbSyncs []int64 // Stats.WriterCheckpointTime at each fsync of index.db
	fsyncHook = func(path string) {
		if filepath.Base(path) == indexName {
			mu.Lock()
			dbSyncs = append(dbSyncs, a.st.CkptWriterNs.Load())
			mu.Unlock()
		}
	}
	defer func() { fsyncHook = nil }()
	if !a.startWALOver(before) {
		t.Fatal("startWALOver: closed")
	}
	fsyncHook = nil
	if len(dbSyncs) == 0 {
		t.Fatal("index.db was not fsynced")
	}
	for i, w := range dbSyncs {
		if w != 0 {
			t.Errorf("fsync %d of index.db after the writer's checkpoint (%v on it)", i, time.Duration(w))
		}
	}
	if a.st.CkptWriterNs.Load() == 0 {
		t.Error("the writer did not checkpoint")
	}

	env := archivetest.NewEnv(t, "/waku/2/rs/0/0", "/t/1/a/proto", 5000, []byte("after"))
	archivetest.AppendWait(t, a, env)
	if after := frames(); after == 0 || after > 32 {
		t.Errorf("after the start over and one insert the WAL holds %d frames (%d before), want 1 to 32", after, before)
	}
}
