package rlnrelay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/couriernet/courier/rln"
)

// Errors of the message id counter.
var (
	// ErrCounterFile is wrapped by the errors about the counter file: not
	// one, corrupt, or made for another membership or epoch length.
	ErrCounterFile = errors.New("rlnrelay: message id counter file")
	// ErrEpochTooOld is wrapped by the error for an epoch the counter has
	// already forgotten (local time went back by more than the clock gap
	// since): a proof for it might repeat a message id, so none is made.
	ErrEpochTooOld = errors.New("rlnrelay: epoch older than the message id counter remembers")
)

// The counter file: a header, then records appended one per message id
// reserved, all little-endian.
//
//	header  64 bytes: magic "CRLNIDS1", id commitment (32), epoch length
//	        in seconds (u64), floor epoch (u64), CRC-32C of the 56 bytes
//	        before (u32), 4 zero bytes
//	record  16 bytes: epoch (u64), next message id (u32), CRC-32C of the
//	        12 bytes before (u32)
//
// A record says that the ids below next may have been used in its epoch;
// the largest next of an epoch wins. Every epoch from the floor up has all
// its records in the file; epochs below the floor are refused. The file is
// compacted (one record per epoch kept) by writing a new one beside it,
// syncing it and renaming it over the old, then syncing the directory.
const (
	counterMagic  = "CRLNIDS1"
	headerSize    = 64
	recordSize    = 16
	compactEvery  = 4096 // records appended between compactions
	headerCRCSpan = 56
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// idCounter hands out each message id of an epoch once, across restarts
// and crashes: the record of an id reaches the disk (write and fsync)
// before the id is returned. Its state is the next id of every epoch from
// floor up, in memory and in the file.
type idCounter struct {
	path       string
	commitment rln.Field
	epochSec   uint64
	keep       uint64 // epochs kept before now at compaction
	// compactAfter is the number of records appended between compactions.
	compactAfter int

	mu       sync.Mutex
	f        *os.File
	next     map[uint64]uint64 // epoch -> next id
	refused  map[uint64]uint64 // epoch -> requests refused at the limit (not persisted)
	floor    uint64
	appended int // records since the last compaction
}

// openCounter opens the counter file at path, creating it if it does not
// exist, for the membership of commitment and epochs of epochSec seconds;
// nowEpoch is the current epoch. A torn last record (a crash during its
// write, so its id was never handed out) is dropped; any other damage is an
// error.
func openCounter(path string, commitment rln.Field, epochSec, nowEpoch uint64) (*idCounter, error) {
	c := &idCounter{path: path, commitment: commitment, epochSec: epochSec,
		keep: epochsSpanned(epochSec), compactAfter: compactEvery, next: map[uint64]uint64{}, refused: map[uint64]uint64{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrCounterFile, err)
	default:
		if err := c.parse(data); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCounterFile, path, err)
		}
	}
	if err := c.compactLocked(nowEpoch); err != nil {
		return nil, err
	}
	return c, nil
}

// epochsSpanned is the number of epochs of epochSec seconds a span of twice
// the accepted clock gap can touch, plus one: the epochs a message stamped
// within the gap of now may have.
func epochsSpanned(epochSec uint64) uint64 {
	span := uint64(2 * maxAcceptedGap.Seconds())
	return (span+epochSec-1)/epochSec + 1
}

func (c *idCounter) parse(data []byte) error {
	if len(data) < headerSize {
		return fmt.Errorf("%d bytes, shorter than the header", len(data))
	}
	h := data[:headerSize]
	if string(h[:8]) != counterMagic {
		return errors.New("not a message id counter file")
	}
	if binary.LittleEndian.Uint32(h[headerCRCSpan:]) != crc32.Checksum(h[:headerCRCSpan], castagnoli) {
		return errors.New("header checksum mismatch")
	}
	if !bytes.Equal(h[8:40], c.commitment[:]) {
		return fmt.Errorf("made for id commitment %x, not this membership's %s", h[8:40], c.commitment)
	}
	if sec := binary.LittleEndian.Uint64(h[40:]); sec != c.epochSec {
		return fmt.Errorf("made for epochs of %d s, not %d s", sec, c.epochSec)
	}
	c.floor = binary.LittleEndian.Uint64(h[48:])
	recs := data[headerSize:]
	n := len(recs) / recordSize
	for i := 0; i < n; i++ {
		r := recs[i*recordSize : (i+1)*recordSize]
		if binary.LittleEndian.Uint32(r[12:]) != crc32.Checksum(r[:12], castagnoli) {
			if i == n-1 && len(recs)%recordSize == 0 {
				break // the last record, torn
			}
			return fmt.Errorf("record %d: checksum mismatch", i)
		}
		e, next := binary.LittleEndian.Uint64(r), uint64(binary.LittleEndian.Uint32(r[8:]))
		if next > c.next[e] {
			c.next[e] = next
		}
	}
	return nil
}

