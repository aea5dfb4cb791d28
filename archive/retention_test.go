package archive_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// TestParseRetention covers nwaku's grammar
// (waku_archive/retention_policy/builder.nim): case-insensitive,
// 1024-based sizes with decimals, several policies joined by ";".
func TestParseRetention(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want archive.Retention
		str  string
	}{
		{"", archive.Retention{}, "none"},
		{"none", archive.Retention{}, "none"},
		{"NONE", archive.Retention{}, "none"},
		{archive.DefaultRetention, archive.Retention{Time: 48 * time.Hour}, "time:172800"},
		{"Time:60", archive.Retention{Time: time.Minute}, "time:60"},
		{"capacity:25000", archive.Retention{Capacity: 25000}, "capacity:25000"},
		{"size:30GB", archive.Retention{Size: 30 << 30}, "size:30GB"},
		{"size:1.5gb", archive.Retention{Size: 3 << 29}, "size:1536MB"},
		{"size:512Mb", archive.Retention{Size: 512 << 20}, "size:512MB"},
		{"size:.5mB", archive.Retention{Size: 1 << 19}, "size:0.5MB"},
		{"time:3600;capacity:10", archive.Retention{Time: time.Hour, Capacity: 10}, "time:3600;capacity:10"},
		{" time:1 ; size:1gb ", archive.Retention{Time: time.Second, Size: 1 << 30}, "time:1;size:1GB"},
	} {
		got, err := archive.ParseRetention(tt.in)
		if err != nil || got != tt.want || got.String() != tt.str {
			t.Errorf("ParseRetention(%q) = %+v (%s), %v; want %+v (%s)", tt.in, got, got.String(), err, tt.want, tt.str)
		}
	}
	for _, in := range []string{
		"time", "time:", "time:-1", "time:0", "time:1.5", "time:1h", "capacity:0", "capacity:x",
		"size:10", "size:10kb", "size:0gb", "size:gb", "size:1tb", "days:2", "time:1,capacity:2",
		"time:99999999999999999999",
		// A kind given twice is refused, as nwaku's validateRetentionPolicies.
		"capacity:10;capacity:20", "time:60;size:1gb;TIME:120",
	} {
		if r, err := archive.ParseRetention(in); !errors.Is(err, archive.ErrConfig) {
			t.Errorf("ParseRetention(%q) = %+v, %v; want ErrConfig", in, r, err)
		}
	}
	if a, err := embedded.Open(t.TempDir(), archive.Config{Retention: "size:1kb"}, embedded.Options{}); !errors.Is(err, archive.ErrConfig) || a != nil {
		t.Errorf("Open with a bad policy: %v, want ErrConfig", err)
	}
}

