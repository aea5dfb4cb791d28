package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/couriernet/courier/cmd/courier/internal/bench"
)

const benchHelp = `usage: courier bench [flags]

Runs courier's message-path benchmark (docs/benchmark.md in the source)
and prints a table (stdout), progress (stderr) and optionally CSV.

Scenarios (--scenario, a comma list; a -runN suffix is allowed):
  micro       one node in process, no relay network: fresh wire buffers go
              to the relay's topic validator and dispatch; done when the
              archive commit is acknowledged, the application handlers have
              run and every filter subscriber (--filter-peers libp2p hosts
              on 127.0.0.1, reading into buffers they reuse) has its push
  macro       two nodes on 127.0.0.1 over libp2p TCP (Noise, Yamux,
              gossipsub); A publishes through its Go API, writing each
              payload once into the encoding (Node.PublishWith), B relays,
              archives and runs the handlers; done as in micro, on B
  macro-copy  macro through the copying API: each payload made in a buffer
              of its own, then Node.Publish (copied into the encoding)
  macro-bare  the same two nodes with gossipsub alone (no Waku validator,
              no decode, no consumers): the ceiling the libp2p stack sets
  macro-rest  macro with A publishing through its REST API
              (POST /relay/v1/messages, --inflight requests in flight)
  macro-lightpush  macro with a light client (a libp2p host in the process)
              pushing to A with lightpush v3, --inflight requests in flight; prints
              A's decodes, hashes and encodes per message
  macro-rln   macro with RLN relay on B: A (Node.Publish) sends messages
              whose proofs it made before the timed phase (at most 20
              warm-up and 200 measured messages, one member whose limit
              covers them all in one epoch); B verifies each once. Also
              runs macro-rln-base, the same messages without proofs to B
              without RLN, and prints macro-rln's msg/s and CPU per message
              as ratios of it, B's verifications per message and A's
              proofs per second. Needs zerokit's RLN circuit files
              ($COURIER_RLN_CIRCUIT_DIR; see docs/rln.md)
  micro-stalled  micro with one more filter subscriber that never reads its
              push stream: the other subscribers' rate and the live heap
              beside micro's
  libnet      two lib-net endpoints on 127.0.0.1: raw lane against legacy
              lane, tell and ask, 1/10/100 kB and the seed mix, and a plain
              loopback TCP stream of 100 kB frames (tcp-baseline-100kB)
  store       fills an archive (the embedded one, or Postgres with
              --store-message-db-url) with --store-messages messages of
              --store-profile (1,000 bytes) over 10 content topics, their
              timestamps spread over 48 hours, as fast as its write queue
              takes them (store-insert: msg_per_s; the notes give the rate
              of the first and the last 10 % and the bytes on disk per
              message), then times --store-queries store v3 queries of a
              page of 20 with data: one content topic and a time range at a
              random place through the protocol on 127.0.0.1 (store-query:
              ns_per_msg_p50/_p99 are the latency of one query), and in
              process the same (store-query-topic), 20 hashes
              (store-query-hash) and a cursor at a random message
              (store-query-cursor); last a retention pass of time:86400,
              the older half, while 1,000 msg/s arrive (store-retention:
              msgs deleted, wall_ms its duration, ns_per_msg_p50/_p99 the
              latency of the appends meanwhile)

Steady state (--steady, or a scenario named with a -steady suffix such as
macro-steady): the seed method's 100 warm-up messages end long before
the live heap of two relaying nodes stops growing, because each node's
gossipsub message cache keeps 6 heartbeats (6 s) of messages. --steady
runs every macro scenario a second time, as a row <scenario>-steady
right after it, whose warm-up lasts at least 7 s (the history and one
more heartbeat) and then until two consecutive GC cycles that ended after
the history find live heaps within 5 % of each other (at most a minute);
the same measured messages follow. A line under the table says how long each
warm-up took and the live heap it ended at. Ratios under the table
compare seed-method rows with each other and steady rows with each other.

--muxer yamux|mplex restricts both nodes of macro, macro-copy, macro-rest and
macro-bare to that stream muxer, so the two are measured on the same
workload; the rows are named macro[mplex] and so on. --muxer yamux,mplex
runs each of those scenarios once per muxer, one after the other, so that
both meet the same machine load.

Workload: seed 42, payloads of 10/50/150 kB at 25/50/25 % shuffled by the
seed, each starting with its message index; 1000 measured messages after
100 warm-up messages; at most 32 messages in flight (--inflight N for the
macro scenarios; --rate R paces their publisher). The archive is the
embedded default, with its default durability, in a temporary directory.
At start the harness prints the machine's uptime, load average and free
memory, its SHA-256 speed and its append bound (the payload mix appended
to a file, fsync every 64 messages).

Columns (as in docs/benchmark.md; "per message" divides by the
measured messages; MB are 10^6 bytes; "-" or an empty CSV cell: does not
apply to the scenario):
  msgs, payload_profile, wall_ms     measured messages, mix, wall time
  msg_per_s                          measured messages / wall time
  ns_per_msg_p50, _p99               latency, entering the path to done
                                     (micro: handed to the validator; macro:
                                     A's publish call)
  decodes_per_msg, hashes_per_msg,   WakuMessage decodes, deterministic
  encodes_per_msg                    hashes and encodes in the whole process
  recv_decodes_per_msg,              the same on the receiving node alone
  recv_hashes_per_msg
  msgid_hashes_per_msg               gossipsub message-id SHA-256 passes
  hashed_MB, decoded_MB              bytes fed to the hash and to decode
  occupied_mem_delta_MB              live heap after a forced GC, end - start
  gc_collections                     GC cycles during the measured part
  peak_heap_MB                       largest live heap (/gc/heap/live),
                                     sampled every 50 messages
  peak_heap_alloc_MB                 largest heap including garbage
  alloc_bytes_per_msg, allocs_per_msg  heap bytes and objects allocated
  payload_copies_per_msg             (alloc bytes - what the harness itself
                                     allocates to make its input) / mean
                                     payload: payload copies on the Go heap
  interarrival_p50_ns, _p99_ns       gaps between deliveries at the receiver
  wire_bytes_per_msg                 encoded bytes per message (libnet:
                                     bytes the sender wrote)
  base64_ops_per_msg, json_ops_per_msg  libnet: base64 and JSON operations
  filter_peers                       micro: filter subscribers pushed to
  inflight, rate_msg_per_s           most messages in flight, publisher pace
  archive_ack_p50_ns, _p99_ns        the receiver's archive: Append to the
                                     commit of the message's batch
  cpu_ns_per_msg                     user+system CPU time per message
  minor_faults_per_msg               minor page faults per message: pages
                                     of memory the process touched anew
The table shows the main columns; --csv writes all of them. Under the
table: the CPU time per message of each scenario (user+system, whole
process; steadier than wall time on a shared machine), the cores it
kept busy and its minor page faults; each macro row against the
macro-bare row of the same run and suffix (macro-run2 with
macro-bare-run2): msg/s and CPU ratios, and the latency macro adds at p50
and p99 beside its archive acknowledgement latency. --inflight 256 gives
saturation rows, --rate 353 the seed's rate.

CPU budget (--budget, on by default): each micro and macro row's measured
part is profiled (1000 Hz asked, as many samples as the kernel's tick
gives) and its CPU time per message split into stages: the publisher's
encode, each node's libp2p stack, gossipsub's msg-id hash, the
deterministic hash, the two in one pass (node B's), decode, the relay, the
handlers, the archive's Append,
CRC, SQLite, segment write and fsync, GC, the scheduler, the rest; beside
each macro row, its difference from the macro-bare row of the same run;
under the stages, each row's minor page faults per message and profile
samples. On Linux the bench hides the Go runtime's note on stderr that it
kept the rate; docs/benchmark.md says how samples are put in stages.
--cpuprofile FILE writes the profiles.

--plot DIR writes three PNG charts of the micro and macro scenarios:
  heap.png        live heap (as of the last GC) every 50 completed
                  messages, warm-up included, one line per scenario; the
                  dashed line of the same colour is what the two nodes'
                  gossipsub message caches hold by protocol (6 heartbeats
                  of 1 s of messages at the row's rate, or the whole run)
  latency.png     latency CDF of the measured messages per scenario
  throughput.png  msg/s and CPU µs per message of every row, side by side

Flags:
`

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, benchHelp); fs.PrintDefaults() }
	var cfg bench.Config
	scenarios := fs.String("scenario", "micro,macro,macro-bare", "comma list of scenarios")
	fs.IntVar(&cfg.N, "n", 1000, "measured messages")
	fs.IntVar(&cfg.Warmup, "warmup", 100, "warm-up messages (0 for none)")
	fs.Int64Var(&cfg.Seed, "seed", 42, "workload seed")
	fs.StringVar(&cfg.Profile, "profile", bench.SeedProfile, "payload mix, e.g. 10/50/150kB@25/50/25 or 100kB")
	fs.Float64Var(&cfg.Rate, "rate", 0, "macro scenarios: publisher pace in msg/s (0: as fast as the window allows)")
	fs.IntVar(&cfg.Inflight, "inflight", 32, "macro scenarios: most messages in flight (the seed method's window is 32)")
	fs.IntVar(&cfg.Handlers, "handlers", 1, "application handlers on the receiving node")
	filterPeers := fs.String("filter-peers", "3", "micro: filter subscribers (libp2p hosts in the process), a comma list to run micro once for each; 0 for none")
	fs.StringVar(&cfg.ContentTopic, "content-topic", "/courier/1/bench/proto", "content topic")
	fs.StringVar(&cfg.PubsubTopic, "pubsub-topic", "/waku/2/rs/0/0", "pubsub topic")
	fs.BoolVar(&cfg.Sign, "sign", false, "libnet: sign the raw lane too (the legacy lane always is)")
	muxers := fs.String("muxer", "", "macro, macro-copy, macro-rest, macro-bare: offer only this stream muxer, yamux or mplex; a comma list runs them once per muxer (default: both offered, yamux chosen)")
	fs.BoolVar(&cfg.Steady, "steady", false, "also run each macro scenario with a steady-state warm-up, as a row <scenario>-steady beside it")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for temporary archives (default: the system temp dir)")
	fs.IntVar(&cfg.StoreMessages, "store-messages", 10_000, "store: messages archived before the queries (e.g. 1000000)")
	fs.IntVar(&cfg.StoreQueries, "store-queries", 1000, "store: queries timed")
	fs.StringVar(&cfg.StoreProfile, "store-profile", bench.DefaultStoreProfile, "store: payload mix of the archived messages, as --profile (e.g. "+bench.SeedProfile+")")
	fs.StringVar(&cfg.StoreDBURL, "store-message-db-url", "", "store, macro, macro-rest: postgres://user:password@host:port/db for the Postgres archive (macro: in a schema of the run's, dropped after; default: the embedded archive in --dir)")
	csvPath := fs.String("csv", "", "also write the rows as CSV to this file")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write the CPU profiles of the rows' measured parts, merged, to this file, and each row's beside it (cpu.prof: cpu.macro.prof); implies --budget")
	fs.BoolVar(&cfg.Budget, "budget", true, "print the CPU budget per message of the micro and macro rows (a CPU profile of each measured part at 1000 Hz)")
	plotDir := fs.String("plot", "", "write PNG charts of the run into this directory ("+bench.HeapPlot+", "+bench.LatencyPlot+", "+bench.ThroughputPlot+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case cfg.N < 1:
		return fmt.Errorf("-n %d: need at least one measured message", cfg.N)
	case cfg.Warmup < 0:
		return fmt.Errorf("--warmup %d must not be negative", cfg.Warmup)
	case cfg.Handlers < 1:
		return fmt.Errorf("--handlers %d: need at least one", cfg.Handlers)
	case cfg.Inflight < 1:
		return fmt.Errorf("--inflight %d: need at least one message in flight", cfg.Inflight)
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // bench.Config: zero means the default, negative none
	}
	for _, f := range strings.Split(*filterPeers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("--filter-peers %q: want numbers of subscribers, 0 or more", *filterPeers)
		}
		cfg.FilterPeers = append(cfg.FilterPeers, n)
	}
	var csvFile *os.File
	if *csvPath != "" { // fail now, not after the run
		f, err := os.Create(*csvPath)
		if err != nil {
			return err
		}
		defer f.Close()
		csvFile = f
	}
	cfg.Scenarios = strings.Split(*scenarios, ",")
	if *muxers != "" {
		cfg.Muxers = strings.Split(*muxers, ",")
	}
	cfg.Out, cfg.Progress, cfg.ProgressTerminal = os.Stdout, os.Stderr, isTerminal(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rows, err := bench.Run(ctx, cfg)
	if len(rows) > 0 {
		fmt.Println()
		if werr := bench.WriteTable(os.Stdout, rows); werr != nil && err == nil {
			err = werr
		}
		printNotes(rows)
		fmt.Println()
		if werr := bench.WriteBudget(os.Stdout, rows); werr != nil && err == nil {
			err = werr
		}
	}
	if *plotDir != "" && len(rows) > 0 {
		if perr := bench.WritePlots(*plotDir, rows); perr != nil && !errors.Is(perr, bench.ErrNoTrace) && err == nil {
			err = perr
		}
	}
	if csvFile != nil {
		if werr := bench.WriteCSV(csvFile, rows); werr != nil && err == nil {
			err = werr
		}
		if cerr := csvFile.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// printNotes prints the ratios the acceptance criteria read.
func printNotes(rows []bench.Row) {
	byName := map[string]bench.Row{}
	fmt.Println()
	for _, r := range rows {
		byName[r.Scenario] = r
		if r.CPUNsPerMsg == r.CPUNsPerMsg { // not NaN
			fmt.Printf("%s: %.0f µs of CPU per message (user+system, whole process), %.2f cores busy, %.1f minor page faults per message\n", r.Scenario, r.CPUNsPerMsg/1e3, r.CPUNsPerMsg*r.MsgPerS/1e9, r.MinorFaultsPerMsg)
		}
		if r.ArchiveCPUNsPerMsg == r.ArchiveCPUNsPerMsg {
			fmt.Printf("%s: the archive's writer %.0f µs of CPU per message (index and segment writes, kernel time included)\n", r.Scenario, r.ArchiveCPUNsPerMsg/1e3)
		}
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Scenario, "micro-stalled") {
			continue
		}
		if m, ok := byName["micro"+strings.TrimPrefix(r.Scenario, "micro-stalled")]; ok && m.MsgPerS > 0 {
			fmt.Printf("%s / %s: %.2f msg/s to %.0f healthy filter subscribers; CPU per message %.0f vs %.0f µs; peak live heap %.1f vs %.1f MB\n",
				r.Scenario, m.Scenario, r.MsgPerS/m.MsgPerS, r.FilterPeers, r.CPUNsPerMsg/1e3, m.CPUNsPerMsg/1e3, r.PeakHeapMB, m.PeakHeapMB)
		}
	}
	// Each macro row beside the macro-bare row of the same run (macro-run2
	// and macro-bare-run2, macro-steady and macro-bare-steady): ratios of
	// msg/s and CPU per message, and the latency macro adds beside the
	// archive's acknowledgement latency.
	for _, p := range bench.BarePairs(rows) {
		a, b := p[0], p[1]
		if !(b.MsgPerS > 0 && b.CPUNsPerMsg > 0) {
			continue
		}
		fmt.Printf("%s / %s: %.2f msg/s, %.2f CPU per message\n", a.Scenario, b.Scenario, a.MsgPerS/b.MsgPerS, a.CPUNsPerMsg/b.CPUNsPerMsg)
		fmt.Printf("%s - %s latency: p50 %+.2f ms, p99 %+.2f ms; the archive's acknowledgement (Append to commit) p50 %.2f ms, p99 %.2f ms\n",
			a.Scenario, b.Scenario, (a.P50Ns-b.P50Ns)/1e6, (a.P99Ns-b.P99Ns)/1e6, a.AckP50Ns/1e6, a.AckP99Ns/1e6)
	}
	// The medians of a macro scenario's interleaved repeats (macro-run2 to
	// macro-runN beside macro-bare-run2 to macro-bare-runN).
	for _, r := range bench.FindRepeats(rows) {
		fmt.Println(r)
	}
	for _, suffix := range []string{"", "-steady"} {
		for _, pair := range [][2]string{{"macro-rest", "macro"}, {"macro-lightpush", "macro"}} {
			a, okA := byName[pair[0]+suffix]
			b, okB := byName[pair[1]+suffix]
			if okA && okB && b.MsgPerS > 0 && b.CPUNsPerMsg > 0 {
				fmt.Printf("%s / %s: %.2f msg/s, %.2f CPU per message\n", a.Scenario, b.Scenario, a.MsgPerS/b.MsgPerS, a.CPUNsPerMsg/b.CPUNsPerMsg)
			}
		}
	}
	for _, r := range rows {
		if r.Trace != nil && r.Trace.CacheBoundBytes == r.Trace.CacheBoundBytes { // not NaN
			fmt.Printf("%s: the two nodes' gossipsub message caches hold up to about %.0f MB by protocol (6 heartbeats of 1 s at %.0f msg/s, or the whole run when shorter); peak live heap %.1f MB\n",
				r.Scenario, r.Trace.CacheBoundBytes/1e6, r.MsgPerS, r.PeakHeapMB)
		}
	}
}

// isTerminal reports whether f is a terminal (a character device), where
// the progress bar may be redrawn in place.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
