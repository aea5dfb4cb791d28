package embedded

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the user+system CPU time of the calling OS thread
// (getrusage(2), RUSAGE_THREAD); 0 if the call fails.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
