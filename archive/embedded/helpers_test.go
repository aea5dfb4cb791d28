package embedded_test

import (
	"testing"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
	"github.com/couriernet/courier/archive/internal/archivetest"
)

var (
	newEnv     = archivetest.NewEnv
	seedMix    = archivetest.SeedMix
	appendWait = archivetest.AppendWait
	meanSize   = archivetest.MeanSize
)

const benchPool = archivetest.BenchPool

// openT opens the embedded archive in dir with cfg and opts (at most one).
func openT(tb testing.TB, dir string, cfg archive.Config, opts ...embedded.Options) *embedded.Archive {
	tb.Helper()
	var o embedded.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	a, err := embedded.Open(dir, cfg, o)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return a
}
