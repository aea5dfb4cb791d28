package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/rln"
)

// nodeOptions collects what the node's flags set: the node's Config and
// the settings main itself acts on.
type nodeOptions struct {
	cfg        node.Config
	logLevel   slog.Level
	logJSON    bool
	configFile string
	portsShift int
	wsSupport  bool
	wsPort     int
	preset     string
	entries    entryNodes
	keystore   keystoreOptions
	// notes are printed at start: defaults that differ from nwaku's.
	notes []string
	// warnings are logged at start at WARN: flags given that have no
	// effect.
	warnings []string
}

// nodeFlags is the node's command line: every flag of nwaku v0.38.1
// (tools/confutils/cli_args.nim, copied with its defaults into
// testdata/nwaku-v0.38.1-flags.txt) followed by courier's own. Each row
// is one of:
//
//   - implemented: apply is set and gives the flag nwaku's meaning; it is
//     called with the flag's value, or its default when not given.
//   - accepted but refused: apply is nil; a value for which quiet is false
//     (default: anything but nwaku's default) stops the node before it
//     starts with "--flag=value: <refuse>" and exit code 1.
//
// To implement a refused flag: add the field to node.Config (or
// nodeOptions), replace refuse/quiet by an apply that sets it (use
// v.str(), v.bool(), v.int() or v.vals; the default arrives when the flag
// was not given), and flip the flags that only matter with it the same way.
// TestNodeFlagsCoverNwaku and TestNodeFlagsRefuse keep the table honest.
var nodeFlags = []flagDef{
	// Configuration and logs.
	{name: "config-file", usage: "TOML or YAML file with flag values (keys named like the flags)",
		apply: func(o *nodeOptions, v flagVal) error { o.configFile = v.str(); return nil }},
	{name: "log-level", nwaku: "INFO", usage: "TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL",
		apply: func(o *nodeOptions, v flagVal) (err error) { o.logLevel, err = parseLogLevel(v.str()); return err }},
	{name: "log-format", nwaku: "TEXT", usage: "TEXT or JSON",
		apply: func(o *nodeOptions, v flagVal) error {
			switch strings.ToUpper(v.str()) {
			case "TEXT":
				o.logJSON = false
			case "JSON":
				o.logJSON = true
			default:
				return fmt.Errorf("want TEXT or JSON")
			}
			return nil
		}},

	// RLN relay (17/WAKU2-RLN-RELAY). The first rows down to
	// rln-relay-epoch-sec are also generateRlnKeystore's (keystoreFlags).
	{name: "rln-relay-cred-path", usage: "RLN keystore with the node's membership (nwaku's format)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.CredPath = v.str(); return nil }},
	{name: "rln-relay-eth-client-address", kind: kindList, nwaku: "http://localhost:8540/", usage: "Ethereum JSON-RPC endpoint, http(s):// or ws(s):// (repeatable; tried in order)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.EthClientAddresses = v.vals; return nil }},
	{name: "rln-relay-eth-contract-address", usage: "RLN membership contract address",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.EthContractAddress = v.str(); return nil }},
	{name: "rln-relay-chain-id", kind: kindInt, nwaku: "0", usage: "chain id of the contract (0: ask the RPC endpoint)", bounds: &nimUint64,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.ChainID = v.uint(); return nil }},
	{name: "rln-relay-cred-password", usage: "password of the RLN keystore",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.CredPassword = v.str(); return nil }},
	{name: "rln-relay-eth-private-key", usage: "Ethereum private key (hex) that sends the registration (generateRlnKeystore)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.EthPrivateKey = v.str(); return nil }},
	// rln-relay-user-message-limit: nwaku's uint64, within what the RLN
	// circuit proves (rln.MaxUserMessageLimit).
	{name: "rln-relay-user-message-limit", kind: kindInt, nwaku: "1", usage: "messages per epoch: registered by generateRlnKeystore; for a node, when given, a cap below the membership's limit",
		bounds: &intRange{lo: 1, hi: rln.MaxUserMessageLimit},
		apply: func(o *nodeOptions, v flagVal) error {
			o.keystore.userMessageLimit = v.uint()
			if v.given {
				o.cfg.RLNRelay.UserMessageLimit = v.uint()
			}
			return nil
		}},
	{name: "rln-relay-epoch-sec", kind: kindInt, nwaku: "1", usage: "epoch length in seconds (The Waku Network: 600)",
		bounds: &intRange{lo: 1, hi: node.MaxEpochSec, unit: "seconds"},
		apply:  func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.EpochSec = uint64(v.int()); return nil }},
	{name: "rln-relay", kind: kindBool, nwaku: "false", usage: "RLN relay: relay only messages with a valid rate-limit proof (needs --relay)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.Enabled = v.bool(); return nil }},
	{name: "rln-relay-membership-index", kind: kindInt, usage: "tree index of the keystore credential to use (default 0)", bounds: &nimUint64,
		apply: func(o *nodeOptions, v flagVal) error {
			if v.given {
				i := v.uint()
				o.cfg.RLNRelay.MembershipIndex = &i
			}
			return nil
		}},
	// rln-relay-dynamic: nwaku v0.38.1 has only the on-chain group
	// manager, and so has courier: both values mean it.
	{name: "rln-relay-dynamic", kind: kindBool, nwaku: "false", usage: "on-chain group management (the only kind, whatever the value)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.Dynamic = v.bool(); return nil }},
	{name: "execute", kind: kindBool, nwaku: "false", usage: "generateRlnKeystore: register on chain",
		refuse: "--execute belongs to `courier generateRlnKeystore`", quiet: whenFalse},

	// max-msg-size: only nwaku's default, in any of its forms; other
	// sizes are refused, text that is no size is a usage error.
	{name: "max-msg-size", nwaku: "150KiB", usage: "largest WakuMessage: a number and KiB, KB or B (only 150KiB, 153600 bytes, is supported)",
		apply: applyMaxMsgSize},
	{name: "protected-shard", kind: kindList, usage: "shard:pubkey of a signed shard",
		refuse: "protected (signed) shards are not supported by this node", quiet: whenEmpty},
	{name: "mode", nwaku: "noMode", usage: "Core or Edge",
		refuse: "--mode presets are not supported; give the protocols' own flags", quiet: oneOf("noMode", "")},
	{name: "preset", usage: "twn (The Waku Network: cluster 1, RLN relay with relay on) or logos.dev (refused); see applyPreset",
		apply: func(o *nodeOptions, v flagVal) error { o.preset = v.str(); return nil }},

	// Identity, addresses and connections.
	{name: "cluster-id", kind: kindInt, nwaku: "0", usage: "cluster id (0..65535)", bounds: &nimUint16,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ClusterID = uint16(v.uint()); return nil }},
	// agent-string: courier names itself; nwaku's default names nwaku.
	{name: "agent-string", nwaku: "logos-delivery-<git version>", def: strPtr(node.Version), usage: "libp2p agent string",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.AgentString = v.str(); return nil }},
	{name: "nodekey", usage: "hex secp256k1 private key (default: kept in --data-dir)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.NodeKey = v.str(); return nil }},
	{name: "listen-address", nwaku: "0.0.0.0", usage: "IPv4 or IPv6 address to listen on",
		apply: func(o *nodeOptions, v flagVal) error { return ipAddress(&o.cfg.ListenAddress, v) }},
	{name: "tcp-port", kind: kindInt, nwaku: "60000", usage: "libp2p TCP port (0: any free port)", bounds: &portRange,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.TCPPort = v.int(); return nil }},
	{name: "ports-shift", kind: kindInt, nwaku: "0", usage: "added to the TCP, WebSocket, REST, metrics and discv5 UDP ports", bounds: &nimUint16,
		apply: func(o *nodeOptions, v flagVal) error { o.portsShift = v.int(); return nil }},
	// nat: nwaku's "any" sends UPnP/NAT-PMP probes off the machine; courier
	// does nothing of the kind unless asked.
	{name: "nat", nwaku: "any", def: strPtr("none"), usage: "none, extip:<IPv4> (announced in the ENR), or any, upnp or pmp (go-libp2p's port mapping)",
		apply: func(o *nodeOptions, v flagVal) error {
			nat := v.str()
			if ip, ok := strings.CutPrefix(nat, "extip:"); ok {
				if a := net.ParseIP(ip); a == nil || a.To4() == nil {
					return fmt.Errorf("extip: wants an IPv4 address")
				}
			} else if nat != "none" && nat != "any" && nat != "upnp" && nat != "pmp" {
				return fmt.Errorf("want none, any, upnp, pmp or extip:<IPv4>")
			}
			o.cfg.Discovery.NAT = nat
			return nil
		}},
	{name: "ext-multiaddr", kind: kindList, usage: "external multiaddr to announce (repeatable)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.ExtMultiaddrs = v.vals; return nil }},
	{name: "ext-multiaddr-only", kind: kindBool, nwaku: "false", usage: "announce only --ext-multiaddr",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.ExtMultiaddrOnly = v.bool(); return nil }},
	// max-connections: nwaku's int, but nim-libp2p's ConnManager.new
	// asserts it is above 0 (there is no "no limit").
	{name: "max-connections", kind: kindInt, nwaku: "150", usage: "most libp2p connections", bounds: &intRange{lo: 1, hi: math.MaxInt64},
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.MaxConnections = v.int(); return nil }},
	{name: "relay-service-ratio", nwaku: "50:50", usage: "relay:service share of max-connections",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.RelayServiceRatio = v.str(); return nil }},
	{name: "ip-colocation-limit", kind: kindInt, nwaku: "5", usage: "most peers from one IP (0: no limit)", bounds: &intRange{hi: math.MaxInt64},
		apply: func(o *nodeOptions, v flagVal) error {
			o.cfg.Discovery.IPColocationLimit = v.int()
			if v.int() == 0 {
				o.cfg.Discovery.IPColocationLimit = -1
			}
			return nil
		}},
	{name: "peer-store-capacity", kind: kindInt, usage: "most peers kept by the peer manager (default 1000)", bounds: &intRange{lo: 1, hi: math.MaxInt64},
		apply: func(o *nodeOptions, v flagVal) error {
			if v.given {
				o.cfg.Discovery.PeerStoreCapacity = v.int()
			}
			return nil
		}},
	{name: "peer-persistence", kind: kindBool, nwaku: "false", usage: "keep known peers in <data-dir>/peers.json across restarts",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.PeerPersistence = v.bool(); return nil }},
	{name: "dns-addrs-name-server", kind: kindList, nwaku: "1.1.1.1,1.0.0.1", usage: "name server for DNS discovery: IP (port 53) or, courier's extension, IP:port (repeatable)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.DNSNameServers = v.vals; return nil }},
	{name: "dns4-domain-name", usage: "domain name of the node's public IPv4 address (announced as /dns4; resolved at start for the ENR's ip)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.DNS4DomainName = v.str(); return nil }},
	{name: "relay-client", kind: kindBool, nwaku: "false", usage: "circuit-relay client",
		refuse: "circuit relay is not supported by this node", quiet: whenFalse},

	// Relay.
	{name: "relay", kind: kindBool, nwaku: "true", usage: "enable the relay protocol",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Relay = v.bool(); return nil }},
	{name: "relay-peer-exchange", kind: kindBool, nwaku: "false", usage: "gossipsub peer exchange",
		refuse: "gossipsub peer exchange is not supported by this node", quiet: whenFalse},
	{name: "relay-shard-manager", kind: kindBool, nwaku: "false", usage: "shard-aware peer manager",
		refuse: "the shard-aware peer manager is not supported by this node", quiet: whenFalse},
	{name: "entry-node", kind: kindList, usage: "enrtree: (DNS discovery), enr: (discv5 bootstrap and static node) or multiaddr (static node); repeatable",
		apply: func(o *nodeOptions, v flagVal) (err error) { o.entries, err = parseEntryNodes(v.vals); return err }},
	{name: "staticnode", kind: kindList, usage: "peer multiaddr with /p2p/<id> to keep connected",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.StaticNodes = v.vals; return nil }},
	// keep-alive: ignored by nwaku since v0.37, and by courier.
	{name: "keep-alive", kind: kindBool, nwaku: "true", usage: "ignored (nwaku: deprecated)",
		apply: func(*nodeOptions, flagVal) error { return nil }},
	// num-shards-in-network: nwaku's uint16, at most the 1024 shard ids
	// (node.MaxShardsInNetwork).
	{name: "num-shards-in-network", kind: kindInt, nwaku: "0", usage: "shards of the cluster under autosharding; 0 is static sharding",
		bounds: &intRange{hi: node.MaxShardsInNetwork},
		apply:  func(o *nodeOptions, v flagVal) error { o.cfg.NumShardsInNetwork = v.int(); return nil }},
	{name: "shard", kind: kindList, usage: "shard to relay (repeatable; default: every shard under autosharding, 0 under static)",
		apply: func(o *nodeOptions, v flagVal) error {
			for _, s := range v.vals {
				if err := checkInt(s, &shardRange); err != nil {
					return err
				}
				x, _ := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 16)
				o.cfg.Shards = append(o.cfg.Shards, uint16(x))
			}
			return nil
		}},
	{name: "content-topic", kind: kindList, usage: "content topic whose shard is relayed (autosharding)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ContentTopics = v.vals; return nil }},

	// Store.
	{name: "store", kind: kindBool, nwaku: "false", usage: "archive relayed messages",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Store = v.bool(); return nil }},
	{name: "storenode", usage: "store peer multiaddr (default peer of the REST store API and courier query)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.StoreNode = v.str(); return nil }},
	{name: "store-message-retention-policy", nwaku: "time:172800", usage: "time:<s>, capacity:<n>, size:<xMB|xGB>, joined by ; or none",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ArchiveConfig.Retention = v.str(); return nil }},
	{name: "store-message-db-url", nwaku: "sqlite://store.sqlite3",
		usage: "archive: sqlite://PATH (index at PATH, segments in PATH.segments) or postgres://user:password@host:port/db; not given with --data-dir: <data-dir>/archive",
		apply: applyDBURL},
	{name: "store-message-db-vacuum", kind: kindBool, nwaku: "false", usage: "vacuum the archive's index at start",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ArchiveConfig.Vacuum = v.bool(); return nil }},
	{name: "store-message-db-migration", kind: kindBool, nwaku: "true", usage: "migrate the archive's schema at start (false: refuse one not current)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ArchiveConfig.NoMigration = !v.bool(); return nil }},
	// store-max-num-db-connections: nwaku's int, within pgx's int32.
	{name: "store-max-num-db-connections", kind: kindInt, nwaku: "50", usage: "most Postgres connections", bounds: &intRange{lo: 1, hi: math.MaxInt32},
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.ArchiveConfig.Postgres.MaxConns = v.int(); return nil }},
	{name: "store-resume", kind: kindBool, nwaku: "false", usage: "fill the archive from a store peer at start (needs --store)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.StoreResume = v.bool(); return nil }},
	{name: "store-sync", kind: kindBool, nwaku: "false", usage: "store sync protocol (needs --store)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.StoreSync = v.bool(); return nil }},
	{name: "store-sync-interval", kind: kindInt, nwaku: "300", usage: "seconds between syncs", bounds: &secondsUint32,
		apply: func(o *nodeOptions, v flagVal) error { return seconds(&o.cfg.StoreSyncInterval, v) }},
	{name: "store-sync-range", kind: kindInt, nwaku: "3600", usage: "seconds synced", bounds: &secondsUint32,
		apply: func(o *nodeOptions, v flagVal) error { return seconds(&o.cfg.StoreSyncRange, v) }},
	{name: "store-sync-relay-jitter", kind: kindInt, nwaku: "20", usage: "seconds of relay jitter (0: none)", bounds: &nimUint32Seconds,
		apply: relayJitter},

	// Filter and lightpush.
	{name: "filter", kind: kindBool, nwaku: "false", usage: "filter protocol (service)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Filter = v.bool(); return nil }},
	{name: "filternode", usage: "filter peer multiaddr (the REST filter API's service node)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.FilterNode = v.str(); return nil }},
	{name: "filter-subscription-timeout", kind: kindInt, nwaku: "300", usage: "seconds a filter subscription lives without a request",
		bounds: &intRange{lo: 1, hi: math.MaxUint16, unit: "seconds"},
		apply:  func(o *nodeOptions, v flagVal) error { return seconds(&o.cfg.FilterSubscriptionTimeout, v) }},
	{name: "filter-max-peers-to-serve", kind: kindInt, nwaku: "1000", usage: "filter clients served", bounds: &positiveUint32,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.FilterMaxPeersToServe = v.int(); return nil }},
	{name: "filter-max-criteria", kind: kindInt, nwaku: "1000", usage: "criteria per filter client", bounds: &positiveUint32,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.FilterMaxCriteria = v.int(); return nil }},
	{name: "lightpush", kind: kindBool, nwaku: "false", usage: "lightpush protocol (service; needs relay)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Lightpush = v.bool(); return nil }},
	{name: "lightpushnode", usage: "lightpush peer multiaddr (the REST lightpush API's service node)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.LightpushNode = v.str(); return nil }},
	// reliability: nwaku's delivery service for its library API, which the
	// node command does not have.
	{name: "reliability", kind: kindBool, nwaku: "true", usage: "ignored (nwaku: library send/receive reliability)",
		apply: func(*nodeOptions, flagVal) error { return nil }},

	// REST and metrics.
	{name: "rest", kind: kindBool, nwaku: "false", usage: "serve the REST API",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.REST = v.bool(); return nil }},
	{name: "rest-address", nwaku: "127.0.0.1", usage: "REST API listen address",
		apply: func(o *nodeOptions, v flagVal) error { return ipAddress(&o.cfg.RESTAddress, v) }},
	{name: "rest-port", kind: kindInt, nwaku: "8645", usage: "REST API port", bounds: &portRange,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RESTPort = v.int(); return nil }},
	{name: "rest-relay-cache-capacity", kind: kindInt, nwaku: "50", usage: "messages the REST relay cache keeps, all topics together", bounds: &positiveUint32,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RESTCacheCapacity = v.int(); return nil }},
	{name: "rest-admin", kind: kindBool, nwaku: "false", usage: "serve the /admin/v1 routes",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RESTAdmin = v.bool(); return nil }},
	{name: "rest-allow-origin", kind: kindList, usage: "origin allowed by CORS (repeatable; * and ? wildcards)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RESTAllowOrigin = v.vals; return nil }},
	{name: "metrics-server", kind: kindBool, nwaku: "false", usage: "serve Prometheus metrics on /metrics",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.MetricsServer = v.bool(); return nil }},
	{name: "metrics-server-address", nwaku: "127.0.0.1", usage: "metrics listen address",
		apply: func(o *nodeOptions, v flagVal) error { return ipAddress(&o.cfg.MetricsAddress, v) }},
	{name: "metrics-server-port", kind: kindInt, nwaku: "8008", usage: "metrics port", bounds: &portRange,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.MetricsPort = v.int(); return nil }},
	// metrics-logging: as nwaku, the totals every 10 minutes, with
	// --metrics-server only (waku/node/waku_metrics.nim).
	{name: "metrics-logging", kind: kindBool, nwaku: "true", usage: "log the node's totals every 10 minutes (with --metrics-server)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.MetricsLogging = v.bool(); return nil }},

	// Discovery.
	{name: "dns-discovery", kind: kindBool, nwaku: "false", usage: "fetch --dns-discovery-url at start (EIP-1459)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.DNSDiscovery = v.bool(); return nil }},
	// As in nwaku v0.38.1, a URL turns DNS discovery on by itself.
	{name: "dns-discovery-url", usage: "enrtree://<key>@<fqdn>; turns DNS discovery on",
		apply: func(o *nodeOptions, v flagVal) error {
			o.cfg.Discovery.DNSDiscoveryURL = v.str()
			o.cfg.Discovery.DNSDiscovery = o.cfg.Discovery.DNSDiscovery || v.str() != ""
			return nil
		}},
	{name: "discv5-discovery", kind: kindBool, usage: "discovery v5",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.Discv5 = v.bool(); return nil }},
	{name: "discv5-udp-port", kind: kindInt, nwaku: "9000", usage: "discv5 UDP port (0: any free port)", bounds: &portRange,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.Discv5UDPPort = v.int(); return nil }},
	{name: "discv5-bootstrap-node", kind: kindList, usage: "discv5 bootstrap ENR (repeatable)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.Discv5BootstrapNodes = v.vals; return nil }},
	{name: "discv5-enr-auto-update", kind: kindBool, nwaku: "false", usage: "update the ENR from what peers see",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.Discv5ENRAutoUpdate = v.bool(); return nil }},
	// The discv5 limits are nwaku's uint; the node takes only
	// go-ethereum's values, so a value beyond an int is as refused as
	// math.MaxInt.
	{name: "discv5-table-ip-limit", kind: kindInt, nwaku: "10", usage: "discv5 table IP limit (go-ethereum's 10 only)", bounds: &nimUint64,
		apply: func(o *nodeOptions, v flagVal) error {
			o.cfg.Discovery.Discv5TableIPLimit = capInt(v.uint())
			return nil
		}},
	{name: "discv5-bucket-ip-limit", kind: kindInt, nwaku: "2", usage: "discv5 bucket IP limit (go-ethereum's 2 only)", bounds: &nimUint64,
		apply: func(o *nodeOptions, v flagVal) error {
			o.cfg.Discovery.Discv5BucketIPLimit = capInt(v.uint())
			return nil
		}},
	{name: "discv5-bits-per-hop", kind: kindInt, nwaku: "1", usage: "discv5 bits per hop (go-ethereum's 1 only)", bounds: &nimInt,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.Discv5BitsPerHop = v.int(); return nil }},
	{name: "peer-exchange", kind: kindBool, nwaku: "true", usage: "serve peer exchange",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.PeerExchange = v.bool(); return nil }},
	{name: "peer-exchange-node", usage: "multiaddr with /p2p/<id> of a node to ask for peers (peer exchange client)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.Discovery.PeerExchangeNode = v.str(); return nil }},
	// rendezvous: nwaku serves it by default; courier does not.
	{name: "rendezvous", kind: kindBool, nwaku: "true", usage: "serve rendezvous",
		refuse: "rendezvous is not supported by this node", quiet: whenFalse},
	{name: "mix", kind: kindBool, nwaku: "false", usage: "mix protocol",
		refuse: "mix is not supported by this node", quiet: whenFalse},
	{name: "mixkey", usage: "mix key", with: "mix"},
	{name: "mixnode", kind: kindList, usage: "mix node", with: "mix"},
	{name: "enable-kad-discovery", kind: kindBool, nwaku: "false", usage: "kademlia discovery",
		refuse: "kademlia discovery is not supported by this node", quiet: whenFalse},
	{name: "kad-bootstrap-node", kind: kindList, usage: "kademlia bootstrap node", with: "enable-kad-discovery"},

	// WebSocket.
	{name: "websocket-support", kind: kindBool, nwaku: "false", usage: "also listen for libp2p over WebSocket",
		apply: func(o *nodeOptions, v flagVal) error { o.wsSupport = v.bool(); return nil }},
	{name: "websocket-port", kind: kindInt, nwaku: "8000", usage: "WebSocket port (with --websocket-support or --websocket-secure-support)", bounds: &portRange,
		apply: func(o *nodeOptions, v flagVal) error { o.wsPort = v.int(); return nil }},
	{name: "websocket-secure-support", kind: kindBool, nwaku: "false", usage: "serve secure WebSocket (/wss) on --websocket-port; turns WebSocket on",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.WebSocketSecure = v.bool(); return nil }},
	{name: "websocket-secure-key-path", usage: "PEM private key for /wss",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.WebSocketSecureKeyPath = v.str(); return nil }},
	{name: "websocket-secure-cert-path", usage: "PEM certificate chain for /wss",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.WebSocketSecureCertPath = v.str(); return nil }},

	{name: "rate-limit", kind: kindList, usage: "[store:|storev3:|lightpush:|px:|filter:]volume/period, e.g. store:100/1s (repeatable; store applies)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RateLimit = v.vals; return nil }},

	// courier's own flags.
	{name: "data-dir", courierOnly: true, usage: "directory for the node key and the archive (default: the working directory for the archive)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.DataDir = v.str(); return nil }},
	{name: "pubsub-topic", kind: kindList, courierOnly: true, usage: "further static-shard pubsub topic to relay (repeatable)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.PubsubTopics = v.vals; return nil }},
	{name: "db-url", courierOnly: true, usage: `alias of --store-message-db-url; "embedded": <data-dir>/archive`,
		apply: applyDBURL},
	{name: "http-max-connections", kind: kindInt, courierOnly: true, usage: "connections the REST API and the metrics server each hold at once; at the limit the oldest idle or slow one is closed (0: 1024, negative: no limit)", bounds: &nimInt,
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.HTTPMaxConnections = v.int(); return nil }},
	{name: "rln-relay-circuit-dir", courierOnly: true, usage: "directory of zerokit's RLN circuit files (rln_final.zkey, graph.bin) a node with a membership proves with " +
		"(default $COURIER_RLN_CIRCUIT_DIR, else $XDG_DATA_HOME/courier/rln, else ~/.local/share/courier/rln)",
		apply: func(o *nodeOptions, v flagVal) error { o.cfg.RLNRelay.CircuitDir = v.str(); return nil }},
}

// applyDBURL sets the archive's URL from --store-message-db-url or its
// alias --db-url when given; not given, the node's default applies
// (<data-dir>/archive with --data-dir, else nwaku's sqlite://store.sqlite3).
func applyDBURL(o *nodeOptions, v flagVal) error {
	if v.given {
		o.cfg.DBURL = v.str()
	}
	return nil
}

// seconds sets d from a flag in whole seconds, as nwaku's uint32 and
// uint16 flags take them; the row's bounds keep the product within a
// time.Duration.
func seconds(d *time.Duration, v flagVal) error {
	*d = time.Duration(v.uint()) * time.Second
	return nil
}

// relayJitter sets --store-sync-relay-jitter. 0 is no jitter, as nwaku
// takes its uint32 (tools/confutils/cli_args.nim; a round then reaches up
// to now), which node.Config spells as a negative duration, its zero being
// the 20 s default.
func relayJitter(o *nodeOptions, v flagVal) error {
	if v.uint() == 0 {
		o.cfg.StoreSyncRelayJitter = -1
		return nil
	}
	return seconds(&o.cfg.StoreSyncRelayJitter, v)
}

// capInt returns u, or math.MaxInt when u is beyond an int.
func capInt(u uint64) int {
	return int(min(u, math.MaxInt))
}

// ipAddress sets *addr from a flag that nwaku types as an IpAddress
// (tools/confutils/cli_args.nim): an IPv4 or IPv6 address, never a name.
func ipAddress(addr *string, v flagVal) error {
	if net.ParseIP(v.str()) == nil {
		return fmt.Errorf("not an IP address")
	}
	*addr = v.str()
	return nil
}

// applyMaxMsgSize accepts the sizes that equal nwaku's default, 150 KiB;
// another size is a *refusedError, text that does not parse an error that
// gives the forms nwaku takes.
func applyMaxMsgSize(_ *nodeOptions, v flagVal) error {
	n, err := parseMsgSize(v.str())
	if err != nil {
		return err
	}
	if n != message.MaxSize {
		return &refusedError{flag: "max-msg-size", value: v.str(), reason: "only nwaku's default limit of 150KiB (153600 bytes) is supported"}
	}
	return nil
}

// errMsgSizeForms is the end of parseMsgSize's errors.
const errMsgSizeForms = "want a number and KiB, KB or B, as nwaku takes it (e.g. 150KiB, 153.6KB, 153600B)"

// parseMsgSize parses a size in bytes as nwaku's parseMsgSize does
// (waku/common/utils/parse_size_units.nim): a number, with a fraction
// after "." or "," if need be, then KiB (1024 bytes), KB (1000) or B, the
// K and B in either case, spaces around the unit allowed; the bytes are
// the product, the fraction dropped. A number alone, which nwaku refuses,
// is taken as bytes. A size beyond a uint64 (nwaku's type) is out of
// range; a whole number is multiplied exactly, so that
// 18446744073709551615B is not.
func parseMsgSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) && (t[end] >= '0' && t[end] <= '9' || end > 0 && (t[end] == '.' || t[end] == ',')) {
		end++
	}
	num, unit := strings.Replace(t[:end], ",", ".", 1), strings.TrimSpace(t[end:])
	value, err := strconv.ParseFloat(num, 64) // +Inf with ErrRange beyond a float64: out of range below
	if err != nil && !errors.Is(err, strconv.ErrRange) || strings.Count(t[:end], ".")+strings.Count(t[:end], ",") > 1 {
		return 0, fmt.Errorf("%q cannot be parsed as a size: %s", s, errMsgSizeForms)
	}
	var mul uint64
	switch unit {
	case "KiB", "kiB", "Kib", "kib":
		mul = 1024
	case "KB", "kB", "Kb", "kb":
		mul = 1000
	case "B", "b", "":
		mul = 1
	case "MiB", "MB", "mib", "mb", "Mb", "mB", "Mib", "miB":
		return 0, fmt.Errorf("%q cannot be parsed as a size: nwaku takes no %s (1MiB is 1024KiB): %s", s, unit, errMsgSizeForms)
	default:
		return 0, fmt.Errorf("%q cannot be parsed as a size: unit %q: %s", s, unit, errMsgSizeForms)
	}
	outOfRange := fmt.Errorf("%q is out of range: want %s", s, intRange{hi: math.MaxUint64, unit: "bytes"})
	if whole, err := strconv.ParseUint(num, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		hi, bytes := bits.Mul64(whole, mul)
		if err != nil || hi != 0 {
			return 0, outOfRange
		}
		return bytes, nil
	}
	bytes := value * float64(mul)
	if bytes >= math.MaxUint64 { // 2^64 as a float64
		return 0, outOfRange
	}
	return uint64(bytes), nil
}

