//go:build unix

package dirlock

import (
	"errors"
	"testing"
)

func TestLock(t *testing.T) {
	dir := t.TempDir()
	f, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	f.Close()
	g, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	g.Close()
}
