//go:build !linux

package archive

import "time"

// threadCPU is not measured outside Linux.
func threadCPU() time.Duration { return 0 }
