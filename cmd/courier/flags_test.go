package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/node"
)

// nwakuFlags reads testdata/nwaku-v0.38.1-flags.txt: name -> default ("" for
// none), in file order.
func nwakuFlags(t *testing.T) (names []string, defaults map[string]string) {
	t.Helper()
	f, err := os.Open("testdata/nwaku-v0.38.1-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defaults = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, def, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		if def == "-" {
			def = ""
		}
		names = append(names, name)
		defaults[name] = def
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names, defaults
}

// TestNodeFlagsCoverNwaku checks that every flag of nwaku v0.38.1 is a row
// of the table with nwaku's default, and that every row not marked
// courierOnly is one of nwaku's.
func TestNodeFlagsCoverNwaku(t *testing.T) {
	names, defaults := nwakuFlags(t)
	if len(names) != 98 {
		t.Errorf("testdata lists %d flags, want 98", len(names))
	}
	rows := map[string]*flagDef{}
	for i := range nodeFlags {
		d := &nodeFlags[i]
		if rows[d.name] != nil {
			t.Errorf("--%s: two rows", d.name)
		}
		rows[d.name] = d
		if _, ok := defaults[d.name]; !ok && !d.courierOnly {
			t.Errorf("--%s: not a flag of nwaku v0.38.1 and not marked courierOnly", d.name)
		}
		if _, ok := defaults[d.name]; ok && d.courierOnly {
			t.Errorf("--%s: a flag of nwaku v0.38.1 marked courierOnly", d.name)
		}
	}
	for _, name := range names {
		d := rows[name]
		if d == nil {
			t.Errorf("--%s: nwaku v0.38.1 flag missing from the table", name)
			continue
		}
		if d.nwaku != defaults[name] {
			t.Errorf("--%s: table says nwaku's default is %q, testdata %q", name, d.nwaku, defaults[name])
		}
	}
}

// TestNodeFlagsRows checks each row's shape: implemented, or refused with
// a reason, or accepted only with another row that is itself refused.
func TestNodeFlagsRows(t *testing.T) {
	rows := map[string]*flagDef{}
	for i := range nodeFlags {
		rows[nodeFlags[i].name] = &nodeFlags[i]
	}
	for _, d := range nodeFlags {
		switch {
		case d.apply != nil && (d.refuse != "" || d.quiet != nil || d.with != ""):
			t.Errorf("--%s: implemented and refused at once", d.name)
		case d.apply == nil && d.with != "":
			w := rows[d.with]
			if w == nil || w.apply != nil {
				t.Errorf("--%s: with --%s, which is not a refused row: implement this one too", d.name, d.with)
			}
		case d.apply == nil && d.refuse == "":
			t.Errorf("--%s: neither implemented nor given a reason to refuse", d.name)
		}
		// nwaku serves these by default; courier does not (yet), so their
		// default is what is refused when given.
		offByDefault := d.name == "peer-exchange" || d.name == "rendezvous"
		if d.apply == nil && d.with == "" && !offByDefault && !isQuiet(&d, flagVal{given: true, vals: splitDefault(&d)}) {
			t.Errorf("--%s: its own default %q would be refused", d.name, d.defaultText())
		}
	}
}

// TestNodeFlagsDefaults checks what a command line without flags gives:
// nwaku v0.38.1's defaults, and the documented exceptions.
func TestNodeFlagsDefaults(t *testing.T) {
	clearNodeEnv(t)
	o, err := parseNodeFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	want := node.DefaultConfig()
	want.AgentString, want.RESTCacheCapacity = node.Version, 50
	if !c.Relay || c.Store || c.REST || c.RESTAdmin || c.MetricsServer {
		t.Errorf("switches: relay %v store %v rest %v rest-admin %v metrics %v, want true false false false false", c.Relay, c.Store, c.REST, c.RESTAdmin, c.MetricsServer)
	}
	if c.ListenAddress != "0.0.0.0" || c.TCPPort != 60000 || c.RESTAddress != "127.0.0.1" || c.RESTPort != 8645 ||
		c.MetricsAddress != "127.0.0.1" || c.MetricsPort != 8008 || c.MaxConnections != 150 || c.ClusterID != 0 ||
		c.NumShardsInNetwork != 0 || c.RESTCacheCapacity != 50 || c.WebSocket || c.WebSocketPort != 8000 || c.AgentString != node.Version {
		t.Errorf("config %+v", c)
	}
	if o.logLevel != slog.LevelInfo || o.logJSON {
		t.Errorf("log level %v json %v, want INFO text", o.logLevel, o.logJSON)
	}
	if len(o.notes) != 2 || !strings.Contains(o.notes[0], "relaying shard 0 of cluster 0") || !strings.Contains(o.notes[1], "--nat defaults to none") {
		t.Errorf("start notes %q", o.notes)
	}
}

// clearNodeEnv unsets every COURIER_ and WAKUNODE2_ variable for the test.
func clearNodeEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "COURIER_") || strings.HasPrefix(k, "WAKUNODE2_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
}

