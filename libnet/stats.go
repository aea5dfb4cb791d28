package libnet

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// DropReason names why a received message did not reach a handler or an
// asker. Every drop is counted under one reason.
type DropReason uint8

const (
	DropBadFrame     DropReason = iota // frame rejected by the parsers
	DropBadSignature                   // signature did not verify
	DropUnsigned                       // unsigned where a signature is required (legacy with HashKey set, any with RequireSigned)
	DropDuplicate                      // dedup: payload seen before on a Dedup route
	DropLateReply                      // resp with no pending ask (timed out or unknown)
	DropNoHandler                      // no handler for the route
	DropFrameTimeout                   // frame not received whole within Config.FrameTimeout
	dropReasons
)

var dropNames = [dropReasons]string{"bad_frame", "bad_signature", "unsigned", "duplicate", "late_reply", "no_handler", "frame_timeout"}

func (r DropReason) String() string {
	if r >= dropReasons {
		return "unknown"
	}
	return dropNames[r]
}

// Direction counts traffic one way.
type Direction struct {
	Msgs   uint64    // messages (frames)
	Bytes  uint64    // bytes on the wire, outer length included
	ByLane [3]uint64 // messages per Lane (index LaneLegacy, LaneRaw, LaneJSON)
}

// Latency summarises a latency histogram.
type Latency struct {
	Count    int64
	P50, P99 time.Duration
	Max      time.Duration
}

// Stats is a snapshot of an endpoint's counters and gauges.
type Stats struct {
	OutstandingSends    int64 // messages queued or being written
	OutstandingReceives int64 // handlers running
	PendingAsks         int64 // asks waiting for a reply
	ArmedTimers         int64 // ask deadlines armed and not yet stopped
	Peers               int64 // pooled outbound connections
	InboundConns        int64 // accepted connections open
	// ReadBuffers is the bytes of read buffers connections hold: 16 KiB per
	// connection, and while a frame that does not fit those is received, at
	// most the bytes of it that have arrived plus 128 KiB more.
	ReadBuffers int64

	Sent, Received Direction
	Drops          [dropReasons]uint64 // indexed by DropReason
	SendErrors     uint64              // messages whose write failed
	RefusedConns   uint64              // accepted connections closed over Config.MaxInboundConns
	IdleClosed     uint64              // accepted connections closed with no frame for 2 x Config.IdleTimeout
	AcceptErrors   uint64              // failed accepts on the listener, each retried (*AcceptError)

	// Base64Ops and JSONOps count base64 passes and JSON encode/parse
	// passes over message data; the raw lane does none.
	Base64Ops, JSONOps uint64

	AskLatency   Latency // Ask call to reply, asks that got one
	WriteLatency Latency // enqueue to write done, per message
}

type direction struct {
	msgs, bytes atomic.Uint64
	byLane      [3]atomic.Uint64
}

func (d *direction) add(l Lane, n int) {
	d.msgs.Add(1)
	d.bytes.Add(uint64(n))
	d.byLane[l].Add(1)
}

func (d *direction) snapshot() Direction {
	out := Direction{Msgs: d.msgs.Load(), Bytes: d.bytes.Load()}
	for i := range d.byLane {
		out.ByLane[i] = d.byLane[i].Load()
	}
	return out
}

// histogram is a mutex-guarded HDR histogram of microseconds.
type histogram struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newHistogram() *histogram {
	return &histogram{h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

func (h *histogram) record(d time.Duration) {
	us := max(int64(d/time.Microsecond), 1)
	h.mu.Lock()
	_ = h.h.RecordValue(min(us, h.h.HighestTrackableValue()))
	h.mu.Unlock()
}

func (h *histogram) summary() Latency {
	h.mu.Lock()
	defer h.mu.Unlock()
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return Latency{Count: h.h.TotalCount(), P50: us(h.h.ValueAtQuantile(50)),
		P99: us(h.h.ValueAtQuantile(99)), Max: us(h.h.Max())}
}

// RingSize is the number of samples a Ring keeps (lib-net stats.rs
// RING_BUFFER_SIZE).
const RingSize = 100

// Ring keeps the last RingSize samples and the long-term extremes, as
// lib-net's stats ring buffer does (ring_buffer.rs). It is safe for
// concurrent use; the zero value is empty and ready.
type Ring struct {
	mu       sync.Mutex
	buf      [RingSize]int64
	n, next  int
	ltMax    int64
	ltMin    int64
	anything bool
}

// Put records v.
func (r *Ring) Put(v int64) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next = (r.next + 1) % RingSize
	r.n = min(r.n+1, RingSize)
	if !r.anything || v > r.ltMax {
		r.ltMax = v
	}
	if !r.anything || v < r.ltMin {
		r.ltMin = v
	}
	r.anything = true
	r.mu.Unlock()
}

// Summary returns lib-net's summary of the ring: extremes over all time,
// min, max and total of the samples kept, their count and average (total /
// count, 0 when empty). All zero before the first sample.
func (r *Ring) Summary() RingSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := RingSummary{LongTermMax: r.ltMax, LongTermMin: r.ltMin, Count: r.n}
	for i, v := range r.buf[:r.n] {
		if i == 0 || v < s.Min {
			s.Min = v
		}
		if i == 0 || v > s.Max {
			s.Max = v
		}
		s.Total += v
	}
	if r.n > 0 {
		s.Average = float64(s.Total) / float64(r.n)
	}
	return s
}

// RingSummary is one entry of lib-net's stats() object; the JSON names are
// lib-net's (lib.rs to_stats_object).
type RingSummary struct {
	LongTermMax int64   `json:"long_term_max"`
	LongTermMin int64   `json:"long_term_min"`
	Min         int64   `json:"min"`
	Max         int64   `json:"max"`
	Total       int64   `json:"total"`
	Count       int     `json:"count"`
	Average     float64 `json:"average"`
}

// NetStats is lib-net's stats() shape (stats.rs): OutstandingSends is
// sampled each time a send completes (the count still outstanding after
// it), OutstandingReceives each time a received message's handler returns
// (handlers still running), ReceiveElapsed is the delay in milliseconds
// from a frame's parse to its handler's start.
type NetStats struct {
	OutstandingSends    RingSummary `json:"outstanding_sends"`
	OutstandingReceives RingSummary `json:"outstanding_receives"`
	ReceiveElapsed      RingSummary `json:"receive_elapsed"`
}

type counters struct {
	sendRing, recvRing, elapsedRing                              Ring
	outSends, outRecvs, armedTimers, peers, inbound, readBuffers atomic.Int64
	sent, recv                                                   direction
	drops                                                        [dropReasons]atomic.Uint64
	sendErrors, base64Ops, jsonOps, refusedConns, idleClosed     atomic.Uint64
	acceptErrors                                                 atomic.Uint64
	askLat, writeLat                                             *histogram
}

func (c *counters) sampleSends() { c.sendRing.Put(c.outSends.Load()) }

func newCounters() *counters {
	return &counters{askLat: newHistogram(), writeLat: newHistogram()}
}
