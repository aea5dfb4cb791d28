package embedded_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// TestSegmentReserve checks that an open archive's segment has its blocks
// reserved ahead of its records, up to SegmentSize when that is nearer,
// while its size is what was written; that Close gives the reserve back;
// and that a reopened archive reserves again as it writes.
func TestSegmentReserve(t *testing.T) {
	dir := t.TempDir()
	const size = 8 << 20
	a := openT(t, dir, archive.Config{}, embedded.Options{SegmentSize: size})
	appendWait(t, a, newEnv(t, "/waku/2/rs/1/0", "/courier/1/reserve/proto", 1, make([]byte, 1000)))
	seg := filepath.Join(dir, "0000000001.seg")
	fi, blocks := statBlocks(t, seg)
	if blocks < size {
		if !canReserve(t, dir) {
			t.Skip("the file system of the test's directory has no fallocate")
		}
		t.Fatalf("an open segment has %d bytes of blocks, want its reserve of %d", blocks, size)
	}
	if fi.Size() > 2000 {
		t.Fatalf("an open segment of one message has %d bytes", fi.Size())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	fi, blocks = statBlocks(t, seg)
	if blocks > fi.Size()+64<<10 {
		t.Fatalf("a closed segment of %d bytes keeps %d bytes of blocks", fi.Size(), blocks)
	}
	b := openT(t, dir, archive.Config{}, embedded.Options{SegmentSize: size})
	defer b.Close()
	appendWait(t, b, newEnv(t, "/waku/2/rs/1/0", "/courier/1/reserve/proto", 2, make([]byte, 1000)))
	if _, blocks = statBlocks(t, seg); blocks < size {
		t.Fatalf("a reopened segment written to has %d bytes of blocks, want its reserve of %d", blocks, size)
	}
}

// TestSegmentReserveBounded: in a segment larger than the reserve ahead,
// the blocks held past the records are 16 MiB, not the segment's size.
func TestSegmentReserveBounded(t *testing.T) {
	dir := t.TempDir()
	if !canReserve(t, dir) {
		t.Skip("the file system of the test's directory has no fallocate")
	}
	const size, ahead = 256 << 20, 16 << 20
	a := openT(t, dir, archive.Config{}, embedded.Options{SegmentSize: size})
	defer a.Close()
	appendWait(t, a, newEnv(t, "/waku/2/rs/1/0", "/courier/1/reserve/proto", 1, make([]byte, 1000)))
	fi, blocks := statBlocks(t, filepath.Join(dir, "0000000001.seg"))
	if blocks < ahead || blocks > fi.Size()+ahead+64<<10 {
		t.Fatalf("a segment of %d bytes has %d bytes of blocks, want its size and %d ahead", fi.Size(), blocks, ahead)
	}
}

// canReserve reports whether the file system of dir reserves blocks with
// fallocate(2) and FALLOC_FL_KEEP_SIZE.
func canReserve(t *testing.T, dir string) bool {
	f, err := os.CreateTemp(dir, "reserve")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 1<<20) == nil
}

func statBlocks(t *testing.T, path string) (os.FileInfo, int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi, fi.Sys().(*syscall.Stat_t).Blocks * 512
}