// reserve returns the next message id of epoch, below limit, once its
// record is on disk. nowEpoch is the current epoch (for compaction). Errors:
// a *LimitError when the ids of epoch are spent, ErrEpochTooOld, or the
// file's write or sync error (the id is then burnt, never handed out).
func (c *idCounter) reserve(epoch, nowEpoch, limit uint64) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return 0, fmt.Errorf("%w: closed", ErrCounterFile)
	}
	if epoch < c.floor {
		return 0, fmt.Errorf("%w: epoch %d, the counter keeps epochs from %d", ErrEpochTooOld, epoch, c.floor)
	}
	id := c.next[epoch]
	if id >= limit {
		if len(c.refused) > int(2*c.keep) {
			for e := range c.refused {
				if e+c.keep < nowEpoch {
					delete(c.refused, e)
				}
			}
		}
		c.refused[epoch]++
		return 0, &LimitError{Epoch: epoch, Requested: id + c.refused[epoch] - 1, Limit: limit}
	}
	c.next[epoch] = id + 1 // burnt even if the write below fails
	if err := c.appendLocked(epoch, id+1); err != nil {
		return 0, err
	}
	if c.appended >= c.compactAfter {
		if err := c.compactLocked(nowEpoch); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// used returns the number of ids spent in epoch.
func (c *idCounter) used(epoch uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next[epoch]
}

func (c *idCounter) appendLocked(epoch, next uint64) error {
	var r [recordSize]byte
	binary.LittleEndian.PutUint64(r[:], epoch)
	binary.LittleEndian.PutUint32(r[8:], uint32(next))
	binary.LittleEndian.PutUint32(r[12:], crc32.Checksum(r[:12], castagnoli))
	if _, err := c.f.Write(r[:]); err != nil {
		return fmt.Errorf("%w: write: %w", ErrCounterFile, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("%w: sync: %w", ErrCounterFile, err)
	}
	c.appended++
	return nil
}

// compactLocked rewrites the file with one record per epoch from the new
// floor (the current epoch less keep, never lower than the old floor) and
// reopens it for appending.
func (c *idCounter) compactLocked(nowEpoch uint64) error {
	if nowEpoch > c.keep && nowEpoch-c.keep > c.floor {
		c.floor = nowEpoch - c.keep
	}
	for e := range c.next {
		if e < c.floor {
			delete(c.next, e)
			delete(c.refused, e)
		}
	}
	buf := make([]byte, headerSize, headerSize+recordSize*len(c.next))
	copy(buf, counterMagic)
	copy(buf[8:], c.commitment[:])
	binary.LittleEndian.PutUint64(buf[40:], c.epochSec)
	binary.LittleEndian.PutUint64(buf[48:], c.floor)
	binary.LittleEndian.PutUint32(buf[headerCRCSpan:], crc32.Checksum(buf[:headerCRCSpan], castagnoli))
	for e, next := range c.next {
		var r [recordSize]byte
		binary.LittleEndian.PutUint64(r[:], e)
		binary.LittleEndian.PutUint32(r[8:], uint32(next))
		binary.LittleEndian.PutUint32(r[12:], crc32.Checksum(r[:12], castagnoli))
		buf = append(buf, r[:]...)
	}
	if err := writeFileAtomic(c.path, buf); err != nil {
		return fmt.Errorf("%w: %w", ErrCounterFile, err)
	}
	if c.f != nil {
		c.f.Close()
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		c.f = nil
		return fmt.Errorf("%w: %w", ErrCounterFile, err)
	}
	c.f, c.appended = f, 0
	return nil
}

// writeFileAtomic replaces path with data: a temporary file beside it,
// written and synced, renamed over path, then the directory synced.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// close closes the file; later reservations fail.
func (c *idCounter) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}
