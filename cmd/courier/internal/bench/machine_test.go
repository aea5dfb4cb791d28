package bench

import (
	"os"
	"strings"
	"testing"
)

func TestDescribeMachine(t *testing.T) {
	meminfo, err := os.ReadFile("testdata/meminfo") // a copy of /proc/meminfo's first lines
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		uptime, meminfo []byte
		want            string
	}{
		{"linux", []byte("2051.37 3902.11\n"), meminfo,
			"up 34m, load average 0.80 1.35 1.17, 8.3 GiB free of 23.5 GiB, 14.7 GiB in the page cache"},
		{"seconds", []byte("42.6 80.0\n"), meminfo,
			"up 43s, load average 0.80 1.35 1.17, 8.3 GiB free of 23.5 GiB, 14.7 GiB in the page cache"},
		{"hours", []byte("49050.1 1.0\n"), meminfo,
			"up 13h38m, load average 0.80 1.35 1.17, 8.3 GiB free of 23.5 GiB, 14.7 GiB in the page cache"},
		{"unreadable", nil, nil, "up unknown, load average 0.80 1.35 1.17, memory unknown"},
		{"malformed", []byte("-3 x"), []byte("MemTotal: lots\nMemFree: 1 kB\nCached: 2 kB\n"),
			"up unknown, load average 0.80 1.35 1.17, memory unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeMachine(tc.uptime, "0.80 1.35 1.17", tc.meminfo); got != tc.want {
				t.Errorf("describeMachine:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseMeminfo(t *testing.T) {
	meminfo, err := os.ReadFile("testdata/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	kb, ok := parseMeminfo(meminfo, "MemTotal", "Cached", "Hugepagesize")
	if !ok || kb["MemTotal"] != 24684140 || kb["Cached"] != 15427004 || kb["Hugepagesize"] != 2048 {
		t.Errorf("parseMeminfo = %v, %v", kb, ok)
	}
	if _, ok := parseMeminfo(meminfo, "MemTotal", "HugePages_Total"); ok {
		t.Error("HugePages_Total has no kB unit but was taken")
	}
}

func TestMachineLine(t *testing.T) {
	line := machineLine()
	if !strings.HasPrefix(line, "machine: up ") {
		t.Fatalf("machineLine = %q", line)
	}
	if _, err := os.Stat("/proc/meminfo"); err == nil && strings.Contains(line, "unknown") {
		t.Errorf("machineLine = %q, with /proc readable", line)
	}
}
