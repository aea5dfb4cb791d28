// Package bench is the message-path harness behind `courier bench`: micro
// and macro scenarios on courier's own node, the macro-bare ceiling of the
// libp2p stack, and the lib-net lane A/B, with exact decode/hash counts and
// Go's allocation accounting. docs/benchmark.md describes the method and
// the output.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/couriernet/courier/node"
)

// scenarios are the scenario names, in the order they run.
// macro writes each payload once, into the encoding (Node.PublishWith);
// macro-copy is macro through the copying API (Node.Publish of a payload in
// a buffer of its own); macro-rest is macro with A publishing through its
// REST API.
// micro-stalled is micro with one more filter subscriber that never reads;
// macro-lightpush is macro with a light client pushing to A (lightpush v3).
// store fills an archive and times store v3 queries against it.
var scenarios = []string{"micro", "micro-stalled", "macro", "macro-copy", "macro-bare", "macro-rest", "macro-lightpush", "macro-rln", "libnet", "store"}

// Config configures a run. Zero values take the documented defaults.
type Config struct {
	// Scenarios to run, a subset of scenarios. Default micro, macro, macro-bare.
	Scenarios []string
	// N is the number of measured messages (default 1000) and Warmup the
	// warm-up messages before them (default 100; negative means none).
	N, Warmup int
	// Seed drives payload sizes and bytes. Default 42.
	Seed int64
	// Profile is the payload mix. Default SeedProfile.
	Profile string
	// Rate paces the publisher of the macro scenarios in msg/s; 0 sends as
	// fast as the window of Inflight messages allows. micro and libnet
	// are not paced.
	Rate float64
	// Inflight is the most messages in flight in the macro scenarios (and
	// the REST and lightpush publishers' requests). Default 32, the seed
	// method's window; micro keeps 32.
	Inflight int
	// Handlers is the number of application handlers on the receiving node
	// (default 1); a message is done when all have run.
	Handlers int
	// FilterPeers are the numbers of filter subscribers of the micro
	// scenarios (libp2p hosts in the process): micro and micro-stalled run
	// once for each, named with a -f<F> suffix when there are several.
	// 0 means no filter service. Default {3}.
	FilterPeers []int
	// ContentTopic and PubsubTopic of the workload. Defaults
	// "/courier/1/bench/proto" and "/waku/2/rs/0/0".
	ContentTopic, PubsubTopic string
	// Sign signs the libnet scenario's raw lane too; its legacy lane is
	// always signed, as lib-net requires.
	Sign bool
	// Muxers: macro, macro-copy, macro-rest and macro-bare run once per muxer
	// listed ("yamux", "mplex"), one after the other, with both nodes
	// offering only that one; their rows are named "<scenario>[<muxer>]".
	// Empty means one run with the nodes' default: both offered, yamux
	// chosen.
	Muxers []string
	// muxer is the muxer of the macro run in progress, "" for the default.
	muxer string
	// StoreMessages is the number of messages the store scenario archives
	// (default 10,000) and StoreQueries the number of queries it times
	// (default 1,000).
	StoreMessages, StoreQueries int
	// StoreProfile is the payload mix of the store scenario's messages, in
	// the grammar of Profile (default DefaultStoreProfile, 1,000 bytes).
	StoreProfile string
	// StoreDBURL is the archive of the store scenario and of the macro
	// receiver: "" for the embedded one in Dir, or a postgres:// URL
	// (archive/dburl.Open). The macro scenarios archive in a schema created
	// for the run and dropped after it.
	StoreDBURL string
	// Steady runs every macro scenario of Scenarios a second time with a
	// steady-state warm-up, as a row named "<scenario>-steady" beside it:
	// instead of Warmup messages, the warm-up lasts until the live heap
	// has reached its plateau, at least the gossipsub message history (7 s
	// in all) and at most a minute; then the same N messages are measured.
	// A scenario named with the -steady suffix runs that way alone.
	Steady bool
	// steady is set on the copy of the Config a steady row runs with.
	steady bool
	// Budget profiles the measured part of every micro and macro row at
	// 1000 Hz and splits the row's CPU time per message into stages
	// (Row.Budget, WriteBudget).
	Budget bool
	// CPUProfile is a file for the CPU profiles of the measured parts,
	// merged; each row's part goes beside it, named after the row
	// (cpu.prof: cpu.macro.prof). It implies Budget. "" for none.
	CPUProfile string
	// prof takes the profiles when Budget is on.
	prof *cpuProfiler
	// Dir is where temporary archives go. Default os.TempDir().
	Dir string
	// Out receives the start-up lines (the machine, SHA-256 speed,
	// append bound) and notes; Progress the progress bar. Nil means
	// io.Discard.
	Out, Progress io.Writer
	// ProgressTerminal says Progress is a terminal: the bar is redrawn in
	// place. Otherwise it is written as a plain line at most every
	// ProgressLineInterval, and once more when it ends.
	ProgressTerminal bool
}

// maxInflight bounds Config.Inflight: gossipsub's queues in the macro
// scenarios hold 1024 messages.
const maxInflight = 1024

