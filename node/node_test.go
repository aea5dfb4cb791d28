package node

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/pgtest"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/shard"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"bad listen address", func(c *Config) { c.ListenAddress = "localhost" }},
		{"port range", func(c *Config) { c.TCPPort = 70000 }},
		{"shard range", func(c *Config) { c.Shards = []uint16{1024} }},
		{"shards in network", func(c *Config) { c.NumShardsInNetwork = 2000 }},
		{"shard not in the network", func(c *Config) { c.NumShardsInNetwork = 8; c.Shards = []uint16{8} }},
		{"pubsub topic of another cluster", func(c *Config) { c.ClusterID = 16; c.PubsubTopics = []string{"/waku/2/rs/1/0"} }},
		{"two clusters", func(c *Config) { c.PubsubTopics = []string{"/waku/2/rs/0/0", "/waku/2/rs/1/0"} }},
		{"pubsub topic shard range", func(c *Config) { c.PubsubTopics = []string{"/waku/2/rs/0/1024"} }},
		{"pubsub topic not in the network", func(c *Config) { c.NumShardsInNetwork = 2; c.PubsubTopics = []string{"/waku/2/rs/0/5"} }},
		{"not a static-shard topic", func(c *Config) { c.PubsubTopics = []string{"/waku/2/default-waku/proto"} }},
		{"unknown db url", func(c *Config) { c.DataDir = "x"; c.DBURL = "mysql://x" }},
		{"backoff", func(c *Config) { c.StaticRedialMin, c.StaticRedialMax = time.Second, time.Millisecond }},
		{"lightpush without relay", func(c *Config) { c.Relay, c.Lightpush = false, true }},
		{"negative filter limit", func(c *Config) { c.FilterMaxCriteria = -1 }},
		{"unknown muxer", func(c *Config) { c.Muxers = []string{"quic"} }},
		{"muxer twice", func(c *Config) { c.Muxers = []string{"mplex", "mplex"} }},
		{"secure WebSocket without key", func(c *Config) { c.WebSocketSecure, c.WebSocketSecureCertPath = true, "c.pem" }},
		// nwaku types --rest-address and --metrics-server-address as IP
		// addresses (tools/confutils/cli_args.nim): no name lookups.
		{"REST address not an IP", func(c *Config) { c.REST, c.RESTAddress = true, "notanip" }},
		{"metrics address not an IP", func(c *Config) { c.MetricsServer, c.MetricsAddress = true, "bad" }},
		{"static node not a multiaddr", func(c *Config) { c.StaticNodes = []string{"garbage"} }},
		{"static node without peer id", func(c *Config) { c.StaticNodes = []string{"/ip4/127.0.0.1/tcp/1"} }},
		{"DNS discovery URL with a bad key", func(c *Config) { c.Discovery.DNSDiscoveryURL = "enrtree://bad@x" }},
		{"DNS discovery URL not enrtree", func(c *Config) { c.Discovery.DNSDiscovery, c.Discovery.DNSDiscoveryURL = true, "https://x" }},
		{"DNS discovery without URL", func(c *Config) { c.Discovery.DNSDiscovery = true }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			if _, err := cfg.resolve(); !errors.Is(err, ErrConfig) {
				t.Fatalf("resolve = %v, want ErrConfig", err)
			}
		})
	}
	p, err := DefaultConfig().resolve()
	if err != nil {
		t.Fatalf("default config: %v", err)
	}
	if got := p.pubsubTopics(); len(got) != 1 || got[0] != "/waku/2/rs/0/0" {
		t.Fatalf("default topics %v", got)
	}
	// Autosharding without --shard relays every shard of the network, as
	// nwaku (waku/factory/conf_builder/waku_conf_builder.nim buildShardingConf).
	cfg := DefaultConfig()
	cfg.ClusterID, cfg.NumShardsInNetwork = 5, 3
	if p, err = cfg.resolve(); err != nil {
		t.Fatal(err)
	}
	if got := p.pubsubTopics(); !slices.Equal(got, []string{"/waku/2/rs/5/0", "/waku/2/rs/5/1", "/waku/2/rs/5/2"}) {
		t.Fatalf("autosharding topics %v", got)
	}
}