// TestNodeFlagsForms checks nwaku's flag forms, the environment and their
// precedence.
func TestNodeFlagsForms(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(o *nodeOptions) bool
	}{
		{"equals", []string{"--relay=false", "--tcp-port=1234"}, nil,
			func(o *nodeOptions) bool { return !o.cfg.Relay && o.cfg.TCPPort == 1234 }},
		{"space", []string{"--tcp-port", "1234", "--cluster-id", "16"}, nil,
			func(o *nodeOptions) bool { return o.cfg.TCPPort == 1234 && o.cfg.ClusterID == 16 }},
		{"colon", []string{"--tcp-port:1234", "--nat:none"}, nil,
			func(o *nodeOptions) bool { return o.cfg.TCPPort == 1234 }},
		{"bool alone", []string{"--rest", "--store=TRUE"}, nil,
			func(o *nodeOptions) bool { return o.cfg.REST && o.cfg.Store }},
		{"single dash", []string{"-rest-port=9000"}, nil,
			func(o *nodeOptions) bool { return o.cfg.RESTPort == 9000 }},
		{"repeated list", []string{"--shard=0", "--shard", "3", "--num-shards-in-network=8"}, nil,
			func(o *nodeOptions) bool { return slices.Equal(o.cfg.Shards, []uint16{0, 3}) }},
		{"wakunode2 env", nil, map[string]string{"WAKUNODE2_CLUSTER_ID": "7", "WAKUNODE2_REST": "true"},
			func(o *nodeOptions) bool { return o.cfg.ClusterID == 7 && o.cfg.REST }},
		{"courier env wins", nil, map[string]string{"WAKUNODE2_CLUSTER_ID": "7", "COURIER_CLUSTER_ID": "9"},
			func(o *nodeOptions) bool { return o.cfg.ClusterID == 9 }},
		{"flag wins", []string{"--cluster-id=3"}, map[string]string{"WAKUNODE2_CLUSTER_ID": "7", "COURIER_CLUSTER_ID": "9"},
			func(o *nodeOptions) bool { return o.cfg.ClusterID == 3 }},
		{"env list comma", nil, map[string]string{"WAKUNODE2_SHARD": "1,2"},
			func(o *nodeOptions) bool { return slices.Equal(o.cfg.Shards, []uint16{1, 2}) }},
		{"env list json", nil, map[string]string{"WAKUNODE2_STATICNODE": `["/ip4/1.2.3.4/tcp/1/p2p/x","/ip4/1.2.3.4/tcp/2/p2p/y"]`},
			func(o *nodeOptions) bool { return len(o.cfg.StaticNodes) == 2 }},
		{"log levels", []string{"--log-level=TRACE", "--log-format=JSON"}, nil,
			func(o *nodeOptions) bool { return o.logLevel < slog.LevelDebug && o.logJSON }},
		{"notice", []string{"--log-level=notice"}, nil,
			func(o *nodeOptions) bool { return o.logLevel > slog.LevelInfo && o.logLevel < slog.LevelWarn }},
		{"ports shift", []string{"--ports-shift=10", "--websocket-support=true"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.TCPPort == 60010 && o.cfg.RESTPort == 8655 && o.cfg.MetricsPort == 8018 && o.cfg.WebSocket && o.cfg.WebSocketPort == 8010 &&
					o.cfg.Discovery.Discv5UDPPort == 9010
			}},
		{"ports shift keeps any free port", []string{"--ports-shift=10", "--tcp-port=0", "--discv5-udp-port=0", "--discv5-discovery=true"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.TCPPort == 0 && o.cfg.Discovery.Discv5UDPPort == 0 && o.cfg.RESTPort == 8655
			}},
		{"metrics logging by default", nil, nil, func(o *nodeOptions) bool { return o.cfg.MetricsLogging }},
		{"metrics logging off", []string{"--metrics-logging=false"}, nil, func(o *nodeOptions) bool { return !o.cfg.MetricsLogging }},
		{"websocket port alone", []string{"--websocket-port=9000"}, nil,
			func(o *nodeOptions) bool { return !o.cfg.WebSocket && o.cfg.WebSocketPort == 9000 }},
		{"secure websocket", []string{"--websocket-secure-support=true", "--websocket-secure-key-path=k.pem", "--websocket-secure-cert-path=c.pem"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.WebSocketSecure && o.cfg.WebSocketSecureKeyPath == "k.pem" && o.cfg.WebSocketSecureCertPath == "c.pem" && o.cfg.WebSocketPort == 8000
			}},
		{"quiet values", []string{"--rln-relay=false", "--keep-alive=true", "--rendezvous=false", "--peer-exchange=false",
			"--nat=none", "--max-msg-size=150KiB", "--rln-relay-eth-client-address=http://x:1/", "--store-sync-interval=60",
			"--discv5-discovery=false", "--filter=false", "--lightpush=false", "--mode=noMode", "--metrics-logging=false"}, nil,
			func(o *nodeOptions) bool { return true }},
		// Without relay nwaku's twn needs no RLN: its settings apply
		// (waku/factory/conf_builder/waku_conf_builder.nim applyNetworkConf).
		{"twn without relay", []string{"--preset=twn", "--relay=false", "--cluster-id=5"}, nil,
			func(o *nodeOptions) bool {
				d := o.cfg.Discovery
				return o.cfg.ClusterID == 1 && o.cfg.NumShardsInNetwork == 8 && d.Discv5 && len(d.Discv5BootstrapNodes) == 3
			}},
		// With relay, The Waku Network's RLN relay too (networks_config.nim
		// TheWakuNetworkConf), over the flags' values.
		{"twn with relay", []string{"--preset=twn", "--rln-relay-eth-contract-address=0x0000000000000000000000000000000000000001",
			"--rln-relay-epoch-sec=1", "--rln-relay-eth-client-address=https://rpc.example/key"}, nil,
			func(o *nodeOptions) bool {
				r := o.cfg.RLNRelay
				return o.cfg.ClusterID == 1 && o.cfg.NumShardsInNetwork == 8 && r.Enabled && r.Dynamic &&
					r.EthContractAddress == "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6" && r.ChainID == 59141 && r.EpochSec == 600 &&
					r.UserMessageLimit == 0 && o.keystore.userMessageLimit == 100 && slices.Equal(r.EthClientAddresses, []string{"https://rpc.example/key"})
			}},
		{"cluster 1 is twn", []string{"--cluster-id=1", "--preset=foo", "--rln-relay-user-message-limit=7"}, nil,
			func(o *nodeOptions) bool {
				r := o.cfg.RLNRelay
				return r.Enabled && r.EpochSec == 600 && r.UserMessageLimit == 7 && o.keystore.userMessageLimit == 7
			}},
		{"twn without relay leaves RLN off", []string{"--preset=twn", "--relay=false"}, nil,
			func(o *nodeOptions) bool { return !o.cfg.RLNRelay.Enabled && o.cfg.ClusterID == 1 }},
		{"rln relay flags", []string{"--rln-relay=true", "--rln-relay-dynamic=true", "--rln-relay-membership-index=3", "--rln-relay-cred-path=ks.json",
			"--rln-relay-cred-password=pw", "--rln-relay-eth-client-address=http://a:1/", "--rln-relay-eth-client-address=ws://b:2/",
			"--rln-relay-eth-contract-address=0x00000000000000000000000000000000000000aa", "--rln-relay-chain-id=1337", "--rln-relay-eth-private-key=0x01",
			"--rln-relay-user-message-limit=20", "--rln-relay-epoch-sec=10", "--rln-relay-circuit-dir=/c"}, nil,
			func(o *nodeOptions) bool {
				r := o.cfg.RLNRelay
				return r.Enabled && r.Dynamic && r.MembershipIndex != nil && *r.MembershipIndex == 3 && r.CredPath == "ks.json" && r.CredPassword == "pw" &&
					slices.Equal(r.EthClientAddresses, []string{"http://a:1/", "ws://b:2/"}) && r.EthContractAddress == "0x00000000000000000000000000000000000000aa" &&
					r.ChainID == 1337 && r.EthPrivateKey == "0x01" && r.UserMessageLimit == 20 && r.EpochSec == 10 && r.CircuitDir == "/c"
			}},
		{"rln relay defaults", []string{"--rln-relay"}, nil,
			func(o *nodeOptions) bool {
				r := o.cfg.RLNRelay
				return r.Enabled && r.MembershipIndex == nil && r.UserMessageLimit == 0 && o.keystore.userMessageLimit == 1 && r.EpochSec == 1 &&
					slices.Equal(r.EthClientAddresses, []string{"http://localhost:8540/"}) && r.ChainID == 0
			}},
		{"cluster 1 without relay", []string{"--cluster-id=1", "--relay=false", "--discv5-discovery=false", "--discv5-bootstrap-node=enr:x"}, nil,
			func(o *nodeOptions) bool {
				d := o.cfg.Discovery
				return o.cfg.ClusterID == 1 && !d.Discv5 && len(d.Discv5BootstrapNodes) == 4 && d.Discv5BootstrapNodes[0] == "enr:x"
			}},
		{"other clusters", []string{"--cluster-id=3"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.ClusterID == 3 && o.cfg.NumShardsInNetwork == 0 && !o.cfg.Discovery.Discv5
			}},
		{"IPv6 addresses", []string{"--listen-address=::1", "--rest-address=::1", "--metrics-server-address=::"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.ListenAddress == "::1" && o.cfg.RESTAddress == "::1" && o.cfg.MetricsAddress == "::"
			}},
		{"no shard note without relay", []string{"--relay=false"}, nil,
			func(o *nodeOptions) bool { return !strings.Contains(strings.Join(o.notes, "\n"), "relaying shard") }},
		{"content topics", []string{"--content-topic=/app/1/a/proto", "--content-topic=/app/1/b/proto"}, nil,
			func(o *nodeOptions) bool { return len(o.cfg.ContentTopics) == 2 }},
		{"store sync", []string{"--store=true", "--store-sync=true", "--store-sync-interval=60", "--store-sync-range=600", "--store-sync-relay-jitter=5"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.StoreSync && o.cfg.StoreSyncInterval == time.Minute && o.cfg.StoreSyncRange == 10*time.Minute && o.cfg.StoreSyncRelayJitter == 5*time.Second
			}},
		{"longest times", []string{"--store-sync-interval=4294967295", "--store-sync-range=+4294967295", "--filter-subscription-timeout=65535"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.StoreSyncInterval == 4294967295*time.Second && o.cfg.StoreSyncRange == 4294967295*time.Second &&
					o.cfg.FilterSubscriptionTimeout == 65535*time.Second
			}},
		{"largest numbers", []string{"--rln-relay-chain-id=18446744073709551615", "--rln-relay-membership-index=18446744073709551615",
			"--cluster-id=65535", "--max-connections=1", "--discv5-table-ip-limit=18446744073709551615"}, nil,
			func(o *nodeOptions) bool {
				r := o.cfg.RLNRelay
				return r.ChainID == math.MaxUint64 && *r.MembershipIndex == math.MaxUint64 && o.cfg.ClusterID == 65535 && o.cfg.MaxConnections == 1 &&
					o.cfg.Discovery.Discv5TableIPLimit == math.MaxInt
			}},
		{"ports shift leaves a port not in use", []string{"--ports-shift=60000", "--tcp-port=1000"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.TCPPort == 61000 && o.cfg.RESTPort == 8645 && o.cfg.MetricsPort == 8008
			}},
		{"filter and lightpush", []string{"--filter=true", "--filter-subscription-timeout=60", "--filter-max-peers-to-serve=5",
			"--filter-max-criteria=7", "--lightpush=true", "--filternode=/ip4/127.0.0.1/tcp/1/p2p/x", "--lightpushnode=/ip4/127.0.0.1/tcp/2/p2p/y"}, nil,
			func(o *nodeOptions) bool {
				c := o.cfg
				return c.Filter && c.Lightpush && c.FilterSubscriptionTimeout == time.Minute && c.FilterMaxPeersToServe == 5 &&
					c.FilterMaxCriteria == 7 && c.FilterNode == "/ip4/127.0.0.1/tcp/1/p2p/x" && c.LightpushNode == "/ip4/127.0.0.1/tcp/2/p2p/y"
			}},
		{"store", []string{"--store=true", "--store-message-db-url=postgres://u:p@127.0.0.1:5432/waku", "--store-message-retention-policy=capacity:100;size:1.5GB",
			"--store-message-db-vacuum=true", "--store-message-db-migration=false", "--store-max-num-db-connections=7",
			"--storenode=/ip4/127.0.0.1/tcp/1/p2p/x", "--rate-limit=store:10/1s", "--rate-limit=5/1m"}, nil,
			func(o *nodeOptions) bool {
				a := o.cfg.ArchiveConfig
				return o.cfg.Store && o.cfg.DBURL == "postgres://u:p@127.0.0.1:5432/waku" && a.Retention == "capacity:100;size:1.5GB" &&
					a.Vacuum && a.NoMigration && a.Postgres.MaxConns == 7 && o.cfg.StoreNode == "/ip4/127.0.0.1/tcp/1/p2p/x" &&
					slices.Equal(o.cfg.RateLimit, []string{"store:10/1s", "5/1m"})
			}},
		{"store defaults", []string{"--store=true"}, nil,
			func(o *nodeOptions) bool {
				a := o.cfg.ArchiveConfig
				return o.cfg.DBURL == "" && a.Retention == "time:172800" && !a.Vacuum && !a.NoMigration && a.Postgres.MaxConns == 50 && o.cfg.RateLimit == nil
			}},
		{"db-url alias", []string{"--db-url=sqlite:///var/lib/courier/store.sqlite3"}, nil,
			func(o *nodeOptions) bool { return o.cfg.DBURL == "sqlite:///var/lib/courier/store.sqlite3" }},
		{"allow origin", []string{"--rest-allow-origin=localhost:*", "--rest-allow-origin", "https://app.example"}, nil,
			func(o *nodeOptions) bool {
				return slices.Equal(o.cfg.RESTAllowOrigin, []string{"localhost:*", "https://app.example"})
			}},
		{"admin and cache", []string{"--rest-admin=true", "--rest-relay-cache-capacity=7"}, nil,
			func(o *nodeOptions) bool { return o.cfg.RESTAdmin && o.cfg.RESTCacheCapacity == 7 }},
		{"archive defaults", nil, nil,
			func(o *nodeOptions) bool {
				a := o.cfg.ArchiveConfig
				return o.cfg.DBURL == "" && a.Retention == "time:172800" && !a.Vacuum && !a.NoMigration && a.Postgres.MaxConns == 50
			}},
		{"postgres archive", []string{"--store-message-db-url=postgres://u:p@127.0.0.1:5432/db", "--store-message-retention-policy=capacity:100;size:2GB",
			"--store-message-db-vacuum=true", "--store-message-db-migration=false", "--store-max-num-db-connections=5"}, nil,
			func(o *nodeOptions) bool {
				a := o.cfg.ArchiveConfig
				return o.cfg.DBURL == "postgres://u:p@127.0.0.1:5432/db" && a.Retention == "capacity:100;size:2GB" && a.Vacuum && a.NoMigration && a.Postgres.MaxConns == 5
			}},
		{"db-url alias", []string{"--db-url=postgresql://h/db", "--store-message-retention-policy=none"}, nil,
			func(o *nodeOptions) bool {
				return o.cfg.DBURL == "postgresql://h/db" && o.cfg.ArchiveConfig.Retention == "none"
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearNodeEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o, err := parseNodeFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("%v %v: options %+v", tc.args, tc.env, o)
			}
		})
	}
}

