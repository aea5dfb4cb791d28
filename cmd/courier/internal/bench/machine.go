package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// machineLine describes the state of the machine a run starts on, the
// first line the bench prints: how long it has been up, its load average
// and its memory, since both decide what a time figure means on a
// virtual machine (docs/benchmark.md, "Reading the figures"). Parts that
// /proc does not give (off Linux) are "unknown".
func machineLine() string {
	uptime, _ := os.ReadFile("/proc/uptime")
	meminfo, _ := os.ReadFile("/proc/meminfo")
	return "machine: " + describeMachine(uptime, loadAverage(), meminfo)
}

// describeMachine formats the contents of /proc/uptime and /proc/meminfo
// (nil or malformed when unreadable) and a load average from loadAverage.
func describeMachine(uptime []byte, load string, meminfo []byte) string {
	up := "unknown"
	if f := strings.Fields(string(uptime)); len(f) > 0 {
		if s, err := strconv.ParseFloat(f[0], 64); err == nil && s >= 0 {
			up = roundUptime(time.Duration(s * float64(time.Second)))
		}
	}
	mem := "memory unknown"
	if kb, ok := parseMeminfo(meminfo, "MemTotal", "MemFree", "Cached"); ok {
		mem = fmt.Sprintf("%.1f GiB free of %.1f GiB, %.1f GiB in the page cache",
			gib(kb["MemFree"]), gib(kb["MemTotal"]), gib(kb["Cached"]))
	}
	return fmt.Sprintf("up %s, load average %s, %s", up, load, mem)
}

// roundUptime writes d to the second under a minute ("42s"), to the
// minute above ("5m", "13h37m").
func roundUptime(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// gib converts kB, as /proc/meminfo counts them (KiB), to GiB, as free(1)
// does.
func gib(kb uint64) float64 { return float64(kb) / (1 << 20) }

// parseMeminfo returns the named fields of /proc/meminfo's contents in
// kB; ok is false unless every one of them is there.
func parseMeminfo(b []byte, names ...string) (map[string]uint64, bool) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	kb := make(map[string]uint64, len(names))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || !want[name] {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			kb[name] = v
		}
	}
	return kb, len(kb) == len(names)
}

// loadAverage returns the machine's 1, 5 and 15 minute load averages
// (/proc/loadavg), or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