// TestIPv6ListenAddress listens on ::1 as nwaku does for an IPv6
// --listen-address: /ip6/ multiaddrs (waku/node/net_config.nim), also in
// /debug/v1/info.
func TestIPv6ListenAddress(t *testing.T) {
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback on this machine: %v", err)
	} else {
		l.Close()
	}
	n, err := New(Config{ListenAddress: "::1", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	addrs := n.ListenAddresses()
	if len(addrs) != 1 || !strings.HasPrefix(addrs[0], "/ip6/::1/tcp/") {
		t.Fatalf("listen addresses %q, want one /ip6/::1/tcp/...", addrs)
	}
	if got := n.peers.Announced(); !slices.Equal(got, addrs) {
		t.Fatalf("announced %q, want %q", got, addrs)
	}

	// On ::, the announced address and the ENR's are IPv6 ones too: the
	// host listens on IPv6 only.
	any6, err := New(Config{ListenAddress: "::", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { any6.Stop(context.Background()) })
	got := any6.peers.Announced()
	if len(got) != 1 || !strings.HasPrefix(got[0], "/ip6/") || strings.HasPrefix(got[0], "/ip6/::/") {
		t.Fatalf("announced on :: %q, want one /ip6/ address of an interface", got)
	}
	if ip := peers.ListenIP(net.ParseIP(any6.cfg.ListenAddress)); ip.To4() != nil {
		t.Fatalf("listenIP on :: = %v, want an IPv6 address", ip)
	}
}

// TestTwoNodesArchive relays one message between two in-process nodes and
// reads it back from the receiver's archive, embedded and in Postgres.
func TestTwoNodesArchive(t *testing.T) {
	for _, archiveName := range []string{"embedded", "postgres"} {
		t.Run(archiveName, func(t *testing.T) {
			bcfg := Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir()}
			if archiveName == "postgres" {
				bcfg.DBURL = pgtest.DB(t)
			}
			twoNodesArchive(t, bcfg)
		})
	}
}

func twoNodesArchive(t *testing.T, bcfg Config) {
	base := Config{ListenAddress: "127.0.0.1", Relay: true}
	a, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	archived := make(chan *message.Envelope, 1)
	bcfg.OnArchived = func(env *message.Envelope, err error) {
		if err == nil {
			archived <- env
		}
	}
	b, err := New(bcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Stop(ctx)
	if err := a.Host().Connect(ctx, peer.AddrInfo{ID: b.Host().ID(), Addrs: b.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	deadline := time.Now().Add(10 * time.Second)
	for len(a.Relay().TopicPeers(topic)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no relay peer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	env, err := a.Publish(ctx, topic, &message.Message{Payload: []byte("hi"), ContentTopic: "/t/1/n/proto"})
	if err != nil {
		t.Fatal(err)
	}
	if env.Message().Timestamp == 0 {
		t.Fatal("publish did not set the timestamp")
	}
	select {
	case got := <-archived:
		if got.Hash() != env.Hash() {
			t.Fatalf("archived %s, published %s", got.Hash(), env.Hash())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not archived")
	}
	res, err := b.Archive().Query(ctx, archive.Query{Hashes: []message.Hash{env.Hash()}, IncludeData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || !bytes.Equal(res.Messages[0].Wire, env.Wire()) || res.Messages[0].PubsubTopic != topic {
		t.Fatalf("read back %+v", res.Messages)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestDataDirHeldByOneNode(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{ListenAddress: "127.0.0.1", DataDir: dir}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "is another node running on it?") {
		t.Fatalf("second node on %s: %v", dir, err)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	if b.Host().ID() != a.Host().ID() {
		t.Fatal("the node key was not kept")
	}
	b.Stop(context.Background())
}

// A data directory that cannot be locked for another reason than a second
// holder (here LOCK is a directory: EISDIR; read-only or unwritable
// directories give EROFS or EACCES the same way) says what failed and does
// not suggest another node.
func TestDataDirLockErrorNotHeld(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "LOCK"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{ListenAddress: "127.0.0.1", DataDir: dir})
	if err == nil || strings.Contains(err.Error(), "another node") || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("New on %s = %v; want the open error without the another-node hint", dir, err)
	}
}

func TestNodeKeyFileError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nodekey"), []byte("zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{ListenAddress: "127.0.0.1", NoListen: true, DataDir: dir})
	if err == nil {
		n.Stop(t.Context())
	}
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), filepath.Join(dir, "nodekey")) {
		t.Fatalf("New = %v; want ErrConfig naming the file", err)
	}
}

// TestTCPPortInUse: a second node on a TCP port a node already listens on
// fails to start, instead of sharing the port through SO_REUSEPORT.
func TestTCPPortInUse(t *testing.T) {
	a, err := New(Config{ListenAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop(context.Background())
	addr := a.Host().Addrs()[0]
	port, err := addr.ValueForProtocol(multiaddr.P_TCP)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	b, err := New(Config{ListenAddress: "127.0.0.1", TCPPort: p})
	if err == nil {
		b.Stop(context.Background())
		t.Fatalf("a second node started on TCP port %d", p)
	}
}