// TestNodeFlagsIgnoredRLN: --rln-relay-* flags given while RLN relay is
// off are ignored, as nwaku ignores them, with one warning that names
// them (never their values).
func TestNodeFlagsIgnoredRLN(t *testing.T) {
	const suffix = " given without --rln-relay: ignored, as nwaku v0.38.1 ignores them (RLN relay is off)"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string // the warning, "" for none
	}{
		{nil, nil, ""},
		{[]string{"--rln-relay-cred-path=ks.json", "--rln-relay-cred-password=s3cret"}, nil, "--rln-relay-cred-path, --rln-relay-cred-password" + suffix},
		{[]string{"--rln-relay=false", "--rln-relay-membership-index=1", "--rln-relay-eth-private-key=0x01"}, nil,
			"--rln-relay-eth-private-key, --rln-relay-membership-index" + suffix},
		{nil, map[string]string{"WAKUNODE2_RLN_RELAY_CRED_PASSWORD": "s3cret"}, "--rln-relay-cred-password" + suffix},
		{[]string{"--rln-relay=true", "--rln-relay-cred-path=ks.json", "--rln-relay-cred-password=s3cret"}, nil, ""},
		// The Waku Network's preset turns RLN relay on with relay, not without.
		{[]string{"--preset=twn", "--rln-relay-cred-path=ks.json", "--rln-relay-cred-password=s3cret"}, nil, ""},
		{[]string{"--preset=twn", "--relay=false", "--rln-relay-cred-password=s3cret"}, nil, "--rln-relay-cred-password" + suffix},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			clearNodeEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o, err := parseNodeFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(o.warnings, want) {
				t.Errorf("warnings %q, want %q", o.warnings, want)
			}
		})
	}
}

