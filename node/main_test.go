package node

import (
	"os"
	"testing"

	"github.com/couriernet/courier/internal/pgtest"
)

// child, when set (crash_test.go on unix), runs the test binary as a crash
// child process if the environment asks for one, and reports whether it
// did.
var child func() bool

func TestMain(m *testing.M) {
	if child != nil && child() {
		return
	}
	os.Exit(pgtest.Main(m))
}
