package archive_test

import (
	"errors"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
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
	} {
		if r, err := archive.ParseRetention(in); !errors.Is(err, archive.ErrBadConfig) {
			t.Errorf("ParseRetention(%q) = %+v, %v; want ErrBadConfig", in, r, err)
		}
	}
	if a, err := archive.Open(t.TempDir(), archive.Config{Retention: "size:1kb"}); !errors.Is(err, archive.ErrBadConfig) || a != nil {
		t.Errorf("Open with a bad policy: %v, want ErrBadConfig", err)
	}
}
