package bench

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// sha256Speed returns this machine's SHA-256 speed in MB/s (10^6 bytes)
// over 65,000-byte buffers, measured for about 200 ms.
func sha256Speed() float64 {
	buf := make([]byte, 65_000)
	start := time.Now()
	n := 0
	for time.Since(start) < 200*time.Millisecond {
		sha256.Sum256(buf)
		n++
	}
	return float64(n) * float64(len(buf)) / 1e6 / time.Since(start).Seconds()
}

// appendBound returns the msg/s at which the workload's measured payload
// sizes (at most 3000 messages) are appended to a file in dir with an fsync
// every 64 messages: the ceiling the disk sets on any archive that writes
// each payload once (docs/benchmark.md).
func appendBound(w *Workload, dir string) (float64, error) {
	f, err := os.CreateTemp(dir, "append-bound-*")
	if err != nil {
		return 0, fmt.Errorf("bench: append bound: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n := min(w.N, 3000)
	buf := make([]byte, 150_000)
	start := time.Now()
	for i := range n {
		size := w.Size(w.Warmup + i)
		w.FillPayload(buf[:size], w.Warmup+i)
		if _, err := f.Write(buf[:size]); err != nil {
			return 0, fmt.Errorf("bench: append bound: %w", err)
		}
		if (i+1)%64 == 0 || i == n-1 {
			if err := f.Sync(); err != nil {
				return 0, fmt.Errorf("bench: append bound: %w", err)
			}
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func tempDir(parent, name string) (string, error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", err
		}
	}
	d, err := os.MkdirTemp(parent, "courier-bench-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("bench: temp dir: %w", err)
	}
	return filepath.Clean(d), nil
}