// ErrConfig is wrapped by every configuration error of Run.
var ErrConfig = errors.New("bench: invalid config")

// setDefaults fills in the default of every zero field (and turns a
// negative Warmup into none).
func (c *Config) setDefaults() {
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{"micro", "macro", "macro-bare"}
	}
	if c.N == 0 {
		c.N = 1000
	}
	if c.Warmup == 0 {
		c.Warmup = 100
	} else if c.Warmup < 0 {
		c.Warmup = 0
	}
	if c.Seed == 0 {
		c.Seed = 42
	}
	if c.Profile == "" {
		c.Profile = SeedProfile
	}
	if c.Handlers == 0 {
		c.Handlers = 1
	}
	if c.Inflight == 0 {
		c.Inflight = window
	}
	if len(c.FilterPeers) == 0 {
		c.FilterPeers = []int{3}
	}
	if c.StoreMessages == 0 {
		c.StoreMessages = 10_000
	}
	if c.StoreQueries == 0 {
		c.StoreQueries = 1000
	}
	if c.StoreProfile == "" {
		c.StoreProfile = DefaultStoreProfile
	}
	if c.ContentTopic == "" {
		c.ContentTopic = "/courier/1/bench/proto"
	}
	if c.PubsubTopic == "" {
		c.PubsubTopic = "/waku/2/rs/0/0"
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if _, wrapped := c.Progress.(*lineProgress); !c.ProgressTerminal && !wrapped {
		c.Progress = &lineProgress{w: c.Progress, interval: ProgressLineInterval, now: time.Now}
	}
}

func (c *Config) validate() error {
	for _, s := range c.Scenarios {
		base, steady := strings.CutSuffix(baseScenario(s), "-steady")
		if !slices.Contains(scenarios, base) {
			return fmt.Errorf("%w: unknown scenario %q (want %s, optionally with a -steady or -runN suffix)", ErrConfig, s, strings.Join(scenarios, ", "))
		}
		if steady && !isMacro(base) {
			return fmt.Errorf("%w: scenario %q: only the macro scenarios have a steady-state warm-up", ErrConfig, s)
		}
	}
	for _, f := range c.FilterPeers {
		if f < 0 || f > 1000 {
			return fmt.Errorf("%w: --filter-peers %d not in 0..1000", ErrConfig, f)
		}
	}
	for _, m := range c.Muxers {
		if m != node.MuxerYamux && m != node.MuxerMplex {
			return fmt.Errorf("%w: --muxer %q: want yamux and/or mplex", ErrConfig, m)
		}
	}
	switch {
	case c.N < 0:
		return fmt.Errorf("%w: -n %d must be positive", ErrConfig, c.N)
	case c.Rate < 0:
		return fmt.Errorf("%w: --rate %v must not be negative", ErrConfig, c.Rate)
	case c.Inflight < 1 || c.Inflight > maxInflight:
		return fmt.Errorf("%w: --inflight %d not in 1..%d", ErrConfig, c.Inflight, maxInflight)
	case c.Handlers < 0 || c.Handlers > 64:
		return fmt.Errorf("%w: --handlers %d not in 1..64", ErrConfig, c.Handlers)
	case c.StoreMessages < 0 || c.StoreQueries < 0:
		return fmt.Errorf("%w: --store-messages and --store-queries must be positive", ErrConfig)
	}
	return nil
}

// withSteady returns the scenarios to run: with Steady, each macro
// scenario is followed by its steady-state row.
func (c *Config) withSteady() []string {
	if !c.Steady {
		return c.Scenarios
	}
	var out []string
	for _, s := range c.Scenarios {
		out = append(out, s)
		if base := baseScenario(s); isMacro(base) && !strings.HasSuffix(base, "-steady") {
			out = append(out, steadyName(s))
		}
	}
	return out
}

// isMacro reports whether scenario (without suffixes) runs two nodes
// under a publisher that drive paces.
func isMacro(scenario string) bool { return strings.HasPrefix(scenario, "macro") }

// steadyName names the steady-state row of scenario s: "macro-steady",
// "macro-steady-run2".
func steadyName(s string) string {
	base := baseScenario(s)
	return base + "-steady" + strings.TrimPrefix(s, base)
}

// baseScenario strips a "-runN" suffix.
func baseScenario(s string) string {
	if i := strings.LastIndex(s, "-run"); i > 0 {
		return s[:i]
	}
	return s
}

// Run runs the configured scenarios in order and returns one row per
// scenario (several for libnet). It stops at the first failing scenario
// (a lost message, an error, ctx ending) and returns the rows of the
// scenarios that completed, with the error.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Scenarios = cfg.withSteady()
	prof, err := ParseProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	w := NewWorkload(prof, cfg.Seed, cfg.Warmup, cfg.N, cfg.ContentTopic)
	if err := calibrate(cfg, w); err != nil {
		return nil, err
	}
	if cfg.Budget || cfg.CPUProfile != "" {
		cfg.prof = &cpuProfiler{path: cfg.CPUProfile}
	}
	rows, err := cfg.runAll(ctx, w, prof)
	if cfg.prof != nil {
		if perr := cfg.prof.finish(); err == nil {
			err = perr
		}
	}
	return rows, err
}