// TestRetention applies each kind of policy to both drivers. Every message
// fills an embedded segment of its own (SegmentSize at its minimum), so
// whole-segment deletion and Postgres's row deletion keep the same
// messages.
func TestRetention(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	payload := make([]byte, 149_000)
	for _, tt := range []struct {
		policy string
		ages   []time.Duration // of the messages appended, oldest first
		keep   int             // the newest this many remain
	}{
		{"time:3600", []time.Duration{3 * time.Hour, 2 * time.Hour, 61 * time.Minute, 59 * time.Minute, time.Minute, 0}, 3},
		{"time:3600", []time.Duration{10 * time.Minute, 5 * time.Minute}, 2},
		// capacity 4: runs from 5 messages (4 * 1.3) and keeps 4 (4 * 1.15).
		{"capacity:4", []time.Duration{7, 6, 5, 4, 3, 2, 1}, 4},
		{"capacity:4", []time.Duration{4, 3, 2, 1}, 4},
		// 1 MiB holds 7 messages of 149 kB.
		{"size:1MB", []time.Duration{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 7},
		{"size:1MB;capacity:4", []time.Duration{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 4},
		{"none", []time.Duration{1000 * time.Hour, 1}, 2},
	} {
		t.Run(tt.policy+"/"+strconv.Itoa(len(tt.ages)), func(t *testing.T) {
			forDrivers(t, func(t *testing.T, d driver) {
				var cfg archive.Config
				a, reopen := d.open(t, cfg, embedded.Options{SegmentSize: embedded.MinSegmentSize})
				var want []int64
				for i, age := range tt.ages {
					payload[0] = byte(i)
					ts := now.Add(-age).UnixNano()
					appendWait(t, a, newEnv(t, "p", "/a/1/b/c", ts, payload))
					if i >= len(tt.ages)-tt.keep {
						want = append(want, ts)
					}
				}
				if err := a.Close(); err != nil {
					t.Fatal(err)
				}
				cfg.Retention, cfg.Now = tt.policy, func() time.Time { return now }
				a = reopen(cfg)
				deadline := time.Now().Add(time.Minute)
				for a.Stats().RetentionRuns == 0 && tt.policy != "none" {
					if time.Now().After(deadline) {
						t.Fatal("retention did not run")
					}
					time.Sleep(10 * time.Millisecond)
				}
				res, err := a.Query(context.Background(), archive.Query{Forward: true})
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, m := range res.Messages {
					got = append(got, m.Timestamp)
				}
				st := a.Stats()
				if !slices.Equal(got, want) || st.Deleted != uint64(len(tt.ages)-tt.keep) || st.RetentionErrors != 0 || st.Messages != uint64(tt.keep) {
					t.Fatalf("%s: kept %v, want %v; stats %+v", tt.policy, got, want, st)
				}
				// The archive goes on.
				appendWait(t, a, newEnv(t, "p", "/a/1/b/c", now.UnixNano()+1, []byte("after")))
			})
		})
	}
}

// FuzzParseRetention: any input parses or fails with ErrConfig, never
// panics, and a parsed policy renders to text that parses back to it.
func FuzzParseRetention(f *testing.F) {
	for _, s := range []string{"", "none", "time:172800", "capacity:25000", "size:30GB", "size:1.5gb",
		"time:1;capacity:2;size:3mb", "size:.5MB", "time:1h", "size:1e3gb", ";;", "time:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := archive.ParseRetention(s)
		if err != nil {
			if !errors.Is(err, archive.ErrConfig) {
				t.Fatalf("ParseRetention(%q): %v does not wrap ErrConfig", s, err)
			}
			return
		}
		if r.Time < 0 || r.Capacity < 0 || r.Size < 0 {
			t.Fatalf("ParseRetention(%q) = %+v", s, r)
		}
		back, err := archive.ParseRetention(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRetention(%q) = %+v, renders %q, parses back to %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// TestRetentionManyRows deletes more rows than one delete batch holds
// (Postgres deletes 2,000 a statement, the embedded writer 64 to 8,192 rows a
// chore), by time and then by capacity. 20 kB messages: an embedded
// segment holds 7, and the 4,200 old ones fill 600 segments exactly.
func TestRetentionManyRows(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	forDrivers(t, func(t *testing.T, d driver) {
		a, reopen := d.open(t, archive.Config{}, embedded.Options{SegmentSize: embedded.MinSegmentSize})
		const old, young = 4200, 1500
		for i := range old + young {
			ts := now.Add(-2*time.Hour).UnixNano() + int64(i)
			if i >= old {
				ts = now.Add(-time.Minute).UnixNano() + int64(i)
			}
			env := newEnv(t, "p", "/a/1/b/c", ts, make([]byte, 20_000))
			if i%500 == 499 || i == old+young-1 {
				appendWait(t, a, env)
			} else if err := a.Append(context.Background(), env, nil); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		for _, tt := range []struct {
			policy string
			left   uint64
		}{{"time:3600", young}, {"capacity:1000", 1150}} {
			cfg := archive.Config{Retention: tt.policy, Now: func() time.Time { return now }}
			a = reopen(cfg)
			deadline := time.Now().Add(2 * time.Minute)
			for a.Stats().RetentionRuns == 0 {
				if time.Now().After(deadline) {
					t.Fatal("retention did not run")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Postgres deletes rows; the embedded archive whole segments
			// (7 messages each here), so it may keep up to a segment more.
			st := a.Stats()
			if st.RetentionErrors != 0 || st.Messages < tt.left || st.Messages-tt.left >= 7 || (d.name == "postgres" && st.Messages != tt.left) {
				t.Fatalf("%s: stats %+v; want %d left", tt.policy, st, tt.left)
			}
			a.Close()
		}
	})
}