// applyPreset applies nwaku's network presets as tools/confutils/cli_args.nim
// toNetworkConf selects them: --cluster-id=1 means twn and --cluster-id=2
// logos.dev, whatever --preset says (nwaku warns that this mapping will go).
// The Waku Network's settings override the flags' (applyTWN); logos.dev
// always turns kademlia discovery on, which this node does not have, so it
// is refused.
func (o *nodeOptions) applyPreset(p *parsedFlags) error {
	preset, flag, value := strings.ToLower(o.preset), "preset", o.preset
	var byCluster string
	switch o.cfg.ClusterID {
	case 1:
		preset = "twn"
	case 2:
		preset, flag, value, byCluster = "logos.dev", "cluster-id", "2", " (nwaku runs cluster 2 as --preset=logos.dev)"
	}
	switch preset {
	case "":
		return nil
	case "twn":
		o.applyTWN(p)
		return nil
	case "logos.dev", "logosdev":
		return &refusedError{flag, value, "the Logos Dev Network" + byCluster + " needs kademlia discovery, which this node does not support", p.values[flag].origin}
	}
	return &usageError{fmt.Errorf("Invalid --preset value passed: %s", preset)}
}

// The Waku Network's RLN relay settings, from nwaku v0.38.1
// waku/factory/networks_config.nim TheWakuNetworkConf.
const (
	twnContract         = "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6"
	twnChainID          = 59141 // Linea Sepolia
	twnEpochSec         = 600
	twnUserMessageLimit = 100
)

