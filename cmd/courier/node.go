package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/couriernet/courier/cmd/courier/internal/stopsignal"
	"github.com/couriernet/courier/internal/p2plog"
	"github.com/couriernet/courier/node"
)

const nodeHelp = `usage: courier [node] [flags]
       wakunode2 [flags]

Runs a Waku node: relay (gossipsub on /vac/waku/relay/2.0.0), metadata,
an archive of relayed messages (--store), a REST API with nwaku's paths
(--rest) and Prometheus metrics (--metrics-server).

The command line is nwaku v0.38.1's: every flag of its wakunode2 is
accepted, as --flag=value, --flag value, --flag:value, and --flag=true|false
for switches, and so is its generateRlnKeystore command (courier
generateRlnKeystore --help). A flag whose value asks for something this
node does not do (--mix=true, say) stops it with one line naming the flag
and the reason; values that ask for nothing (--mix=false) are accepted
quietly. --version prints the version and exits. Defaults are nwaku's,
except:
  - with neither --shard nor --num-shards-in-network (nor --pubsub-topic)
    the node relays shard 0 of its cluster (nwaku relays nothing);
  - --nat defaults to none (nwaku's any sends UPnP/NAT-PMP probes off the
    machine);
  - --agent-string names courier.

Every flag can also come from a config file (--config-file, TOML or YAML,
keys named like the flags, lists for repeatable flags) or from the
environment as COURIER_<FLAG> or WAKUNODE2_<FLAG>, dashes as underscores,
for example WAKUNODE2_CLUSTER_ID=16 (lists comma-separated or as a JSON
array). Flags win over the environment, COURIER_ over WAKUNODE2_, and both
over the file. The node logs to stdout (with --log-format=JSON, nwaku's
records: ts, lvl, msg). SIGINT or SIGTERM stops the node cleanly, during
start-up too: the archive commits and fsyncs what it holds, connections
close, and the exit code is 0; a second signal ends it at once.

Exit codes, as nwaku's: 0 for a clean stop, --help and --version; 1 for
every error, printed as one line on stderr: a flag, environment variable
or config file value refused (the line names it), a configuration the
node refuses at start, or a failure while running.

Example, two nodes on one machine:
  courier --relay=true --rest=true --store=true --data-dir=./a \
      --cluster-id=0 --shard=0 --tcp-port=60000
  courier --relay=true --rest=true --rest-port=8646 --data-dir=./b \
      --cluster-id=0 --shard=0 --tcp-port=60001 \
      --staticnode=/ip4/127.0.0.1/tcp/60000/p2p/<id printed by the first>

Flags:
`

// runNode parses the node's command line (nodeFlags) and runs the node.
// Its first step takes over SIGINT and SIGTERM, caught since the process
// started (stopsignal), so that a stop asked for at any moment of start-up
// is a clean stop.
func runNode(args []string) error {
	ctx, stop := stopsignal.Context()
	defer stop()
	if len(args) > 0 && args[0] == "generateRlnKeystore" {
		return runKeystore(args[1:])
	}
	if asksVersion(args) {
		fmt.Println(versionLine())
		return nil
	}
	o, err := parseNodeFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printNodeHelp()
		}
		return err
	}
	level := new(slog.LevelVar)
	level.Set(o.logLevel)
	logger := newLogger(os.Stdout, level, o.logJSON)
	o.cfg.Logger, o.cfg.LogLevel = logger, level
	p2plog.Install(logger.Handler())
	return serveNode(ctx, stop, o.cfg, o.notes, o.warnings)
}

// asksVersion reports whether --version (or -version) comes among the
// flags of args before any help flag, as confutils reads them in order
// (nim-confutils confutils.nim, processHelpAndVersionOptions).
func asksVersion(args []string) bool {
	for _, a := range args {
		switch a {
		case "--", "-h", "--h", "-help", "--help":
			return false
		case "-version", "--version":
			return true
		}
	}
	return false
}

// versionLine is what --version prints, in nwaku's words ("version / git
// commit hash: ", apps/wakunode2/wakunode2.nim): the node's version, then
// the commit the binary was built from when the build recorded one.
func versionLine() string {
	line := "version / git commit hash: " + node.Version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return line
	}
	return line + " (" + rev[:min(12, len(rev))] + dirty + ")"
}

