//go:build unix

package rln

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op (and cpu-ns/unit when perOp > 1) to b: the
// CPU time the process spent per iteration since start, which a machine
// shared with other work inflates less than the wall time of ns/op.
func reportCPU(b *testing.B, start time.Duration, perOp int, unit string) {
	cpu := float64(cpuTime()-start) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	if perOp > 1 {
		b.ReportMetric(cpu/float64(perOp), "cpu-ns/"+unit)
	}
}
