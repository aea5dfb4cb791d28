package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// columns are the CSV columns of every row, in order (docs/benchmark.md,
// "CSV columns").
var columns = []string{
	"scenario", "msgs", "payload_profile", "wall_ms", "msg_per_s", "ns_per_msg_p50", "ns_per_msg_p99",
	"decodes_per_msg", "hashes_per_msg", "hashed_MB", "decoded_MB", "occupied_mem_delta_MB", "gc_collections",
	"peak_heap_MB", "peak_heap_alloc_MB", "alloc_bytes_per_msg", "allocs_per_msg", "payload_copies_per_msg",
	"encodes_per_msg", "msgid_hashes_per_msg", "recv_decodes_per_msg", "recv_hashes_per_msg",
	"interarrival_p50_ns", "interarrival_p99_ns", "wire_bytes_per_msg", "base64_ops_per_msg", "json_ops_per_msg",
	"filter_peers", "inflight", "rate_msg_per_s", "archive_ack_p50_ns", "archive_ack_p99_ns", "cpu_ns_per_msg",
	"minor_faults_per_msg",
}

// Row is one result line. A cell that does not apply holds NaN (floats) and
// is written empty. Sizes are in MB of 10^6 bytes, times in nanoseconds
// unless the name says otherwise.
type Row struct {
	Scenario       string
	Msgs           int
	PayloadProfile string
	WallMs         float64
	MsgPerS        float64
	P50Ns, P99Ns   float64

	DecodesPerMsg, HashesPerMsg    float64
	HashedMB, DecodedMB            float64
	OccupiedMemDeltaMB             float64
	GCCollections                  float64
	PeakHeapMB, PeakHeapAllocMB    float64
	AllocBytesPerMsg, AllocsPerMsg float64
	PayloadCopiesPerMsg            float64

	EncodesPerMsg, MsgIDHashesPerMsg     float64
	RecvDecodesPerMsg, RecvHashesPerMsg  float64
	InterarrivalP50Ns, InterarrivalP99Ns float64
	WireBytesPerMsg                      float64
	Base64OpsPerMsg, JSONOpsPerMsg       float64
	// FilterPeers is the number of filter subscribers pushed to.
	FilterPeers float64
	// Inflight is the most messages in flight and RatePerS the publisher's
	// pace in msg/s (NaN: as fast as the window allows).
	Inflight, RatePerS float64
	// AckP50Ns and AckP99Ns are the archive's acknowledgement latency of
	// the measured messages: from the dispatcher's Append to the commit of
	// the batch that holds the message (archive.Config.OnInsert).
	AckP50Ns, AckP99Ns float64

	// CPUNsPerMsg is the process's user+system CPU time per measured
	// message (cpu_ns_per_msg); the notes under the table print it too,
	// because on a shared machine it is steadier than wall time.
	CPUNsPerMsg float64
	// MinorFaultsPerMsg is the process's minor page faults per measured
	// message (minor_faults_per_msg, getrusage's ru_minflt): pages of 4 KiB
	// the run touched for the first time, each zeroed by the kernel, at a
	// cost that CPUNsPerMsg includes and that grows on a virtual machine
	// whose host has reclaimed the guest's idle memory.
	MinorFaultsPerMsg float64
	// ArchiveCPUNsPerMsg is the archive writer's CPU time per measured
	// message (archive.Stats.WriterCPU; micro on Linux, else NaN), printed
	// in the notes like CPUNsPerMsg.
	ArchiveCPUNsPerMsg float64
	// Budget splits CPUNsPerMsg into stages (Config.Budget); nil without.
	Budget *Budget

	// Trace holds the run's series for plots (WritePlots); nil for the
	// scenarios that do not record them (libnet, store).
	Trace *Trace
}

