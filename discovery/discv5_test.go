package discovery

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/log"
)

// TestDiscv5LogLevels checks that go-ethereum's discv5 records reach the
// node's handler at debug level at most, and only when the handler's
// level, which POST /admin/v1/log-level may change, lets the record's own
// level through: trace records only at TRACE.
func TestDiscv5LogLevels(t *testing.T) {
	var buf bytes.Buffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug)
	l := log.NewLogger(debugOnly{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})})

	l.Trace("trace one")
	l.Debug("debug one")
	l.Warn("warn one")
	level.Set(slog.LevelDebug - 4) // courier's and go-ethereum's TRACE
	l.Trace("trace two")
	level.Set(slog.LevelInfo)
	l.Warn("warn two")

	var got []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		got = append(got, line[strings.Index(line, "level="):])
	}
	want := []string{
		`level=DEBUG msg="discv5: debug one"`,
		`level=DEBUG msg="discv5: warn one"`,
		`level=DEBUG-4 msg="discv5: trace two"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