// twnBootstrapNodes are The Waku Network's discv5 bootstrap nodes, from
// nwaku v0.38.1 waku/factory/networks_config.nim TheWakuNetworkConf.
var twnBootstrapNodes = []string{
	"enr:-QESuED0qW1BCmF-oH_ARGPr97Nv767bl_43uoy70vrbah3EaCAdK3Q0iRQ6wkSTTpdrg_dU_NC2ydO8leSlRpBX4pxiAYJpZIJ2NIJpcIRA4VDAim11bHRpYWRkcnO4XAArNiZub2RlLTAxLmRvLWFtczMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQZ2XwAtNiZub2RlLTAxLmRvLWFtczMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQOTd-h5owwj-cx7xrmbvQKU8CV3Fomfdvcv1MBc-67T5oN0Y3CCdl-DdWRwgiMohXdha3UyDw",
	"enr:-QEkuED9X80QF_jcN9gA2ZRhhmwVEeJnsg_Hyg7IFCTYnZD0BDI7a8HArE61NhJZFwygpHCWkgwSt2vqiABXkBxzIqZBAYJpZIJ2NIJpcIQiQlleim11bHRpYWRkcnO4bgA0Ni9ub2RlLTAxLmdjLXVzLWNlbnRyYWwxLWEud2FrdS5zYW5kYm94LnN0YXR1cy5pbQZ2XwA2Ni9ub2RlLTAxLmdjLXVzLWNlbnRyYWwxLWEud2FrdS5zYW5kYm94LnN0YXR1cy5pbQYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQPFAS8zz2cg1QQhxMaK8CzkGQ5wdHvPJcrgLzJGOiHpwYN0Y3CCdl-DdWRwgiMohXdha3UyDw",
	"enr:-QEkuEBfEzJm_kigJ2HoSS_RBFJYhKHocGdkhhBr6jSUAWjLdFPp6Pj1l4yiTQp7TGHyu1kC6FyaU573VN8klLsEm-XuAYJpZIJ2NIJpcIQI2SVcim11bHRpYWRkcnO4bgA0Ni9ub2RlLTAxLmFjLWNuLWhvbmdrb25nLWMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQZ2XwA2Ni9ub2RlLTAxLmFjLWNuLWhvbmdrb25nLWMud2FrdS5zYW5kYm94LnN0YXR1cy5pbQYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQOwsS69tgD7u1K50r5-qG5hweuTwa0W26aYPnvivpNlrYN0Y3CCdl-DdWRwgiMohXdha3UyDw",
}

