package bench

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProgressNotTerminal: a bar of 1,000 updates over 35 s (a store run's
// batches) written to a Progress that is not a terminal comes out as plain
// lines: the first update, one every 10 s, and the last, each ended, no
// carriage return; a note between bars passes through; an unfinished bar
// ends with its last state.
func TestProgressNotTerminal(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	c := Config{Progress: &out}
	c.setDefaults()
	c.Progress.(*lineProgress).now = func() time.Time { return clock }
	report := progressFunc(c.Progress, "store")
	const total = 1000
	for done := 1; done <= total; done++ {
		clock = time.Unix(0, 0).Add(time.Duration(done) * 35 * time.Second / total)
		report(done, total)
	}
	fmt.Fprintf(c.Progress, "a note\n")
	report(3, 10)
	report(4, 10)
	fmt.Fprintln(c.Progress) // as startProgress ends an unfinished bar
	bar := func(done, total int) string {
		filled := done * 30 / total
		return fmt.Sprintf("%-14s [%s%s] %d/%d\n", "store", strings.Repeat("#", filled), strings.Repeat(".", 30-filled), done, total)
	}
	// Update n comes at n*35 ms. Lines: the first (35 ms), then the first
	// update at least 10 s after the last line (287 at 10.045 s, 573 at
	// 20.055 s, 859 at 30.065 s), and the end.
	want := bar(1, total) + bar(287, total) + bar(573, total) + bar(859, total) + bar(total, total) +
		"a note\n" + bar(3, 10) + bar(4, 10)
	if out.String() != want {
		t.Fatalf("progress written:\n%q\nwant\n%q", out.String(), want)
	}
}

// TestProgressTerminal: on a terminal every update redraws the bar in
// place ("\r"), and the finished bar ends its line.
func TestProgressTerminal(t *testing.T) {
	var out bytes.Buffer
	c := Config{Progress: &out, ProgressTerminal: true}
	c.setDefaults()
	report := progressFunc(c.Progress, "store")
	for done := 1; done <= 1000; done++ {
		report(done, 1000)
	}
	if n := strings.Count(out.String(), "\r"); n != 1000 || strings.Count(out.String(), "\n") != 1 || !strings.HasSuffix(out.String(), "1000/1000\n") {
		t.Fatalf("%d redraws, %d line ends; ends %q", n, strings.Count(out.String(), "\n"), out.String()[out.Len()-20:])
	}
}
