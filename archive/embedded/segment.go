package embedded

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
)

// A segment file is an 8-byte magic followed by records. A record is an
// 8-byte header (wire length, uint32 little-endian; CRC-32C of the wire
// bytes, uint32 little-endian) followed by the wire bytes of one message,
// exactly as appended. The index stores the offset of the wire bytes.
const (
	segMagic       = "cwseg001"
	segHeaderSize  = len(segMagic)
	recHeaderSize  = 8
	segExt         = ".seg"
	maxSegmentSize = 1 << 40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segName(dir string, id int64) string {
	return filepath.Join(dir, fmt.Sprintf("%010d%s", id, segExt))
}

// segIDs lists the segment ids in dir, ascending.
func segIDs(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, segExt) || e.IsDir() {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(name, segExt), 10, 64)
		if err != nil || id <= 0 {
			continue
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// createSegment creates segment id in dir with its magic and returns it
// open for reading and writing.
func createSegment(dir string, id int64) (*os.File, error) {
	f, err := os.OpenFile(segName(dir, id), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt([]byte(segMagic), 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func putRecHeader(h []byte, n int, crc uint32) {
	binary.LittleEndian.PutUint32(h[0:4], uint32(n))
	binary.LittleEndian.PutUint32(h[4:8], crc)
}

// readRecord reads the record whose wire bytes of length n start at off in
// f into a fresh buffer and checks its header. It returns the wire bytes.
func readRecord(f *os.File, off int64, n int) ([]byte, error) {
	if err := checkPos(off, n); err != nil {
		return nil, err
	}
	buf := make([]byte, recHeaderSize+n)
	if err := readAt(f, buf, off-recHeaderSize); err != nil {
		return nil, err
	}
	return checkRecord(f, buf, off, n)
}

// checkPos checks an index row's record position.
func checkPos(off int64, n int) error {
	if off < int64(segHeaderSize+recHeaderSize) || n < 0 || n > message.MaxSize {
		return fmt.Errorf("%w: record at %d, %d bytes: bad index row", archive.ErrCorrupt, off, n)
	}
	return nil
}

// readAt fills buf from f at off; a short read is ErrCorrupt.
func readAt(f *os.File, buf []byte, off int64) error {
	if _, err := f.ReadAt(buf, off); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: record at %d in %s: %v", archive.ErrCorrupt, off+recHeaderSize, filepath.Base(f.Name()), err)
	}
	return nil
}

// checkRecord checks rec, a record of f (header and wire bytes) whose
// wire bytes of length n the index puts at off, and returns its wire
// bytes.
func checkRecord(f *os.File, rec []byte, off int64, n int) ([]byte, error) {
	wire := rec[recHeaderSize:]
	if got := binary.LittleEndian.Uint32(rec[0:4]); got != uint32(n) {
		return nil, fmt.Errorf("%w: record at %d in %s: length %d, index says %d", archive.ErrCorrupt, off, filepath.Base(f.Name()), got, n)
	}
	if got, want := binary.LittleEndian.Uint32(rec[4:8]), crc32.Checksum(wire, castagnoli); got != want {
		return nil, fmt.Errorf("%w: record at %d in %s: CRC-32C mismatch", archive.ErrCorrupt, off, filepath.Base(f.Name()))
	}
	return wire, nil
}

// segFiles opens segments for reading on demand and closes them together.
type segFiles struct {
	dir   string
	files map[int64]*os.File
}

func (s *segFiles) get(id int64) (*os.File, error) {
	if f, ok := s.files[id]; ok {
		return f, nil
	}
	f, err := os.Open(segName(s.dir, id))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", archive.ErrCorrupt, err)
	}
	if s.files == nil {
		s.files = make(map[int64]*os.File)
	}
	s.files[id] = f
	return f, nil
}

func (s *segFiles) close() {
	for _, f := range s.files {
		f.Close()
	}
	s.files = nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
