package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/couriernet/courier/node"
)

const nodeHelp = `usage: courier node [flags]

Runs a Waku node: relay (gossipsub on /vac/waku/relay/2.0.0), metadata,
an archive of relayed messages (--store), a REST API with nwaku's paths
(--rest) and Prometheus metrics (--metrics-server).

Every flag can also come from a config file (--config-file, TOML or YAML,
keys named like the flags, lists for repeatable flags) or from the
environment as COURIER_<FLAG> with dashes as underscores, for example
COURIER_CLUSTER_ID=16. Flags win over the environment, which wins over the
file. SIGINT or SIGTERM stops the node cleanly: the archive commits and
fsyncs what it holds, connections close, and the exit code is 0.

Example, two nodes on one machine:
  courier node --tcp-port 60000 --rest --store --data-dir ./a
  courier node --tcp-port 60001 --rest --rest-port 8646 --data-dir ./b \
      --staticnode /ip4/127.0.0.1/tcp/60000/p2p/<id printed by the first>

Flags:
`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// uintList is a repeatable flag of shard ids.
type uintList []uint16

func (s *uintList) String() string { return fmt.Sprint([]uint16(*s)) }
func (s *uintList) Set(v string) error {
	x, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return fmt.Errorf("shard %q is not a number 0..1023", v)
	}
	*s = append(*s, uint16(x))
	return nil
}

func runNode(args []string) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, nodeHelp); fs.PrintDefaults() }
	cfg := node.DefaultConfig()
	var shards uintList
	var topics, static stringList
	cluster := fs.Uint("cluster-id", 0, "cluster id (0..65535)")
	fs.StringVar(&cfg.ListenAddress, "listen-address", cfg.ListenAddress, "IP address to listen on")
	fs.IntVar(&cfg.TCPPort, "tcp-port", cfg.TCPPort, "libp2p TCP port (0: any free port)")
	fs.IntVar(&cfg.WebSocketPort, "websocket-port", 0, "also listen for libp2p over WebSocket on this port (0: off)")
	fs.BoolVar(&cfg.Relay, "relay", cfg.Relay, "enable the relay protocol")
	fs.BoolVar(&cfg.Store, "store", false, "archive relayed messages")
	fs.Var(&shards, "shard", "static shard to relay (repeatable; default 0)")
	fs.Var(&topics, "pubsub-topic", "further pubsub topic to relay (repeatable)")
	fs.IntVar(&cfg.NumShardsInNetwork, "num-shards-in-network", cfg.NumShardsInNetwork, "shards in the network, for autosharding")
	fs.Var(&static, "staticnode", "peer multiaddr with /p2p/<id> to keep connected (repeatable)")
	fs.StringVar(&cfg.DBURL, "db-url", "", `archive: empty or "embedded" for SQLite index + segments in --data-dir`)
	fs.StringVar(&cfg.NodeKey, "nodekey", "", "hex secp256k1 private key (default: kept in --data-dir)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "directory for the node key and the archive")
	fs.IntVar(&cfg.MaxConnections, "max-connections", cfg.MaxConnections, "most peer connections")
	fs.BoolVar(&cfg.REST, "rest", false, "serve the REST API")
	fs.StringVar(&cfg.RESTAddress, "rest-address", cfg.RESTAddress, "REST API listen address")
	fs.IntVar(&cfg.RESTPort, "rest-port", cfg.RESTPort, "REST API port")
	fs.BoolVar(&cfg.MetricsServer, "metrics-server", false, "serve Prometheus metrics on /metrics")
	fs.StringVar(&cfg.MetricsAddress, "metrics-server-address", cfg.MetricsAddress, "metrics listen address")
	fs.IntVar(&cfg.MetricsPort, "metrics-server-port", cfg.MetricsPort, "metrics port")
	logLevel := fs.String("log-level", "INFO", "DEBUG, INFO, WARN or ERROR")
	configFile := fs.String("config-file", "", "TOML or YAML file with flag values")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *configFile == "" {
		*configFile = os.Getenv("COURIER_CONFIG_FILE")
	}
	if err := applyEnvAndFile(fs, *configFile); err != nil {
		return err
	}
	if *cluster > 65535 {
		return fmt.Errorf("--cluster-id %d is over 65535", *cluster)
	}
	cfg.ClusterID, cfg.Shards, cfg.PubsubTopics, cfg.StaticNodes = uint16(*cluster), shards, topics, static
	logger, err := newLogger(*logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	return serveNode(cfg)
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want DEBUG, INFO, WARN or ERROR", level)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func serveNode(cfg node.Config) error {
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := n.Start(ctx); err != nil {
		n.Stop(context.Background())
		return err
	}
	for _, a := range n.ListenAddresses() {
		cfg.Logger.Info("listening", "addr", a)
	}
	<-ctx.Done()
	cfg.Logger.Info("stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	cfg.Logger.Info("stopped")
	return nil
}
