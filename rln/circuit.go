package rln

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The circuit files a Prover loads, with their SHA-256. They are zerokit's
// depth-20 RLN circuit, the one nwaku v0.38.1 uses through zerokit v0.9.0:
// rln_final.zkey from zerokit v0.8.0 rln/resources/tree_height_20/ (the
// proving key in snarkjs' zkey format) and graph.bin from zerokit v0.9.0
// rln/resources/tree_depth_20/ (the witness graph). Operators download
// them from those paths of the zerokit repository (tags v0.8.0 and v0.9.0)
// into the circuit directory. A relay that only verifies needs neither:
// the verifying key is compiled in.
const (
	ZkeyFile   = "rln_final.zkey"
	ZkeySHA256 = "ae30d3d4b29d9dab8c65ff181644a3eb57c2c0fa9f687ea3baf8c7f711d7946a"
	GraphFile  = "graph.bin"
	// GraphSHA256 is graph.bin's digest.
	GraphSHA256 = "2e16a7cc2cc4140fbd03179a2d361dfc18ec818217c931e73b45a4be3de45ada"
)

// CircuitDirEnv names the environment variable that overrides the default
// circuit directory (DefaultCircuitDir).
const CircuitDirEnv = "COURIER_RLN_CIRCUIT_DIR"

// ErrCircuitFiles is wrapped by the errors about circuit files: missing,
// unreadable, or with another SHA-256 than the one above.
var ErrCircuitFiles = errors.New("rln: circuit files")

// DefaultCircuitDir returns where a Prover looks for the circuit files when
// its configuration names no directory: $COURIER_RLN_CIRCUIT_DIR if set,
// else $XDG_DATA_HOME/courier/rln, else ~/.local/share/courier/rln.
func DefaultCircuitDir() string {
	if d := os.Getenv(CircuitDirEnv); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "courier", "rln")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".local", "share", "courier", "rln")
	}
	return filepath.Join(home, ".local", "share", "courier", "rln")
}

// readCircuitFile reads dir/name and checks its SHA-256 against want (hex).
// The result is newly allocated.
func readCircuitFile(dir, name, want string) ([]byte, error) {
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (get %s from the zerokit repository, see the rln package docs)", ErrCircuitFiles, err, name)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("%w: %s has sha256 %s, want %s", ErrCircuitFiles, path, got, want)
	}
	return b, nil
}
