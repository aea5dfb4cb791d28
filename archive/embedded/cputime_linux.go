package embedded

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time of the calling OS thread, user and
// system, from clock_gettime(2) CLOCK_THREAD_CPUTIME_ID: the scheduler's
// exact runtime of the thread. getrusage(2) RUSAGE_THREAD is not fit for
// the differences the writer takes: it splits that runtime by tick samples
// and keeps each value from going back, so a short interval may be given
// CPU time the thread spent before it, or lose some to the next one. 0 if
// the call fails.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
