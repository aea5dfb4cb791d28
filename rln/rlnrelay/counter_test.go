package rlnrelay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/couriernet/courier/rln"
)

var testCommitment = rln.HashToField([]byte("counter test commitment"))

func openTestCounter(t *testing.T, path string, epochSec, now uint64) *idCounter {
	t.Helper()
	c, err := openCounter(path, testCommitment, epochSec, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close() })
	return c
}

func reserveN(t *testing.T, c *idCounter, epoch, now, limit uint64, n int) []uint64 {
	t.Helper()
	var ids []uint64
	for range n {
		id, err := c.reserve(epoch, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestCounterPerEpoch: ids count from 0 in each epoch up to the limit,
// the refusals say what nwaku says, and a reopened counter goes on where
// the old one stopped.
func TestCounterPerEpoch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids")
	c := openTestCounter(t, path, 1, 100)
	if got := reserveN(t, c, 100, 100, 3, 3); !equalIDs(got, 0, 1, 2) {
		t.Fatalf("epoch 100: %v", got)
	}
	for i, want := range []string{
		"could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: 3 & nonceLimit: 3",
		"could not get new message id to generate an rln proof: NonceLimitReached: Nonce limit reached. Please wait for the next epoch. requested nonce: 4 & nonceLimit: 3",
	} {
		_, err := c.reserve(100, 100, 3)
		var le *LimitError
		if !errors.As(err, &le) || !errors.Is(err, ErrLimit) || !errors.Is(err, ErrNoProof) || err.Error() != want {
			t.Fatalf("refusal %d: %v", i, err)
		}
	}
	if got := reserveN(t, c, 101, 100, 3, 2); !equalIDs(got, 0, 1) {
		t.Fatalf("epoch 101: %v", got)
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	c = openTestCounter(t, path, 1, 101)
	if _, err := c.reserve(100, 101, 3); !errors.Is(err, ErrLimit) {
		t.Fatalf("epoch 100 after reopening: %v", err)
	}
	if got := reserveN(t, c, 101, 101, 3, 1); !equalIDs(got, 2) {
		t.Fatalf("epoch 101 after reopening: %v", got)
	}
	if c.used(101) != 3 || c.used(102) != 0 {
		t.Fatalf("used: %d %d", c.used(101), c.used(102))
	}
}

func equalIDs(got []uint64, want ...uint64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestCounterTornTail: a record cut short or garbled at the end (a crash
// during its write: its id was never handed out) is dropped; damage
// before the last record is an error.
func TestCounterTornTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ids")
	c := openTestCounter(t, path, 1, 100)
	reserveN(t, c, 100, 100, 10, 4) // records next=1..4
	c.close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != headerSize+4*recordSize {
		t.Fatalf("file of %d bytes, want the header and 4 records", len(data))
	}
	for _, tc := range []struct {
		name string
		data []byte
		next uint64 // the epoch's next id after reopening; 0 for an error
	}{
		{"intact", data, 4},
		{"half a record more", append(append([]byte(nil), data...), make([]byte, 7)...), 4},
		{"last record zeroed", append(append([]byte(nil), data[:len(data)-recordSize]...), make([]byte, recordSize)...), 3},
		{"last record garbled", flip(data, len(data)-3), 3},
		{"a middle record garbled", flip(data, headerSize+recordSize+2), 0},
		{"header garbled", flip(data, 50), 0},
		{"not a counter file", []byte(strings.Repeat("x", 80)), 0},
		{"short", data[:20], 0},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := openCounter(p, testCommitment, 1, 100)
		if tc.next == 0 {
			if !errors.Is(err, ErrCounterFile) {
				t.Errorf("%s: %v, want ErrCounterFile", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := c.used(100); got != tc.next {
			t.Errorf("%s: next id %d, want %d", tc.name, got, tc.next)
		}
		// The open compacted the file: a second open reads it cleanly.
		c.close()
		if c2, err := openCounter(p, testCommitment, 1, 100); err != nil || c2.used(100) != tc.next {
			t.Errorf("%s: reopened: %v", tc.name, err)
		} else {
			c2.close()
		}
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x40
	return out
}

// TestCounterOtherMembership: a file made for another membership or epoch
// length is refused, not reused.
func TestCounterOtherMembership(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids")
	c := openTestCounter(t, path, 600, 100)
	reserveN(t, c, 100, 100, 10, 1)
	c.close()
	if _, err := openCounter(path, rln.HashToField([]byte("another")), 600, 100); !errors.Is(err, ErrCounterFile) {
		t.Fatalf("other commitment: %v", err)
	}
	if _, err := openCounter(path, testCommitment, 1, 100); !errors.Is(err, ErrCounterFile) {
		t.Fatalf("other epoch length: %v", err)
	}
}

// TestCounterFloor: compaction forgets the epochs before the current one
// less the clock gap's span and refuses them afterwards; the epochs it
// keeps, the future ones included, keep their counts.
func TestCounterFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids")
	keep := epochsSpanned(1) // 43 epochs of 1 s
	if keep != 43 {
		t.Fatalf("epochs spanned by 1 s epochs: %d", keep)
	}
	c := openTestCounter(t, path, 1, 1000)
	reserveN(t, c, 1000, 1000, 5, 2)
	reserveN(t, c, 2000, 1000, 5, 1) // a future epoch (the clock was wrong)
	c.close()
	c = openTestCounter(t, path, 1, 1000+keep+1) // compacts with the floor at 1001
	if _, err := c.reserve(1000, 1000+keep+1, 5); !errors.Is(err, ErrEpochTooOld) {
		t.Fatalf("forgotten epoch: %v", err)
	}
	if got := reserveN(t, c, 1001, 1000+keep+1, 5, 1); !equalIDs(got, 0) {
		t.Fatalf("epoch 1001: %v", got)
	}
	if got := reserveN(t, c, 2000, 1000+keep+1, 5, 1); !equalIDs(got, 1) {
		t.Fatalf("future epoch 2000 after compaction: %v", got)
	}
	// The clock going back keeps the floor.
	c.close()
	c = openTestCounter(t, path, 1, 10)
	if _, err := c.reserve(999, 10, 5); !errors.Is(err, ErrEpochTooOld) {
		t.Fatalf("epoch below the floor after the clock went back: %v", err)
	}
	if epochsSpanned(600) != 2 || epochsSpanned(20) != 4 {
		t.Fatalf("epochs spanned: 600 s %d, 20 s %d", epochsSpanned(600), epochsSpanned(20))
	}
}

// TestCounterCompactsAsItGoes: past compactAfter records the file is
// rewritten with one record per epoch, and the counts survive.
func TestCounterCompactsAsItGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids")
	c := openTestCounter(t, path, 1, 500)
	c.compactAfter = 32
	reserveN(t, c, 500, 500, rln.MaxUserMessageLimit, 32+10)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(headerSize + 11*recordSize); fi.Size() != want {
		t.Fatalf("file of %d bytes, want %d (compacted, then 10 records)", fi.Size(), want)
	}
	c.close()
	c = openTestCounter(t, path, 1, 500)
	if got := c.used(500); got != 32+10 {
		t.Fatalf("next id %d after reopening", got)
	}
	matches, _ := filepath.Glob(path + ".tmp*")
	if len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}