// parseNodeFlags reads args, the environment and the config file into
// options. Errors are *usageError, *refusedError or flag.ErrHelp.
func parseNodeFlags(args []string) (*nodeOptions, error) {
	p := newFlagSet("node", nodeFlags)
	if err := p.parse(args); err != nil {
		return nil, err
	}
	path := p.values["config-file"].val.str()
	if path == "" {
		if _, v, ok := lookupEnv("config-file"); ok {
			path = v
		}
	}
	if err := p.applyEnvAndFile(path); err != nil {
		return nil, err
	}
	o := &nodeOptions{cfg: node.DefaultConfig()}
	if err := p.resolve(nodeFlags, o); err != nil {
		return nil, err
	}
	if err := o.applyPreset(p); err != nil {
		return nil, err
	}
	if err := o.finish(p); err != nil {
		return nil, err
	}
	return o, nil
}

// finish derives what depends on several flags and notes the defaults
// that differ from nwaku's.
func (o *nodeOptions) finish(p *parsedFlags) error {
	c := &o.cfg
	o.entries.apply(o)
	// As in nwaku, --websocket-port alone does not turn WebSocket on.
	c.WebSocket, c.WebSocketPort = o.wsSupport, o.wsPort
	if err := o.shiftPorts(p); err != nil {
		return err
	}
	if c.Relay && len(c.Shards) == 0 && len(c.PubsubTopics) == 0 && c.NumShardsInNetwork == 0 {
		o.notes = append(o.notes, fmt.Sprintf("no --shard given: relaying shard 0 of cluster %d (nwaku v0.38.1 would relay none)", c.ClusterID))
	}
	if !p.values["nat"].val.given {
		o.notes = append(o.notes, "--nat defaults to none here (nwaku: any, which probes UPnP/NAT-PMP)")
	}
	if ignored := ignoredRLNFlags(p, c.RLNRelay.Enabled); len(ignored) > 0 {
		o.warnings = append(o.warnings, strings.Join(ignored, ", ")+" given without --rln-relay: ignored, as nwaku v0.38.1 ignores them (RLN relay is off)")
	}
	return nil
}

// shiftPorts adds --ports-shift to every port nwaku's shifts, discv5's UDP
// port too (waku/discovery/waku_discv5.nim setupDiscoveryV5, and the ENR's
// udp in waku/factory/internal_config.nim); 0, any free port, stays 0. A
// port in use that the shift takes past 65535 is refused (nwaku's uint16
// sum would wrap around); one not in use stays as given.
func (o *nodeOptions) shiftPorts(p *parsedFlags) error {
	c, s := &o.cfg, o.portsShift
	if s == 0 {
		return nil
	}
	for _, port := range []struct {
		flag  string
		p     *int
		inUse bool
	}{{"tcp-port", &c.TCPPort, true}, {"websocket-port", &c.WebSocketPort, c.WebSocket || c.WebSocketSecure},
		{"rest-port", &c.RESTPort, c.REST}, {"metrics-server-port", &c.MetricsPort, c.MetricsServer},
		{"discv5-udp-port", &c.Discovery.Discv5UDPPort, c.Discovery.Discv5}} {
		switch shifted := *port.p + s; {
		case *port.p == 0:
		case shifted <= math.MaxUint16:
			*port.p = shifted
		case port.inUse:
			fv := p.values["ports-shift"]
			return &usageError{fmt.Errorf("%s: shifts --%s %d to %d, which is out of range: want %s",
				fv.describe(fv.val.vals), port.flag, *port.p, shifted, portRange)}
		}
	}
	return nil
}

// ignoredRLNFlags returns the --rln-relay-* flags given (on the command
// line, in the environment or in the config file) when RLN relay is off:
// nwaku's RlnRelayConfBuilder.build (waku/factory/conf_builder/
// rln_relay_conf_builder.nim) reads none of them then, silently.
func ignoredRLNFlags(p *parsedFlags, enabled bool) []string {
	if enabled {
		return nil
	}
	var out []string
	for _, d := range nodeFlags {
		if strings.HasPrefix(d.name, "rln-relay-") && p.values[d.name].val.given {
			out = append(out, "--"+d.name)
		}
	}
	return out
}

func printNodeHelp() {
	fmt.Fprint(os.Stderr, nodeHelp)
	p := newFlagSet("node", nodeFlags)
	p.fs.SetOutput(os.Stderr)
	p.fs.PrintDefaults()
}

// newLogger returns a text or JSON logger on w at level, which POST
// /admin/v1/log-level may change. The node logs to stdout, as nwaku does
// (waku/common/logging.nim setupLogFormat writes both formats there).
func newLogger(w io.Writer, level *slog.LevelVar, json bool) *slog.Logger {
	if json {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: chroniclesJSON}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: levelNames}))
}

