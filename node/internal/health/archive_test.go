package health

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
)

// enospc is the error a segment write on a full disk gives.
var enospc = fmt.Errorf("archive: segment: %w", &os.PathError{Op: "write", Path: "/data/archive/00000001.seg", Err: syscall.ENOSPC})

// TestArchiveHealthLog: the first failed batch of a run is logged at once
// naming the full disk, the next within 10 s are summed into the line
// after; the first commit that succeeds ends the run with one line, and
// the next failure starts a new run, logged at once.
func TestArchiveHealthLog(t *testing.T) {
	var logs bytes.Buffer
	h := NewArchive(slog.New(slog.NewTextHandler(&logs, nil)))
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	var cfg archive.Config
	h.Observe(&cfg)
	lines := func() []string {
		s := strings.TrimSpace(logs.String())
		logs.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}

	cfg.OnFailure(enospc, 3)
	got := lines()
	if len(got) != 1 || !regexp.MustCompile(`level=ERROR msg="archive write failed: messages not stored, disk full" err=".*no space left on device" messages=3 failing_for=0s lost_since_first_failure=3`).MatchString(got[0]) {
		t.Fatalf("first failure logged %q", got)
	}
	now = now.Add(time.Second)
	cfg.OnFailure(enospc, 2)
	if got := lines(); len(got) != 0 {
		t.Fatalf("a failure 1 s later logged %q, want nothing until 10 s", got)
	}
	now = now.Add(10 * time.Second)
	cfg.OnFailure(enospc, 4)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "messages=6 failing_for=11s lost_since_first_failure=9") {
		t.Fatalf("failure 11 s in logged %q, want the 6 messages since the last line", got)
	}
	failing, desc := h.Status()
	if want := "Archive writes failing since 2026-12-01T10:00:00Z (9 messages not stored), disk full: " + enospc.Error(); !failing || desc != want {
		t.Fatalf("status %v %q, want true %q", failing, desc, want)
	}

	now = now.Add(4 * time.Second)
	cfg.OnInsert(nil, 0)
	cfg.OnInsert(nil, 0)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="archive writes succeed again" failed_for=15s messages_not_stored=9`) {
		t.Fatalf("recovery logged %q, want one line", got)
	}
	if failing, desc := h.Status(); failing || desc != "" {
		t.Fatalf("status after recovery %v %q", failing, desc)
	}
	now = now.Add(time.Second)
	cfg.OnFailure(enospc, 1)
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "messages=1 failing_for=0s lost_since_first_failure=1") {
		t.Fatalf("a new run's first failure logged %q", got)
	}
}
