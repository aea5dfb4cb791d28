package embedded_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// TestRetentionRemovesSegments: the embedded archive deletes expired
// segments whole, files included, keeps a segment while one message in it
// is unexpired, and removes a segment file no row points into.
// (database/sql's "sqlite3" driver is the one the archive registers.)
func TestRetentionRemovesSegments(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	dir := t.TempDir()
	cfg, opts := archive.Config{}, embedded.Options{SegmentSize: 3 * embedded.MinSegmentSize / 2}
	a := openT(t, dir, cfg, opts)
	payload := make([]byte, 100_000) // two messages per segment
	ages := []time.Duration{10 * time.Minute, 5 * time.Minute, 3 * time.Hour, 4 * time.Hour, 2 * time.Hour, time.Minute, 0}
	for i, age := range ages {
		payload[0] = byte(i)
		appendWait(t, a, newEnv(t, "p", "/a/1/b/c", now.Add(-age).UnixNano(), payload))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	segs := func() []string {
		s, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
		for i := range s {
			s[i] = filepath.Base(s[i])
		}
		return s
	}
	if got := segs(); len(got) != 4 {
		t.Fatalf("segments %v, want 4", got)
	}
	// Segment 1's rows gone, its file left: what a crash between deleting
	// a segment's rows and removing its file leaves behind.
	db, err := sql.Open("sqlite3", filepath.Join(dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM messages WHERE seg = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	cfg.Retention, cfg.Now = "time:3600", func() time.Time { return now }
	a = openT(t, dir, cfg, opts)
	defer a.Close()
	deadline := time.Now().Add(time.Minute)
	for a.Stats().RetentionRuns == 0 {
		if time.Now().After(deadline) {
			t.Fatal("retention did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Segment 1 has no rows, segment 2 (3 h, 4 h) expired, segment 3
	// (2 h, 1 min) keeps a live message, so its file stays while the 2 h
	// message's row goes; segment 4 is appended to.
	if got := segs(); !slices.Equal(got, []string{"0000000003.seg", "0000000004.seg"}) {
		t.Fatalf("segments after retention %v", got)
	}
	if st := a.Stats(); st.Deleted != 3 || st.Messages != 2 {
		t.Fatalf("stats %+v; want 3 deleted, 2 left", st)
	}
	res, err := a.Query(context.Background(), archive.Query{Forward: true})
	if err != nil {
		t.Fatal(err)
	}
	var ages2 []time.Duration
	for _, m := range res.Messages {
		ages2 = append(ages2, now.Sub(time.Unix(0, m.Timestamp)))
	}
	if !slices.Equal(ages2, []time.Duration{time.Minute, 0}) {
		t.Fatalf("messages left are %v old, want 1m0s and 0s", ages2)
	}
}

// TestRetentionWithinSegment: a small embedded archive, all of it in the
// segment being appended to, still loses its expired messages, as nwaku's
// archive does whatever its size. The newest message stays even when it
// has expired too (row ids never start over) and goes once a newer one
// arrives.
func TestRetentionWithinSegment(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tt := range []struct {
		policy string
		ages   []time.Duration
		left   []time.Duration
	}{
		{"time:60", []time.Duration{time.Hour, 30 * time.Minute, 2 * time.Minute, 30 * time.Second, 0}, []time.Duration{30 * time.Second, 0}},
		{"time:60", []time.Duration{3 * time.Hour, 2 * time.Hour, time.Hour}, []time.Duration{time.Hour}},
		// capacity 10: runs from 13 messages and keeps 11.
		{"capacity:10", []time.Duration{14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, []time.Duration{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			dir := t.TempDir()
			a := openT(t, dir, archive.Config{})
			for i, age := range tt.ages {
				appendWait(t, a, newEnv(t, "p", "/a/1/b/c", now.Add(-age).UnixNano(), []byte{byte(i)}))
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			a = openT(t, dir, archive.Config{Retention: tt.policy, Now: func() time.Time { return now }})
			defer a.Close()
			deadline := time.Now().Add(time.Minute)
			for a.Stats().RetentionRuns == 0 {
				if time.Now().After(deadline) {
					t.Fatal("retention did not run")
				}
				time.Sleep(10 * time.Millisecond)
			}
			res, err := a.Query(context.Background(), archive.Query{Forward: true})
			if err != nil {
				t.Fatal(err)
			}
			var left []time.Duration
			for _, m := range res.Messages {
				left = append(left, now.Sub(time.Unix(0, m.Timestamp)))
			}
			if !slices.Equal(left, tt.left) {
				t.Fatalf("left %v, want %v", left, tt.left)
			}
			if st := a.Stats(); st.Deleted != uint64(len(tt.ages)-len(tt.left)) || st.Messages != uint64(len(tt.left)) {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
