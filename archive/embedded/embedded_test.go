package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
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
	for _, arch := range []*embedded.Archive{a, b} {
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

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  archive.Config
		opts embedded.Options
	}{
		{cfg: archive.Config{QueueBytes: -1}}, {cfg: archive.Config{QueueBytes: archive.MinQueueBytes - 1}},
		{opts: embedded.Options{FsyncInterval: -time.Second}},
		{opts: embedded.Options{SegmentSize: -1}}, {opts: embedded.Options{SegmentSize: embedded.MinSegmentSize - 1}},
		{opts: embedded.Options{CacheSize: -1}}, {opts: embedded.Options{MmapSize: -1}},
		{cfg: archive.Config{MaxBatch: -1}},
	} {
		a, err := embedded.Open(t.TempDir(), c.cfg, c.opts)
		if !errors.Is(err, archive.ErrConfig) || a != nil {
			t.Errorf("Open with %+v %+v: %v, want ErrConfig", c.cfg, c.opts, err)
		}
	}
}

// TestAppendPushesBack fills the queue while the writer is held in a done
// callback: Append waits for room and gives up when its context ends.
func TestSegmentRoll(t *testing.T) {
	dir := t.TempDir()
	cfg, opts := archive.Config{}, embedded.Options{SegmentSize: embedded.MinSegmentSize}
	a := openT(t, dir, cfg, opts)
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
		if fi, _ := os.Stat(s); fi.Size() > embedded.MinSegmentSize {
			t.Fatalf("%s has %d bytes, over SegmentSize", s, fi.Size())
		}
	}
	a = openT(t, dir, cfg, opts)
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
	// Read with its neighbour in one span, it is found out all the same.
	if _, err := a.Query(context.Background(), archive.Query{PubsubTopic: "p", IncludeData: true, Forward: true}); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("reading a page with a damaged record: %v, want ErrCorrupt", err)
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

// TestConcurrentAppendQuery appends from several goroutines while others
// query; every message is stored once and pages never repeat or skip.
// TestCloseReleasesBlockedAppend: an Append waiting for room returns
// ErrClosed once Close starts, and Close still commits what was queued.
func TestOpenLocks(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir, archive.Config{})
	if b, err := embedded.Open(dir, archive.Config{}, embedded.Options{}); !errors.Is(err, archive.ErrLocked) || b != nil {
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

func TestIndexPath(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, "store.sqlite3")
	segs := filepath.Join(dir, "store.sqlite3.segments")
	a := openT(t, segs, archive.Config{}, embedded.Options{IndexPath: index})
	env := newEnv(t, "/waku/2/rs/0/0", "/a/1/b/c", 5, []byte("x"))
	appendWait(t, a, env)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("no index at IndexPath: %v", err)
	}
	if _, err := os.Stat(filepath.Join(segs, "index.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an index.db beside the segments: %v", err)
	}
	b := openT(t, segs, archive.Config{}, embedded.Options{IndexPath: index})
	defer b.Close()
	res, err := b.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
	if err != nil || len(res.Messages) != 1 || !bytes.Equal(res.Messages[0].Wire, env.Wire()) {
		t.Fatalf("reopened: %+v, %v", res, err)
	}
}

// TestCloseErrorOnce: a Close that fails (here the directory is gone, so
// the last fsync round cannot sync it) returns its error once; a second
// Close returns nil, as every Close in the project does.
func TestCloseErrorOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	a := openT(t, dir, archive.Config{})
	appendWait(t, a, newEnv(t, "p", "/a/1/b/c", 1, []byte("x")))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err == nil || !strings.Contains(err.Error(), "archive: fsync") {
		t.Fatalf("Close of an archive whose directory is gone: %v, want the fsync error", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
}

// TestAppendTakesEnvelopeCRC: a record's CRC-32C is the one its envelope
// carries (message.Envelope.WireCRC, computed with the relay's hashes), not
// computed again; a wrong one is caught when the record is read, as a torn
// or altered record is (archive.ErrCorrupt).
func TestAppendTakesEnvelopeCRC(t *testing.T) {
	a := openT(t, t.TempDir(), archive.Config{})
	defer a.Close()
	_, wires := seedMix(t, 2, 3)
	var envs []*message.Envelope
	for i, w := range wires {
		m, err := message.Decode(w, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, _, crc := m.HashAndID("/waku/2/rs/1/0", w, nil)
		if i == 1 {
			crc++
		}
		env := message.NewEnvelopeWithHashAndProof(m, "/waku/2/rs/1/0", w, nil, h, crc)
		envs = append(envs, env)
		appendWait(t, a, env)
	}
	read := func(env *message.Envelope) ([]byte, error) {
		res, err := a.Query(context.Background(), archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
		if err != nil {
			return nil, err
		}
		if len(res.Messages) != 1 {
			t.Fatalf("found %d messages, want 1", len(res.Messages))
		}
		return res.Messages[0].Wire, nil
	}
	if w, err := read(envs[0]); err != nil || !bytes.Equal(w, envs[0].Wire()) {
		t.Fatalf("the record of the right CRC-32C: %v, reads back identical: %v", err, err == nil && bytes.Equal(w, envs[0].Wire()))
	}
	if _, err := read(envs[1]); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("the record of a wrong CRC-32C read with %v, want archive.ErrCorrupt", err)
	}
}