// runAll runs the scenarios of cfg on w, whose payloads follow prof.
func (cfg Config) runAll(ctx context.Context, w *Workload, prof Profile) ([]Row, error) {
	var steadyW *Workload // the same measured messages after a longer warm-up
	var rows []Row
	for _, s := range cfg.Scenarios {
		var r []Row
		var err error
		base, steady := strings.CutSuffix(baseScenario(s), "-steady")
		cfg, w := cfg, w
		if steady {
			if steadyW == nil {
				steadyW = NewWorkload(prof, cfg.Seed, steadyWarmupMessages, cfg.N, cfg.ContentTopic)
			}
			cfg.steady, w = true, steadyW
		}
		switch base {
		case "micro", "micro-stalled":
			r, err = runMicros(ctx, cfg, w, s, base == "micro-stalled")
		case "macro-lightpush":
			r, err = one(runMacroLightpush(ctx, cfg, w, s))
		case "macro":
			r, err = cfg.perMuxer(s, func(c Config, name string) (Row, error) { return runMacro(ctx, c, w, name, viaAPI) })
		case "macro-copy":
			r, err = cfg.perMuxer(s, func(c Config, name string) (Row, error) { return runMacro(ctx, c, w, name, viaCopy) })
		case "macro-rest":
			r, err = cfg.perMuxer(s, func(c Config, name string) (Row, error) { return runMacro(ctx, c, w, name, viaREST) })
		case "macro-rln": // its messages are proved beforehand: no steady-state warm-up
			if !steady {
				r, err = runMacroRLN(ctx, cfg, w, s)
			}
		case "macro-bare":
			r, err = cfg.perMuxer(s, func(c Config, name string) (Row, error) { return runMacroBare(ctx, c, w, name) })
		case "store":
			r, err = runStore(ctx, cfg)
		case "libnet":
			r, err = RunLibnet(ctx, LibnetConfig{N: cfg.N, Warmup: cfg.Warmup, Seed: cfg.Seed, Sign: cfg.Sign, Progress: progressFunc(cfg.Progress, s)})
		}
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s, err) // a failed scenario's row is not a result
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

func one(r Row, err error) ([]Row, error) { return []Row{r}, err }

// perMuxer runs a macro scenario once per muxer of c.Muxers, or once with
// the nodes' default.
func (c Config) perMuxer(scenario string, run func(Config, string) (Row, error)) ([]Row, error) {
	if len(c.Muxers) == 0 {
		return one(run(c, scenario))
	}
	var rows []Row
	for _, m := range c.Muxers {
		mc := c
		mc.muxer = m
		r, err := run(mc, scenario+"["+m+"]")
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// muxers returns the muxers of the macro scenarios' nodes, nil for the
// nodes' default.
func (c *Config) muxers() []string {
	if c.muxer == "" {
		return nil
	}
	return []string{c.muxer}
}

// runMicros runs a micro scenario once per number of filter subscribers.
func runMicros(ctx context.Context, cfg Config, w *Workload, name string, stalled bool) ([]Row, error) {
	var rows []Row
	for _, f := range cfg.FilterPeers {
		n := name
		if len(cfg.FilterPeers) > 1 {
			n = fmt.Sprintf("%s-f%d", name, f)
		}
		r, err := runMicro(ctx, cfg, w, n, stalled, f)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func calibrate(cfg Config, w *Workload) error {
	fmt.Fprintln(cfg.Out, machineLine())
	fmt.Fprintf(cfg.Out, "SHA-256: %.0f MB/s (65 kB buffers)\n", sha256Speed())
	dir, err := tempDir(cfg.Dir, "append")
	if err != nil {
		return err
	}
	defer removeAll(dir)
	bound, err := appendBound(w, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "append bound: %.0f msg/s (payload mix %s appended in %s, fsync every 64 messages)\n", bound, cfg.Profile, cfg.dirName())
	return nil
}

func (c Config) dirName() string {
	if c.Dir == "" {
		return os.TempDir()
	}
	return c.Dir
}

func removeAll(dir string) { _ = os.RemoveAll(dir) }

// startProgress draws a progress bar on w for runs longer than a second
// and returns the function that stops it.
func startProgress(w io.Writer, name string, t *tracker) (stop func()) {
	report := progressFunc(w, name)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-quit:
				if time.Since(start) > time.Second {
					done, total := int(t.done.Load()), int(t.total)
					report(done, total)
					if done < total {
						fmt.Fprintln(w) // end the unfinished bar's line
					}
				}
				return
			case <-tick.C:
				if time.Since(start) > time.Second {
					report(int(t.done.Load()), int(t.total))
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// progressFunc returns a function that redraws one progress line on w; it
// ends the line when done reaches total.
func progressFunc(w io.Writer, name string) func(done, total int) {
	return func(done, total int) {
		const width = 30
		filled := 0
		if total > 0 {
			filled = done * width / total
		}
		fmt.Fprintf(w, "\r%-14s [%s%s] %d/%d", name, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}
