package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// memSample reads the runtime metrics the harness reports.
type memSample struct {
	allocBytes, allocObjects uint64 // cumulative
	live, heapObjects        uint64 // bytes
	gcCycles                 uint64
}

var memMetrics = []string{
	"/gc/heap/allocs:bytes", "/gc/heap/allocs:objects", "/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes", "/gc/cycles/total:gc-cycles",
}

func readMem() memSample {
	s := make([]metrics.Sample, len(memMetrics))
	for i, name := range memMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return memSample{s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64(), s[3].Value.Uint64(), s[4].Value.Uint64()}
}

// liveAfterGC forces a collection and returns the live heap in bytes.
func liveAfterGC() uint64 {
	runtime.GC()
	return readMem().live
}

// tracker follows every message of a run to done: each message needs a
// number of events (archive commit, handler runs); the last one frees its
// slot in the in-flight window and records its latency.
type tracker struct {
	need    int32
	events  []atomic.Int32
	start   []atomic.Int64 // unix ns when the message entered the path
	window  chan struct{}
	done    atomic.Int64
	total   int64
	allDone chan struct{}

	mu         sync.Mutex
	measuring  bool
	warmup     int
	latency    *hdrhistogram.Histogram
	inter      *hdrhistogram.Histogram
	lastArrive int64
	peakLive   uint64
	peakHeap   uint64
	doneAll    int
	begun      time.Time    // the first acquire
	heap       []HeapSample // every 50 done messages, warm-up included
}

// HeapSample is the live heap (/gc/heap/live: bytes marked live by the
// last GC) at a moment of a run.
type HeapSample struct {
	// Seconds since the run's first message entered the path.
	Seconds float64
	// LiveBytes is the live heap in bytes.
	LiveBytes uint64
	// Measured is false in the warm-up.
	Measured bool
}

func newTracker(total, warmup, need, window int) *tracker {
	return &tracker{
		need: int32(need), events: make([]atomic.Int32, total), start: make([]atomic.Int64, total),
		window: make(chan struct{}, window), total: int64(total), allDone: make(chan struct{}),
		warmup: warmup, latency: newHist(), inter: newHist(),
	}
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(60*time.Second), 3) }

// acquire waits for a window slot, or for ctx to end, and stamps message
// i's start.
func (t *tracker) acquire(ctx context.Context, i int) error {
	select {
	case t.window <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	now := time.Now()
	if i == 0 {
		t.mu.Lock()
		t.begun = now
		t.mu.Unlock()
	}
	t.start[i].Store(now.UnixNano())
	return nil
}

// event records one event of message i; the message is done at the last.
func (t *tracker) event(i int) {
	if i < 0 || i >= len(t.events) {
		return
	}
	if t.events[i].Add(1) != t.need {
		return
	}
	now := time.Now().UnixNano()
	t.mu.Lock()
	if t.measuring && i >= t.warmup {
		t.latency.RecordValue(now - t.start[i].Load())
	}
	if t.doneAll++; t.doneAll%50 == 0 {
		t.sampleLocked()
	}
	t.mu.Unlock()
	<-t.window
	if t.done.Add(1) == t.total {
		close(t.allDone)
	}
}

// arrival records the receiver's inter-arrival time of measured messages.
func (t *tracker) arrival(i int) {
	if i < t.warmup {
		return
	}
	now := time.Now().UnixNano()
	t.mu.Lock()
	if t.lastArrive != 0 {
		t.inter.RecordValue(now - t.lastArrive)
	}
	t.lastArrive = now
	t.mu.Unlock()
}

// sampleLocked records the live heap; in the measured part it also
// updates the peaks.
func (t *tracker) sampleLocked() {
	m := readMem()
	if !t.begun.IsZero() {
		t.heap = append(t.heap, HeapSample{Seconds: time.Since(t.begun).Seconds(), LiveBytes: m.live, Measured: t.measuring})
	}
	if t.measuring {
		t.peakLive = max(t.peakLive, m.live)
		t.peakHeap = max(t.peakHeap, m.heapObjects)
	}
}

// startMeasuring makes the tracker sample heap peaks from now on.
func (t *tracker) startMeasuring() {
	t.mu.Lock()
	t.measuring = true
	t.sampleLocked()
	t.mu.Unlock()
}

// wait blocks until upto messages are done. It fails when ctx ends or when
// no message completes for stallTimeout, naming what the run lost.
func (t *tracker) wait(ctx context.Context, upto int, losses func() string) error {
	last, lastChange := t.done.Load(), time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		d := t.done.Load()
		if d >= int64(upto) {
			return nil
		}
		if d != last {
			last, lastChange = d, time.Now()
		} else if time.Since(lastChange) > stallTimeout {
			return fmt.Errorf("bench: stalled at %d of %d messages done for %v (%s)", d, upto, stallTimeout, losses())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

const stallTimeout = 30 * time.Second
