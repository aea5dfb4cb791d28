package lifecycle

import (
	"errors"
	"testing"
	"testing/synctest"
)

// TestCloseOnce: the first Close runs every stop step in order, whatever
// they return, and returns their errors joined; a second Close returns nil
// and runs nothing.
func TestCloseOnce(t *testing.T) {
	g := New()
	e1, e2 := errors.New("one"), errors.New("two")
	var ran []int
	err := g.Close(
		func() error { ran = append(ran, 1); return e1 },
		func() error { ran = append(ran, 2); return nil },
		func() error { ran = append(ran, 3); return e2 },
	)
	if !errors.Is(err, e1) || !errors.Is(err, e2) || len(ran) != 3 || ran[0] != 1 || ran[2] != 3 {
		t.Fatalf("first Close: %v, ran %v", err, ran)
	}
	if err := g.Close(func() error { ran = append(ran, 4); return e1 }); err != nil || len(ran) != 3 {
		t.Fatalf("second Close: %v, ran %v", err, ran)
	}
	if err := New().Close(); err != nil {
		t.Fatalf("Close without stop steps: %v", err)
	}
}

// TestRefusedAfterClose: once Close has begun nothing new is counted.
func TestRefusedAfterClose(t *testing.T) {
	g := New()
	if g.Closed() || !g.Enter() {
		t.Fatal("an open group refused Enter")
	}
	g.Leave()
	g.Close()
	if !g.Closed() || g.Enter() {
		t.Fatal("Enter counted after Close")
	}
	if g.Go(func() { t.Error("f ran after Close") }) {
		t.Fatal("Go started after Close")
	}
	if g.Context().Err() == nil {
		t.Fatal("context not cancelled by Close")
	}
}

// TestCloseWaits: Close cancels the context after its stop steps and
// returns only when every counted goroutine has left; a Close made
// meanwhile returns nil at once.
func TestCloseWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New()
		release := make(chan struct{})
		left := false
		if !g.Go(func() {
			<-g.Context().Done()
			<-release
			left = true
		}) {
			t.Fatal("Go refused on an open group")
		}
		done := make(chan error)
		go func() {
			done <- g.Close(func() error {
				if g.Context().Err() != nil {
					t.Error("context cancelled before the stop steps")
				}
				return nil
			})
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Close returned while a goroutine was running")
		default:
		}
		if err := g.Close(); err != nil {
			t.Fatalf("Close during Close: %v", err)
		}
		close(release)
		if err := <-done; err != nil || !left {
			t.Fatalf("Close: %v, goroutine left %v", err, left)
		}
	})
}