// levelNames writes nwaku's names for the levels between slog's.
func levelNames(_ []string, a slog.Attr) slog.Attr {
	if a.Key != slog.LevelKey {
		return a
	}
	if l, ok := a.Value.Any().(slog.Level); ok {
		switch {
		case l < slog.LevelDebug:
			a.Value = slog.StringValue("TRACE")
		case l > slog.LevelInfo && l < slog.LevelWarn:
			a.Value = slog.StringValue("NOTICE")
		case l > slog.LevelError:
			a.Value = slog.StringValue("FATAL")
		}
	}
	return a
}

// chroniclesTime is the layout of nim-chronicles' default RfcTime
// timestamps, local time with milliseconds (chronicles/timestamp.nim).
const chroniclesTime = "2006-01-02 15:04:05.000-07:00"

// chroniclesJSON names a JSON record's time and level as nwaku's records
// do (nim-chronicles chronicles/json_records.nim): "lvl" with the
// three-letter level (TRC, DBG, INF, NTC, WRN, ERR, FAT; log_output.nim
// shortName), "ts" with an RfcTime timestamp, then "msg" and the fields.
func chroniclesJSON(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if t, ok := a.Value.Any().(time.Time); ok {
			return slog.String("ts", t.Format(chroniclesTime))
		}
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			return slog.String("lvl", shortLevel(l))
		}
	}
	return a
}

// shortLevel is nim-chronicles' three-letter name of the level l falls in.
func shortLevel(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRC"
	case l < slog.LevelInfo:
		return "DBG"
	case l == slog.LevelInfo:
		return "INF"
	case l < slog.LevelWarn:
		return "NTC"
	case l < slog.LevelError:
		return "WRN"
	case l == slog.LevelError:
		return "ERR"
	default:
		return "FAT"
	}
}

// serveNode runs a node until ctx ends (the first SIGINT or SIGTERM,
// stopsignal.Context), logging notes (INFO) and warnings (WARN) once the configuration is accepted;
// stop stops catching the signals, as the first one does, so that a second
// one ends the process at once (while New waits on a database or a name
// server, say). A signal that came before serveNode ends it with nil
// (exit code 0) and no node built; one that comes while the node is being
// built or started stops it as one after the start does: Stop commits the
// archive and the result is nil, once New has returned.
func serveNode(ctx context.Context, stop context.CancelFunc, cfg node.Config, notes, warnings []string) error {
	if ctx.Err() != nil {
		cfg.Logger.Info("stopped before start")
		return nil
	}
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	for _, note := range notes {
		cfg.Logger.Info(note)
	}
	for _, w := range warnings {
		cfg.Logger.Warn(w)
	}
	if err := n.Start(ctx); err != nil {
		stop()
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			n.Stop(context.Background())
			return err
		}
		cfg.Logger.Info("stopping during start-up")
		return stopNode(cfg.Logger, n)
	}
	for _, a := range n.ListenAddresses() {
		cfg.Logger.Info("listening", "addr", a)
	}
	<-ctx.Done()
	stop()
	cfg.Logger.Info("stopping")
	return stopNode(cfg.Logger, n)
}

// stopTimeout bounds a stop; HTTP requests in progress get
// node.StopGrace of it.
const stopTimeout = 30 * time.Second

// stopNode stops n within stopTimeout.
func stopNode(log *slog.Logger, n *node.Node) error {
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	log.Info("stopped")
	return nil
}

// isNodeInvocation reports whether the command line runs a node without
// the `node` subcommand: the binary is called wakunode2, the first argument
// is a flag other than help, or there are no arguments and environ (as
// os.Environ) sets a node flag, as `docker run -e WAKUNODE2_TCP_PORT=...`
// does with nwaku's image.
func isNodeInvocation(argv0 string, args, environ []string) bool {
	base := argv0[strings.LastIndexAny(argv0, `/\`)+1:]
	if strings.TrimSuffix(base, ".exe") == "wakunode2" {
		return true
	}
	if len(args) == 0 {
		return setsNodeFlag(environ)
	}
	a := args[0]
	return strings.HasPrefix(a, "-") && a != "-h" && a != "--help" && a != "-help"
}

// setsNodeFlag reports whether environ holds a COURIER_<FLAG> or
// WAKUNODE2_<FLAG> variable naming one of nodeFlags.
func setsNodeFlag(environ []string) bool {
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, prefix := range envPrefixes {
			suffix, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			for _, d := range nodeFlags {
				if strings.ToUpper(strings.ReplaceAll(d.name, "-", "_")) == suffix {
					return true
				}
			}
		}
	}
	return false
}
