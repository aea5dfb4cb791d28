// Package testwait gives tests bounded waits: when what a test waits for
// never happens, the test fails with a message saying what it waited for,
// instead of hanging until go test's own timeout kills the whole binary.
// The bound is generous (machines running tests are slow and shared); it
// only keeps a failure from hanging and is never a timing assertion.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds every wait of this package.
const Timeout = 30 * time.Second

// Recv is <-ch bounded: it returns the next value received from ch (the
// zero value once ch is closed, a close being a signal too), or fails tb
// if none arrives within Timeout; what names the value.
func Recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	t := time.NewTimer(Timeout)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("waiting for %s: nothing within %v", what, Timeout)
	}
	panic("unreachable")
}

// Until calls cond every 10 ms until it returns true. It fails tb if cond
// does not hold within Timeout; what names the condition.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waiting for %s: not within %v", what, Timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
