// Package nodekey reads, writes and parses the node key: a secp256k1
// private key, as nwaku takes it (--nodekey, 64 hex digits), kept in
// DataDir/nodekey between starts.
package nodekey

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/libp2p/go-libp2p/core/crypto"
)

// InvalidError is a node key that is not a secp256k1 private key: Source
// says where it came from (the flag or the file), Reason what is wrong.
type InvalidError struct{ Source, Reason string }

func (e *InvalidError) Error() string { return "node key from " + e.Source + ": " + e.Reason }

// Parse parses a secp256k1 private key given as 64 hex digits (an
// optional 0x prefix); the scalar must be in 1..n-1, n the curve order.
// An error is an *InvalidError from source.
func Parse(hexKey, source string) (crypto.PrivKey, error) {
	raw, err := hex.DecodeString(strings.TrimPrefix(hexKey, "0x"))
	if err != nil || len(raw) != 32 {
		return nil, &InvalidError{source, "want 32 bytes as 64 hex digits (secp256k1)"}
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(raw); overflow || s.IsZero() {
		return nil, &InvalidError{source, "not a secp256k1 private key: zero or not below the curve order"}
	}
	return crypto.UnmarshalSecp256k1PrivateKey(raw)
}

// Load reads the key kept in dataDir/nodekey, or else creates it there
// (mode 0600), or else, with dataDir "", generates an ephemeral key. A
// file that does not hold a key is an *InvalidError naming it.
func Load(dataDir string) (crypto.PrivKey, error) {
	if dataDir == "" {
		k, _, err := crypto.GenerateSecp256k1Key(nil)
		return k, err
	}
	path := filepath.Join(dataDir, "nodekey")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		return Parse(strings.TrimSpace(string(b)), path)
	case errors.Is(err, os.ErrNotExist):
		return create(path)
	}
	return nil, fmt.Errorf("node: read node key: %w", err)
}

func create(path string) (crypto.PrivKey, error) {
	k, _, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		return nil, err
	}
	raw, err := k.Raw()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("node: create data dir: %w", err)
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(raw)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("node: write node key: %w", err)
	}
	return k, nil
}