// TestParseMsgSize runs nwaku's cases (tests/common/test_parse_size.nim)
// and the forms of nwaku's default, which --max-msg-size takes quietly.
func TestParseMsgSize(t *testing.T) {
	for in, want := range map[string]uint64{
		"15 KiB": 15360, "  1048576 B": 1048576, "150 B": 150, "150   b": 150, "150b": 150,
		"1024kib": 1048576, "1024KiB": 1048576, "1024KB": 1024000, "1024kb": 1024000,
		"1.5 kib": 1536, "1,5 kb": 1500, "0,5 kb": 500, "1.5 kb": 1500, "0.5 kb": 500,
		"   1.5 KB": 1500, "   0.5 kb": 500, "   1024 kib": 1048576,
		// nwaku's default in its forms; a number alone is bytes here.
		"150KiB": 153600, "153.6KB": 153600, "153600B": 153600, "153600": 153600, "150.0 KiB": 153600,
	} {
		if got, err := parseMsgSize(in); err != nil || got != want {
			t.Errorf("parseMsgSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"150K", "150 iB", "150 ib", "150 MB", "150 MiB", "150MiB", "150 K", "15..0 KiB", "", "abc", "-1KiB", ".5KiB", "1e3B", "150 KIB"} {
		if got, err := parseMsgSize(in); err == nil || !strings.Contains(err.Error(), "cannot be parsed as a size") {
			t.Errorf("parseMsgSize(%q) = %d, %v; want an error", in, got, err)
		}
	}
	for _, in := range []string{"150KiB", "153600B", "153.6 KB", "153600"} {
		clearNodeEnv(t)
		if _, err := parseNodeFlags([]string{"--max-msg-size=" + in}); err != nil {
			t.Errorf("--max-msg-size=%s: %v", in, err)
		}
	}
}

// TestNodeFlagsRefuse checks that values asking for what courier does not
// do are refused with one line naming the flag and the reason, and that
// malformed lines are usage errors; both exit 2 (see exit).
func TestNodeFlagsRefuse(t *testing.T) {
	cases := []struct {
		args    []string
		refused bool
		want    string
	}{
		{[]string{"--execute=true"}, true, "--execute=true: --execute belongs to `courier generateRlnKeystore`"},
		// Numbers out of a row's range, or of an int's, are out of range,
		// not "not a number".
		{[]string{"--rln-relay-epoch-sec=0"}, false, `--rln-relay-epoch-sec=0: "0" is out of range: want 1..4294967296 seconds`},
		{[]string{"--rln-relay-epoch-sec=-600"}, false, `--rln-relay-epoch-sec=-600: "-600" is out of range: want 1..4294967296 seconds`},
		{[]string{"--rln-relay-epoch-sec=4294967297"}, false, `--rln-relay-epoch-sec=4294967297: "4294967297" is out of range: want 1..4294967296 seconds`},
		{[]string{"--rln-relay-epoch-sec=99999999999999999999"}, false, `--rln-relay-epoch-sec=99999999999999999999: "99999999999999999999" is out of range: want 1..4294967296 seconds`},
		{[]string{"--rln-relay-epoch-sec=10m"}, false, `--rln-relay-epoch-sec=10m: "10m" is not a number`},
		{[]string{"--tcp-port=99999999999999999999"}, false, `--tcp-port=99999999999999999999: "99999999999999999999" is out of range: want 0..65535`},
		{[]string{"--tcp-port=-5"}, false, `--tcp-port=-5: "-5" is out of range: want 0..65535`},
		{[]string{"--discv5-udp-port=-5"}, false, `--discv5-udp-port=-5: "-5" is out of range: want 0..65535`},
		{[]string{"--rln-relay-user-message-limit=0"}, false, `--rln-relay-user-message-limit=0: "0" is out of range: want 1..65535`},
		{[]string{"--rln-relay-user-message-limit=65536"}, false, `--rln-relay-user-message-limit=65536: "65536" is out of range: want 1..65535`},
		{[]string{"--rln-relay-membership-index=-1"}, false, `--rln-relay-membership-index=-1: "-1" is out of range: want 0..18446744073709551615`},
		// Durations are checked in seconds before they are converted, so
		// none overflows into a negative one.
		{[]string{"--store=true", "--store-sync=true", "--store-sync-interval=9223372036854775807"}, false,
			`--store-sync-interval=9223372036854775807: "9223372036854775807" is out of range: want 1..4294967295 seconds`},
		{[]string{"--filter=true", "--filter-subscription-timeout=65536"}, false, `--filter-subscription-timeout=65536: "65536" is out of range: want 1..65535 seconds`},
		// nim-libp2p's ConnManager.new asserts max-connections > 0: no
		// value means "no limit".
		{[]string{"--max-connections=-1"}, false, `--max-connections=-1: "-1" is out of range: want 1..9223372036854775807`},
		{[]string{"--max-connections=0"}, false, `--max-connections=0: "0" is out of range: want 1..9223372036854775807`},
		{[]string{"--shard=1024"}, false, `--shard=1024: "1024" is out of range: want 0..1023`},
		{[]string{"--shard=-1"}, false, `--shard=-1: "-1" is out of range: want 0..1023`},
		{[]string{"--shard=one"}, false, `--shard=one: "one" is not a number`},
		// A shifted port in use must stay a port (nwaku's uint16 sum wraps).
		{[]string{"--ports-shift=6000"}, false, "--ports-shift=6000: shifts --tcp-port 60000 to 66000, which is out of range: want 0..65535"},
		{[]string{"--ports-shift=60000", "--tcp-port=0", "--rest=true"}, false, "--ports-shift=60000: shifts --rest-port 8645 to 68645, which is out of range: want 0..65535"},
		{[]string{"--max-msg-size=99999999999999999999"}, false, `--max-msg-size=99999999999999999999: "99999999999999999999" is out of range: want 0..18446744073709551615 bytes`},
		{[]string{"--max-msg-size=18014398509481984KiB"}, false, `"18014398509481984KiB" is out of range: want 0..18446744073709551615 bytes`},
		{[]string{"--max-msg-size=18446744073709551615B"}, true, "--max-msg-size=18446744073709551615B: only nwaku's default limit"},
		{[]string{"--preset=logos.dev"}, true, "--preset=logos.dev: the Logos Dev Network needs kademlia discovery, which this node does not support"},
		{[]string{"--preset=logos.dev", "--relay=false"}, true, "--preset=logos.dev: the Logos Dev Network needs kademlia discovery"},
		// nwaku maps cluster 1 to twn and 2 to logos.dev whatever --preset
		// says (tools/confutils/cli_args.nim toNetworkConf).
		{[]string{"--cluster-id=2"}, true, "--cluster-id=2: the Logos Dev Network (nwaku runs cluster 2 as --preset=logos.dev) needs kademlia discovery, which this node does not support"},
		{[]string{"--cluster-id=2", "--relay=false"}, true, "--cluster-id=2: the Logos Dev Network"},
		{[]string{"--cluster-id=2", "--preset=twn", "--relay=false"}, true, "--cluster-id=2: the Logos Dev Network"},
		{[]string{"--rendezvous=true"}, true, "--rendezvous=true: rendezvous is not supported by this node"},
		{[]string{"--nat=stun"}, false, "--nat=stun: want none, any, upnp, pmp or extip:<IPv4>"},
		{[]string{"--max-msg-size=1024KiB"}, true, "--max-msg-size=1024KiB: only nwaku's default limit of 150KiB (153600 bytes) is supported"},
		{[]string{"--max-msg-size=0.5 kb"}, true, "--max-msg-size=0.5 kb: only nwaku's default limit of 150KiB (153600 bytes) is supported"},
		// Text that is no size is a usage error that gives nwaku's forms
		// (waku/common/utils/parse_size_units.nim parseMsgSize).
		{[]string{"--max-msg-size=abc"}, false, `--max-msg-size=abc: "abc" cannot be parsed as a size: want a number and KiB, KB or B, as nwaku takes it (e.g. 150KiB, 153.6KB, 153600B)`},
		{[]string{"--max-msg-size=150K"}, false, `--max-msg-size=150K: "150K" cannot be parsed as a size: unit "K": want a number and KiB, KB or B`},
		{[]string{"--max-msg-size=15..0KiB"}, false, `--max-msg-size=15..0KiB: "15..0KiB" cannot be parsed as a size: want a number and KiB, KB or B`},
		{[]string{"--max-msg-size=1MiB"}, false, `--max-msg-size=1MiB: "1MiB" cannot be parsed as a size: nwaku takes no MiB (1MiB is 1024KiB): want a number and KiB, KB or B`},
		{[]string{"--mix=true"}, true, "--mix=true: mix is not supported by this node"},
		{[]string{"--relay-client=true"}, true, "--relay-client=true: circuit relay is not supported by this node"},
		{[]string{"--log-level=VERBOSE"}, false, "--log-level=VERBOSE: want TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL"},
		// The flag package's own errors name the flag with two dashes too.
		{[]string{"--relay=maybe"}, false, `--relay=maybe: "maybe" is not true or false`},
		{[]string{"--cluster-id=abc"}, false, `--cluster-id=abc: "abc" is not a number`},
		{[]string{"--tcp-port"}, false, "flag needs an argument: --tcp-port"},
		// IP addresses in nwaku's cli_args.nim, never names.
		{[]string{"--rest-address=notanip"}, false, "--rest-address=notanip: not an IP address"},
		{[]string{"--metrics-server-address=bad"}, false, "--metrics-server-address=bad: not an IP address"},
		{[]string{"--listen-address=localhost"}, false, "--listen-address=localhost: not an IP address"},
		{[]string{"--no-such-flag=1"}, false, "unknown flag --no-such-flag (neither an nwaku v0.38.1 flag nor courier's; see --help)"},
		{[]string{"--preset=foo"}, false, "Invalid --preset value passed: foo"},
		{[]string{"--relay", "false"}, false, `unexpected argument "false"`},
	}
	clearNodeEnv(t)
	for _, tc := range cases {
		_, err := parseNodeFlags(tc.args)
		var refused *refusedError
		var bad *usageError
		switch {
		case err == nil:
			t.Errorf("%v: accepted", tc.args)
		case tc.refused && !errors.As(err, &refused):
			t.Errorf("%v: %v is not a refusal", tc.args, err)
		case !tc.refused && !errors.As(err, &bad):
			t.Errorf("%v: %v is not a usage error", tc.args, err)
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%v: %q, want %q", tc.args, err, tc.want)
		}
	}
}

// intRows gives every kindInt row of nodeFlags its range as errors print
// it: nwaku's type (tools/confutils/cli_args.nim) or the node's tighter
// rule. extra are flags the row's largest value needs beside it.
var intRows = []struct {
	name, lo, hi, unit string
	extra              []string
}{
	{"rln-relay-chain-id", "0", "18446744073709551615", "", nil},                     // uint
	{"rln-relay-user-message-limit", "1", "65535", "", nil},                          // uint64, the circuit's limit
	{"rln-relay-epoch-sec", "1", "4294967296", "seconds", nil},                       // uint64, node.MaxEpochSec
	{"rln-relay-membership-index", "0", "18446744073709551615", "", nil},             // Option[uint]
	{"cluster-id", "0", "65535", "", nil},                                            // uint16
	{"tcp-port", "0", "65535", "", nil},                                              // Port
	{"ports-shift", "0", "65535", "", []string{"--tcp-port=0"}},                      // uint16
	{"max-connections", "1", "9223372036854775807", "", nil},                         // int, above 0 (nim-libp2p)
	{"ip-colocation-limit", "0", "9223372036854775807", "", nil},                     // int, 0: no limit
	{"peer-store-capacity", "1", "9223372036854775807", "", nil},                     // Option[int]
	{"num-shards-in-network", "0", "1024", "", nil},                                  // uint16, every shard id
	{"store-max-num-db-connections", "1", "2147483647", "", nil},                     // int, pgx's int32
	{"store-sync-interval", "1", "4294967295", "seconds", nil},                       // uint32
	{"store-sync-range", "1", "4294967295", "seconds", nil},                          // uint32
	{"store-sync-relay-jitter", "0", "4294967295", "seconds", nil},                   // uint32, 0: none
	{"filter-subscription-timeout", "1", "65535", "seconds", nil},                    // uint16
	{"filter-max-peers-to-serve", "1", "4294967295", "", nil},                        // uint32
	{"filter-max-criteria", "1", "4294967295", "", nil},                              // uint32
	{"rest-port", "0", "65535", "", nil},                                             // uint16
	{"rest-relay-cache-capacity", "1", "4294967295", "", nil},                        // uint32
	{"metrics-server-port", "0", "65535", "", nil},                                   // uint16
	{"discv5-udp-port", "0", "65535", "", nil},                                       // Port
	{"discv5-table-ip-limit", "0", "18446744073709551615", "", nil},                  // uint
	{"discv5-bucket-ip-limit", "0", "18446744073709551615", "", nil},                 // uint
	{"discv5-bits-per-hop", "-9223372036854775808", "9223372036854775807", "", nil},  // int
	{"websocket-port", "0", "65535", "", nil},                                        // Port
	{"http-max-connections", "-9223372036854775808", "9223372036854775807", "", nil}, // courier's int
}

// TestNodeFlagsIntRanges checks that every integer flag has its range, and
// that a value outside it, from the command line, the environment or a
// config file, gets the one message that gives the range and names where
// the value came from; the range's ends are taken.
func TestNodeFlagsIntRanges(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range intRows {
		listed[r.name] = true
	}
	for _, d := range nodeFlags {
		if d.kind == kindInt && (!listed[d.name] || d.bounds == nil) {
			t.Errorf("--%s: an integer flag without a range here (bounds %v)", d.name, d.bounds)
		}
	}
	dir := t.TempDir()
	for _, r := range intRows {
		t.Run(r.name, func(t *testing.T) {
			clearNodeEnv(t)
			want := "want " + r.lo + ".." + r.hi
			if r.unit != "" {
				want += " " + r.unit
			}
			lo, _ := new(big.Int).SetString(r.lo, 10)
			hi, _ := new(big.Int).SetString(r.hi, 10)
			below := new(big.Int).Sub(lo, big.NewInt(1)).String()
			above := new(big.Int).Add(hi, big.NewInt(1)).String()
			for _, v := range []string{r.lo, r.hi} {
				if _, err := parseNodeFlags(append([]string{"--" + r.name + "=" + v}, r.extra...)); err != nil {
					t.Errorf("--%s=%s: %v", r.name, v, err)
				}
			}
			for _, v := range []string{below, above, "99999999999999999999999"} {
				_, err := parseNodeFlags([]string{"--" + r.name + "=" + v})
				if msg := fmt.Sprintf("--%s=%s: %q is out of range: %s", r.name, v, v, want); err == nil || err.Error() != msg {
					t.Errorf("error %v, want %q", err, msg)
				}
			}
			env := "WAKUNODE2_" + strings.ToUpper(strings.ReplaceAll(r.name, "-", "_"))
			t.Setenv(env, above)
			_, err := parseNodeFlags(nil)
			if msg := fmt.Sprintf("%s=%q: %q is out of range: %s", env, above, above, want); err == nil || err.Error() != msg {
				t.Errorf("error %v, want %q", err, msg)
			}
			os.Unsetenv(env)
			path := filepath.Join(dir, r.name+".toml")
			if err := os.WriteFile(path, []byte(r.name+" = \""+below+"\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = parseNodeFlags([]string{"--config-file=" + path})
			if msg := fmt.Sprintf("config file %s: %s = %s: %q is out of range: %s", path, r.name, below, below, want); err == nil || err.Error() != msg {
				t.Errorf("error %v, want %q", err, msg)
			}
		})
	}
}

// TestNodeFlagsValueSources: the errors a row's own check gives (not the
// number check) name the environment variable or config file key the value
// came from, as the number check does, refusals too.
func TestNodeFlagsValueSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node.toml")
	if err := os.WriteFile(file, []byte("max-msg-size = \"1MiB\"\nnat = \"stun\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(yml, []byte("rendezvous: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		refused bool
		want    string
	}{
		{nil, map[string]string{"COURIER_MAX_MSG_SIZE": "1MiB"}, false,
			`COURIER_MAX_MSG_SIZE="1MiB": "1MiB" cannot be parsed as a size: nwaku takes no MiB (1MiB is 1024KiB): ` + errMsgSizeForms},
		{nil, map[string]string{"WAKUNODE2_MAX_MSG_SIZE": "1024KiB"}, true,
			`WAKUNODE2_MAX_MSG_SIZE="1024KiB": only nwaku's default limit of 150KiB (153600 bytes) is supported`},
		{nil, map[string]string{"WAKUNODE2_NAT": "stun"}, false, `WAKUNODE2_NAT="stun": want none, any, upnp, pmp or extip:<IPv4>`},
		{nil, map[string]string{"WAKUNODE2_RENDEZVOUS": "true"}, true, `WAKUNODE2_RENDEZVOUS="true": rendezvous is not supported by this node`},
		{nil, map[string]string{"WAKUNODE2_CLUSTER_ID": "2"}, true, `WAKUNODE2_CLUSTER_ID="2": the Logos Dev Network (nwaku runs cluster 2 as --preset=logos.dev)`},
		{nil, map[string]string{"WAKUNODE2_PORTS_SHIFT": "6000"}, false,
			`WAKUNODE2_PORTS_SHIFT="6000": shifts --tcp-port 60000 to 66000, which is out of range: want 0..65535`},
		{[]string{"--config-file=" + file}, nil, false,
			"config file " + file + `: max-msg-size = 1MiB: "1MiB" cannot be parsed as a size: nwaku takes no MiB`},
		{[]string{"--config-file=" + file, "--max-msg-size=150KiB"}, nil, false, "config file " + file + `: nat = stun: want none, any`},
		{[]string{"--config-file=" + yml}, nil, true, "config file " + yml + ": rendezvous = true: rendezvous is not supported by this node"},
		// The command line wins, and is named as itself.
		{[]string{"--max-msg-size=2KiB"}, map[string]string{"COURIER_MAX_MSG_SIZE": "1MiB"}, true, "--max-msg-size=2KiB: only nwaku's default"},
	} {
		clearNodeEnv(t)
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, err := parseNodeFlags(tc.args)
		var refused *refusedError
		var bad *usageError
		switch {
		case err == nil:
			t.Errorf("%v %v: accepted", tc.args, tc.env)
		case tc.refused && !errors.As(err, &refused), !tc.refused && !errors.As(err, &bad):
			t.Errorf("%v %v: %v (%T), want refused %v", tc.args, tc.env, err, err, tc.refused)
		case !strings.HasPrefix(err.Error(), tc.want):
			t.Errorf("%v %v: %q, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}

// TestNodeFlagsRefuseEveryOwnedRow gives each refused row a value that
// asks for its feature and expects the refusal to name the row.
func TestNodeFlagsRefuseEveryOwnedRow(t *testing.T) {
	clearNodeEnv(t)
	for _, d := range nodeFlags {
		if d.apply != nil || d.with != "" {
			continue
		}
		value := map[kind]string{kindBool: "true", kindInt: "12345", kindList: "x", kindString: "x"}[d.kind]
		_, err := parseNodeFlags([]string{"--" + d.name + "=" + value})
		var refused *refusedError
		if !errors.As(err, &refused) || refused.flag != d.name {
			t.Errorf("--%s=%s: %v, want a refusal naming it", d.name, value, err)
		}
	}
}

func TestIsNodeInvocation(t *testing.T) {
	cases := []struct {
		argv0   string
		args    []string
		environ []string
		want    bool
	}{
		{"/usr/bin/wakunode2", nil, nil, true},
		{"wakunode2", []string{"--help"}, nil, true},
		{"courier", []string{"--relay=true"}, nil, true},
		{"courier", []string{"node", "--relay=true"}, nil, false},
		{"courier", []string{"--help"}, nil, false},
		{"courier", nil, nil, false},
		{"./courier", []string{"bench"}, nil, false},
		// No arguments: the environment decides, as for nwaku's docker image.
		{"courier", nil, []string{"HOME=/root", "WAKUNODE2_TCP_PORT=61101", "WAKUNODE2_REST=TRUE"}, true},
		{"/bin/courier", nil, []string{"COURIER_CLUSTER_ID=16"}, true},
		{"courier", nil, []string{"WAKUNODE2_CONFIG_FILE=/etc/waku.toml"}, true},
		{"courier", nil, []string{"COURIER_E2E_RACE=1", "WAKUNODE2_NO_SUCH_FLAG=1", "PATH=/bin"}, false},
		{"courier", nil, []string{"TCP_PORT=1", "wakunode2_tcp_port=1"}, false},
		{"courier", []string{"bench"}, []string{"WAKUNODE2_TCP_PORT=61101"}, false},
	}
	for _, tc := range cases {
		if got := isNodeInvocation(tc.argv0, tc.args, tc.environ); got != tc.want {
			t.Errorf("isNodeInvocation(%q, %q, %q) = %v, want %v", tc.argv0, tc.args, tc.environ, got, tc.want)
		}
	}
}
