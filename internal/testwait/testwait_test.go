package testwait

import (
	"testing"
	"testing/synctest"
)

// fakeTB records a failure instead of ending the goroutine's test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func catch(f *fakeTB, fn func()) {
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
	}()
	fn()
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, ch, "seven"); got != 7 {
		t.Fatalf("Recv = %d, want 7", got)
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTB{TB: t}
		catch(f, func() { Recv(f, make(chan int), "nothing") }) // the fake clock runs out
		if f.failed == "" {
			t.Fatal("Recv on a silent channel did not fail")
		}
	})
	closed := make(chan struct{})
	close(closed)
	Recv(t, closed, "a close") // a close is a signal: it returns at once
}

func TestUntil(t *testing.T) {
	n := 0
	Until(t, "third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTB{TB: t}
		catch(f, func() { Until(f, "never", func() bool { return false }) })
		if f.failed == "" {
			t.Fatal("Until on a false condition did not fail")
		}
	})
}
