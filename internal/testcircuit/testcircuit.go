// Package testcircuit finds the RLN circuit files for tests: the directory
// named by $COURIER_RLN_CIRCUIT_DIR, else ../shared/rln beside the
// repository root (the directory holding go.mod). A test that needs them
// is skipped with a message when they are absent, and fails when the
// environment has CI=true.
package testcircuit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// EnvDir is the environment variable that names the circuit directory.
const EnvDir = "COURIER_RLN_CIRCUIT_DIR"

// Files are the names a test may need.
var Files = []string{"rln_final.zkey", "graph.bin", "rln.wasm"}

// Dir returns the circuit directory (Find), skipping t (or failing it
// under CI=true) when one of Files is missing there.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return dir
}

// Find returns the circuit directory's absolute path, or an error saying
// which file is missing and where to put it, for a test that goes on
// without RLN.
func Find() (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", missing("no repository root: " + err.Error())
		}
		dir = filepath.Join(root, "..", "shared", "rln")
	}
	for _, f := range Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", missing("circuit file missing: " + err.Error())
		}
	}
	return filepath.Abs(dir)
}

func missing(why string) error {
	return errors.New("RLN circuit files: " + why + "; put zerokit's rln_final.zkey (v0.8.0 rln/resources/tree_height_20), graph.bin and rln.wasm (v0.9.0 rln/resources/tree_depth_20) in ../shared/rln beside the repository, or name their directory in $" + EnvDir)
}

// repoRoot walks up from this file to the directory holding go.mod.
func repoRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
