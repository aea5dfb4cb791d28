package membership

import (
	"bytes"
	"testing"
)

func root(i int) [32]byte {
	var r [32]byte
	r[0], r[1], r[31] = byte(i), byte(i>>8), 0x5a
	return r
}

// TestWindowKeepsNwakuRoots: the window holds the current root and the
// AcceptableRootWindowSize before it (51, as nwaku's updateRoots), oldest
// dropped first, and a repeated newest root is not added again.
func TestWindowKeepsNwakuRoots(t *testing.T) {
	var w *Window
	if w.Contains(make([]byte, 32)) || w.Len() != 0 {
		t.Fatal("nil window holds roots")
	}
	for i := range 60 {
		var changed bool
		if w, changed = w.with(root(i)); !changed {
			t.Fatalf("root %d not added", i)
		}
		if _, changed = w.with(root(i)); changed {
			t.Fatalf("root %d added twice", i)
		}
	}
	if w.Len() != 51 {
		t.Fatalf("Len = %d, want 51", w.Len())
	}
	for i := range 60 {
		r := root(i)
		if got, want := w.Contains(r[:]), i >= 60-51; got != want {
			t.Errorf("Contains(root %d) = %v, want %v", i, got, want)
		}
	}
	roots := w.Roots()
	if len(roots) != 51 || roots[0] != root(9) || roots[50] != root(59) {
		t.Fatalf("Roots = %d roots from %x to %x", len(roots), roots[0][:2], roots[len(roots)-1][:2])
	}
	if latest, ok := w.Latest(); !ok || latest != root(59) {
		t.Fatalf("Latest = %x, %v", latest[:2], ok)
	}
	roots[50] = [32]byte{}
	if l, _ := w.Latest(); l != root(59) {
		t.Fatal("Roots did not copy")
	}
}

// TestWindowIsImmutable: a new root makes a new Window; the old snapshot
// keeps what it had.
func TestWindowIsImmutable(t *testing.T) {
	var w *Window
	for i := range windowCap {
		w, _ = w.with(root(i))
	}
	old := w
	first := root(0)
	w, _ = w.with(root(1000))
	if !old.Contains(first[:]) || old.Len() != windowCap {
		t.Fatal("old snapshot changed")
	}
	if w.Contains(first[:]) {
		t.Fatal("new window kept the oldest root")
	}
}

func TestWindowContainsOnlyExact32Bytes(t *testing.T) {
	w, _ := (*Window)(nil).with(root(7))
	r := root(7)
	for _, b := range [][]byte{nil, r[:31], append(r[:], 0), bytes.Repeat([]byte{0}, 32)} {
		if w.Contains(b) {
			t.Errorf("Contains(%x) = true", b)
		}
	}
	if !w.Contains(r[:]) {
		t.Fatal("exact root not contained")
	}
}

// TestAcceptableRootAllocatesNothing: the validator's root check is an
// atomic load and a scan.
func TestAcceptableRootAllocatesNothing(t *testing.T) {
	m := &Manager{}
	var w *Window
	for i := range windowCap {
		w, _ = w.with(root(i))
	}
	m.window.Store(w)
	hit, miss := root(3), root(999)
	allocs := testing.AllocsPerRun(1000, func() {
		if !m.AcceptableRoot(hit[:]) || m.AcceptableRoot(miss[:]) {
			t.Fatal("wrong answer")
		}
	})
	if allocs != 0 {
		t.Fatalf("AcceptableRoot allocates %v times", allocs)
	}
}

func BenchmarkAcceptableRoot(b *testing.B) {
	m := &Manager{}
	var w *Window
	for i := range windowCap {
		w, _ = w.with(root(i))
	}
	m.window.Store(w)
	oldest, miss := root(0), root(999)
	b.Run("oldest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.AcceptableRoot(oldest[:])
		}
	})
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.AcceptableRoot(miss[:])
		}
	})
}
