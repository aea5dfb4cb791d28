package nodekey

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

func TestKeyKeptInDataDir(t *testing.T) {
	dir := t.TempDir()
	k1, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equals(k2) {
		t.Fatal("second start made a new key")
	}
	if fi, err := os.Stat(filepath.Join(dir, "nodekey")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("nodekey file: %v %v", fi, err)
	}
	raw, _ := k1.Raw()
	k3, err := Parse("0x"+strings.ToUpper(hex.EncodeToString(raw)), "--nodekey")
	if err != nil || !k3.Equals(k1) {
		t.Fatalf("hex key: %v", err)
	}
	const order = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141" // secp256k1 n
	for _, bad := range []string{"zz", "abcd", strings.Repeat("0", 64), order, order[:62] + "42"} {
		var invalid *InvalidError
		if _, err := Parse(bad, "--nodekey"); !errors.As(err, &invalid) {
			t.Errorf("Parse(%q): %v, want an InvalidError", bad, err)
		}
	}
	if _, ok := k1.(*crypto.Secp256k1PrivateKey); !ok {
		t.Fatalf("key type %T, want secp256k1", k1)
	}
}
