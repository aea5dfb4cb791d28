package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNodeLogJSON checks --log-format=JSON records against nwaku's
// (nim-chronicles json_records): "lvl" with the three-letter level, "ts",
// "msg", then the fields, one record a line.
func TestNodeLogJSON(t *testing.T) {
	var buf bytes.Buffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug - 4)
	log := newLogger(&buf, level, true)
	for _, name := range []string{"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "FATAL"} {
		l, err := parseLogLevel(name)
		if err != nil {
			t.Fatal(err)
		}
		log.Log(t.Context(), l, "at "+name, "peer", "16Uiu2", "count", 3)
	}
	want := []string{"TRC", "DBG", "INF", "NTC", "WRN", "ERR", "FAT"}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	ts := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$`)
	for i, line := range lines {
		if !strings.HasPrefix(line, `{"ts":"`) && !strings.HasPrefix(line, `{"lvl":"`) {
			t.Errorf("line %q does not start with ts or lvl", line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rec["lvl"] != want[i] || rec["msg"] != "at "+[]string{"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "ERROR", "FATAL"}[i] ||
			rec["peer"] != "16Uiu2" || rec["count"] != 3.0 || !ts.MatchString(rec["ts"].(string)) || len(rec) != 5 {
			t.Errorf("record %s; want lvl %s, ts, msg and the fields only", line, want[i])
		}
		if _, err := time.Parse(chroniclesTime, rec["ts"].(string)); err != nil {
			t.Errorf("ts %q: %v", rec["ts"], err)
		}
	}
}

// TestNodeLogText keeps slog's text records with nwaku's level names.
func TestNodeLogText(t *testing.T) {
	var buf bytes.Buffer
	level := new(slog.LevelVar)
	level.Set(slog.LevelDebug - 4)
	log := newLogger(&buf, level, false)
	log.Log(t.Context(), slog.LevelInfo+2, "hello", "n", 1)
	if got := buf.String(); !strings.Contains(got, " level=NOTICE msg=hello n=1\n") {
		t.Errorf("text record %q", got)
	}
}
