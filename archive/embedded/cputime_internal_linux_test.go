package embedded

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"
)

// TestThreadCPUIntervals: the thread CPU time of short intervals on one
// thread adds up to the work done in them. Half of 400 rounds of equal work
// is timed, as the writer times its batches and not its waits; the timed
// half must come to half of the thread's CPU time over all the rounds.
func TestThreadCPUIntervals(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 64<<10)
	work := func() {
		for range 4 {
			s := sha256.Sum256(buf)
			buf[0] = s[0]
		}
	}
	var timed time.Duration
	start := threadCPU()
	for range 400 {
		c := threadCPU()
		work()
		timed += threadCPU() - c
		work()
	}
	total := threadCPU() - start
	if total <= 0 {
		t.Fatalf("thread CPU over the rounds %v", total)
	}
	if share := float64(timed) / float64(total); share < 0.4 || share > 0.6 {
		t.Errorf("timed rounds %v of %v in all: share %.2f, want about 0.5", timed, total, share)
	}
}