// applyTWN sets The Waku Network's settings over the flags', as nwaku's
// applyNetworkConf (waku/factory/conf_builder/waku_conf_builder.nim) does:
// cluster 1, autosharding over 8 shards, a 150 KiB message limit (the only
// one this node has), discv5 on unless --discv5-discovery says otherwise,
// with the network's bootstrap nodes added to any given; and with relay on,
// RLN relay on the network's contract, chain and 600 s epochs. The user
// message limit of generateRlnKeystore becomes the network's 100 unless
// given; a node's own rate is its membership's limit unless
// --rln-relay-user-message-limit caps it (nwaku keeps the flag's default,
// 1, unless it is set to 0).
func (o *nodeOptions) applyTWN(p *parsedFlags) {
	c := &o.cfg
	c.ClusterID, c.NumShardsInNetwork = 1, 8
	if !p.values["discv5-discovery"].val.given {
		c.Discovery.Discv5 = true
	}
	c.Discovery.Discv5BootstrapNodes = append(c.Discovery.Discv5BootstrapNodes, twnBootstrapNodes...)
	if !c.Relay {
		o.notes = append(o.notes, "The Waku Network's settings applied (cluster 1, 8 shards, discv5 with its bootstrap nodes); RLN stays off with --relay=false, as in nwaku")
		return
	}
	r := &c.RLNRelay
	for _, f := range []string{"rln-relay", "rln-relay-eth-contract-address", "rln-relay-chain-id", "rln-relay-dynamic", "rln-relay-epoch-sec"} {
		if p.values[f].val.given {
			o.notes = append(o.notes, fmt.Sprintf("--%s was given with The Waku Network's preset, whose value is used, as in nwaku", f))
		}
	}
	r.Enabled, r.Dynamic, r.EthContractAddress, r.ChainID, r.EpochSec = true, true, twnContract, twnChainID, twnEpochSec
	if !p.values["rln-relay-user-message-limit"].val.given {
		o.keystore.userMessageLimit = twnUserMessageLimit
	}
	o.notes = append(o.notes, fmt.Sprintf("The Waku Network's settings applied: cluster 1, 8 shards, discv5 with its bootstrap nodes, RLN relay on contract %s of chain %d with epochs of %d s",
		twnContract, twnChainID, twnEpochSec))
}

// parseLogLevel maps nwaku's (chronicles') levels onto slog's: TRACE below
// DEBUG, NOTICE between INFO and WARN, FATAL above ERROR.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToUpper(s) {
	case "TRACE":
		return slog.LevelDebug - 4, nil
	case "DEBUG":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "NOTICE":
		return slog.LevelInfo + 2, nil
	case "WARN":
		return slog.LevelWarn, nil
	case "ERROR":
		return slog.LevelError, nil
	case "FATAL":
		return slog.LevelError + 4, nil
	}
	return 0, fmt.Errorf("want TRACE, DEBUG, INFO, NOTICE, WARN, ERROR or FATAL")
}
