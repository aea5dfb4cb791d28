package main

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/couriernet/courier/internal/pgtest"
)

// TestMain stops the PostgreSQL server the end-to-end tests start (see
// internal/pgtest) once they are done.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestOneLine: a command's error is printed on one line, whatever lines
// its parts have.
func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("node: invalid config: --tcp-port 99999 not in 0..65535"), "node: invalid config: --tcp-port 99999 not in 0..65535"},
		{fmt.Errorf("rln-relay: membership contract: %w", errors.Join(errors.New("http://127.0.0.1:2: refused"), errors.New("http://127.0.0.1:3: refused"))),
			"rln-relay: membership contract: http://127.0.0.1:2: refused; http://127.0.0.1:3: refused"},
		{errors.New("archive: postgres: failed to connect to `user=u database=db`:\n\t127.0.0.1:1 (127.0.0.1): dial error: refused\n\t127.0.0.1:1 (127.0.0.1): dial error: refused\n"),
			"archive: postgres: failed to connect to `user=u database=db`: 127.0.0.1:1 (127.0.0.1): dial error: refused; 127.0.0.1:1 (127.0.0.1): dial error: refused"},
		{errors.New("a\r\n\n  b  "), "a; b"},
	} {
		if got := oneLine(c.err); got != c.want {
			t.Errorf("oneLine(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
