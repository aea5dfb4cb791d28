package embedded_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/message"
)

// TestWALAcknowledgedInKernel copies an open archive's files (index, WAL,
// segments, watermark; not the shared-memory WAL index) right after the
// acknowledgements, which is what the kernel holds if the process is
// killed then, and opens the copy: SQLite rebuilds the WAL index from the
// WAL, checking every frame's checksum, so every acknowledged message must
// be there. With the default settings, transactions commit as the
// index's VFS holds them (walvfs.go); with large batches and a tiny page
// cache they spill frames before their commit, rewrite them (the checksum
// rewrite after a frame is overwritten) and exceed what the VFS holds.
func TestWALAcknowledgedInKernel(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  archive.Config
		opts embedded.Options
	}{
		{"defaults", archive.Config{}, embedded.Options{}},
		{"spilling", archive.Config{MaxBatch: 4096}, embedded.Options{CacheSize: 16 << 10}},
	} {
		t.Run(c.name, func(t *testing.T) { testWALAcknowledged(t, c.cfg, c.opts) })
	}
}

func testWALAcknowledged(t *testing.T, cfg archive.Config, opts embedded.Options) {
	dir := t.TempDir()
	a := openT(t, dir, cfg, opts)
	defer a.Close()
	const n = 6000
	envs := make([]*message.Envelope, n)
	var wg sync.WaitGroup
	wg.Add(n)
	errs := make(chan error, n)
	for i := range envs {
		envs[i] = newEnv(t, "/waku/2/rs/1/0", fmt.Sprintf("/courier/1/wal-%d/proto", i%7), int64(1_800_000_000_000_000_000+i), []byte(fmt.Sprintf("payload %d", i)))
		if err := a.Append(context.Background(), envs[i], func(err error) {
			if err != nil {
				errs <- err
			}
			wg.Done()
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append acknowledged with %v", err)
	}
	if st := a.Stats(); st.Inserts != n || st.Batches >= n/2 {
		t.Fatalf("stats %+v: want %d inserts in batches of more than two", st, n)
	}
	crashed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if name := e.Name(); name != "LOCK" && name != "index.db-shm" {
			copyFile(t, filepath.Join(dir, name), filepath.Join(crashed, name))
		}
	}
	b := openT(t, crashed, archive.Config{})
	defer b.Close()
	if got := b.Stats().Messages; got != n {
		t.Fatalf("the copy holds %d messages, want %d", got, n)
	}
	for i := 0; i < n; i += 97 {
		res, err := b.Query(context.Background(), archive.Query{Hashes: []message.Hash{envs[i].Hash()}, IncludeData: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 || string(res.Messages[0].Wire) != string(envs[i].Wire()) {
			t.Fatalf("message %d: got %d messages, want its wire bytes", i, len(res.Messages))
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