// Trace is what a scenario recorded over time, for plots.
type Trace struct {
	// Heap is the live heap every 50 completed messages, warm-up included.
	Heap []HeapSample
	// Latency is the cumulative distribution of the measured messages'
	// latency: Latency[k].Quantile (0..1) of them took at most
	// Latency[k].Ns nanoseconds.
	Latency []LatencyPoint
	// CacheBoundBytes is how much the gossipsub message caches of the
	// scenario's nodes hold by protocol at the row's rate (see
	// CacheBound); NaN where no gossipsub router carries the messages.
	CacheBoundBytes float64
}

// LatencyPoint is one point of a latency distribution.
type LatencyPoint struct {
	Ns       int64
	Quantile float64
}

// NewRow returns a Row whose numeric cells are all "not applicable".
func NewRow(scenario, profile string, msgs int) Row {
	na := math.NaN()
	return Row{
		Scenario: scenario, Msgs: msgs, PayloadProfile: profile,
		WallMs: na, MsgPerS: na, P50Ns: na, P99Ns: na,
		DecodesPerMsg: na, HashesPerMsg: na, HashedMB: na, DecodedMB: na,
		OccupiedMemDeltaMB: na, GCCollections: na, PeakHeapMB: na, PeakHeapAllocMB: na,
		AllocBytesPerMsg: na, AllocsPerMsg: na, PayloadCopiesPerMsg: na,
		EncodesPerMsg: na, MsgIDHashesPerMsg: na, RecvDecodesPerMsg: na, RecvHashesPerMsg: na,
		InterarrivalP50Ns: na, InterarrivalP99Ns: na, WireBytesPerMsg: na,
		Base64OpsPerMsg: na, JSONOpsPerMsg: na, CPUNsPerMsg: na, MinorFaultsPerMsg: na, ArchiveCPUNsPerMsg: na, FilterPeers: na,
		Inflight: na, RatePerS: na, AckP50Ns: na, AckP99Ns: na,
	}
}

func (r Row) cells() []string {
	f := func(v float64, prec int) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	return []string{
		r.Scenario, strconv.Itoa(r.Msgs), r.PayloadProfile, f(r.WallMs, 3), f(r.MsgPerS, 1),
		f(r.P50Ns, 0), f(r.P99Ns, 0), f(r.DecodesPerMsg, 3), f(r.HashesPerMsg, 3),
		f(r.HashedMB, 2), f(r.DecodedMB, 2), f(r.OccupiedMemDeltaMB, 2), f(r.GCCollections, 0),
		f(r.PeakHeapMB, 1), f(r.PeakHeapAllocMB, 1), f(r.AllocBytesPerMsg, 0), f(r.AllocsPerMsg, 1),
		f(r.PayloadCopiesPerMsg, 3), f(r.EncodesPerMsg, 3), f(r.MsgIDHashesPerMsg, 3),
		f(r.RecvDecodesPerMsg, 3), f(r.RecvHashesPerMsg, 3), f(r.InterarrivalP50Ns, 0),
		f(r.InterarrivalP99Ns, 0), f(r.WireBytesPerMsg, 1), f(r.Base64OpsPerMsg, 3), f(r.JSONOpsPerMsg, 3),
		f(r.FilterPeers, 0), f(r.Inflight, 0), f(r.RatePerS, 1), f(r.AckP50Ns, 0), f(r.AckP99Ns, 0), f(r.CPUNsPerMsg, 0),
		f(r.MinorFaultsPerMsg, 2),
	}
}

// WriteCSV writes the header and rows in the column order of columns.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(columns); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(r.cells()); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// tableColumns are the columns a person reads first, by index into columns.
var tableColumns = []int{0, 1, 28, 4, 5, 6, 30, 31, 7, 8, 18, 19, 20, 21, 13, 15, 17, 24, 25, 26, 27}

// WriteTable writes rows as an aligned text table of the main columns.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, c := range tableColumns {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, columns[c])
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range rows {
		cells := r.cells()
		for i, c := range tableColumns {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			v := cells[c]
			if v == "" {
				v = "-"
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}
