package node

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/state"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/keystore"
)

const testContract = "0x00000000000000000000000000000000000000aa"

// TestRLNRelayConfig checks what resolve makes of RLNRelayConfig and what
// it refuses, with nwaku's texts where nwaku has them
// (rln_relay_conf_builder.nim build); and that a node with a keystore but
// no circuit files is refused by New, before any chain is asked.
func TestRLNRelayConfig(t *testing.T) {
	idx := uint64(3)
	p, err := Config{Relay: true, DataDir: "/data", RLNRelay: RLNRelayConfig{Enabled: true, EthContractAddress: testContract, ChainID: 59141,
		CredPath: "/keys/ks.json", CredPassword: "pw", MembershipIndex: &idx, EpochSec: 600, UserMessageLimit: 5}}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	r := p.rln
	switch {
	case len(r.Membership.Endpoints) != 1 || r.Membership.Endpoints[0] != DefaultRLNEthClientAddress:
		t.Errorf("endpoints %v, want nwaku's default", r.Membership.Endpoints)
	case r.Membership.Contract.Hex() != "0x00000000000000000000000000000000000000AA" || r.ContractAddress != testContract:
		t.Errorf("contract %v %q", r.Membership.Contract, r.ContractAddress)
	case r.Membership.ChainID.Uint64() != 59141 || r.EpochSec != 600 || r.UserMessageLimit != 5 || *r.MembershipIndex != 3:
		t.Errorf("chain %v, epoch %d, limit %d, index %d", r.Membership.ChainID, r.EpochSec, r.UserMessageLimit, *r.MembershipIndex)
	case r.CounterDir != "/data" || r.CredPath != "/keys/ks.json" || r.CredPassword != "pw":
		t.Errorf("counter dir %q, keystore %q", r.CounterDir, r.CredPath)
	}
	p, err = Config{Relay: true, RLNRelay: RLNRelayConfig{Enabled: true, EthContractAddress: testContract, CredPath: "/keys/ks.json", CredPassword: "pw"}}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.rln.EpochSec != 1 || p.rln.Membership.ChainID != nil || p.rln.CounterDir != "/keys" {
		t.Errorf("defaults: epoch %d (want nwaku's 1), chain %v (want the endpoint's), counter dir %q (want the keystore's)", p.rln.EpochSec, p.rln.Membership.ChainID, p.rln.CounterDir)
	}

	on := func(c RLNRelayConfig) Config {
		c.Enabled = true
		if c.EthContractAddress == "" {
			c.EthContractAddress = testContract
		}
		return Config{Relay: true, RLNRelay: c}
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{RLNRelay: RLNRelayConfig{Enabled: true, EthContractAddress: testContract}}, "--rln-relay needs --relay"},
		{Config{Relay: true, RLNRelay: RLNRelayConfig{Enabled: true}}, "--rln-relay needs --rln-relay-eth-contract-address (rlnRelay.ethContractAddress is not specified)"},
		{on(RLNRelayConfig{EthContractAddress: "0x12"}), `--rln-relay-eth-contract-address "0x12": want 0x and 40 hex digits`},
		{on(RLNRelayConfig{CredPath: "ks.json"}), "RLN Relay Credential Password is not specified but path is"},
		{on(RLNRelayConfig{CredPassword: "pw"}), "RLN Relay Credential Path is not specified but password is"},
		{on(RLNRelayConfig{UserMessageLimit: rln.MaxUserMessageLimit + 1}), "--rln-relay-user-message-limit 65536 is out of range: want 0..65535 (the RLN circuit's limit)"},
		{on(RLNRelayConfig{EthClientAddresses: []string{"ftp://x/"}}), `--rln-relay-eth-client-address "ftp://x": scheme "ftp"; want http, https, ws or wss`},
		// An address that does not parse: its scheme and host, the rest
		// redacted (API keys live there), and why.
		{on(RLNRelayConfig{EthClientAddresses: []string{"http://localhost:8540/", "https://u:key@rpc.example:85x6/v3/key?k=key"}}),
			`--rln-relay-eth-client-address "https://<redacted>@rpc.example:85x6/<redacted>?<redacted>": not a URL: invalid port ":85x6" after host`},
		// A port outside 1-65535 or no host is refused at once, not
		// dialed for a minute.
		{on(RLNRelayConfig{EthClientAddresses: []string{"http://127.0.0.1:0/"}}), `--rln-relay-eth-client-address "http://127.0.0.1:0": port 0; want 1 to 65535`},
		{on(RLNRelayConfig{EthClientAddresses: []string{"http://127.0.0.1:65536/"}}), `--rln-relay-eth-client-address "http://127.0.0.1:65536": port 65536; want 1 to 65535`},
		{on(RLNRelayConfig{EthClientAddresses: []string{"https://rpc.example:99999/v3/key"}}), `--rln-relay-eth-client-address "https://rpc.example:99999/<redacted>": port 99999; want 1 to 65535`},
		{on(RLNRelayConfig{EthClientAddresses: []string{"http://:8545/"}}), `--rln-relay-eth-client-address "http://:8545": no host`},
		{on(RLNRelayConfig{EthPrivateKey: "zz"}), "--rln-relay-eth-private-key: "},
		{on(RLNRelayConfig{EpochSec: MaxEpochSec + 1}), "--rln-relay-epoch-sec 4294967297 is out of range: want 1..4294967296 seconds"},
	} {
		_, err := tc.cfg.resolve()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig with %q", tc.cfg.RLNRelay, err, tc.want)
		}
	}

	// A keystore path that does not exist, or a file that is not a
	// keystore, is named before the circuit files are looked for.
	dir := t.TempDir()
	notKeystore := filepath.Join(dir, "not-a-keystore.json")
	if err := os.WriteFile(notKeystore, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{filepath.Join(dir, "missing.json"): keystore.ErrNotExist, notKeystore: keystore.ErrMalformed} {
		c := on(RLNRelayConfig{CredPath: path, CredPassword: "pw", CircuitDir: t.TempDir()})
		c.ListenAddress, c.Logger = "127.0.0.1", slog.New(slog.DiscardHandler)
		n, err := New(c)
		if err == nil {
			n.Stop(t.Context())
			t.Fatalf("New accepted keystore %s", path)
		}
		if !errors.Is(err, want) || errors.Is(err, rln.ErrCircuitFiles) || !strings.HasPrefix(err.Error(), "node: rln-relay: --rln-relay-cred-path "+path+": ") {
			t.Errorf("New with keystore %s: %v, want %v naming the path after one node: rln-relay: prefix", path, err, want)
		}
	}

	ks := filepath.Join(dir, "ks.json")
	if err := keystore.New(keystore.RLN()).Save(ks); err != nil {
		t.Fatal(err)
	}
	c := on(RLNRelayConfig{CredPath: ks, CredPassword: "pw", CircuitDir: t.TempDir()})
	c.ListenAddress, c.Logger = "127.0.0.1", slog.New(slog.DiscardHandler)
	n, err := New(c)
	if err == nil {
		n.Stop(t.Context())
		t.Fatal("New accepted a keystore without circuit files")
	}
	if !errors.Is(err, ErrConfig) || !errors.Is(err, rln.ErrCircuitFiles) || !strings.Contains(err.Error(), "rln/resources/tree_height_20/") {
		t.Errorf("New: %v, want ErrConfig and rln.ErrCircuitFiles saying where the files are", err)
	}
}

// TestRLNHealthNotMounted: without RLN relay /health's "Rln Relay" entry
// is NOT_MOUNTED, as nwaku's getRlnRelayHealth.
func TestRLNHealthNotMounted(t *testing.T) {
	n, err := New(Config{Relay: true, NoListen: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(t.Context())
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, p := range n.healthReport().ProtocolsHealth {
		if p.Protocol == health.RlnRelay {
			if p.Health != state.NotMounted {
				t.Fatalf("Rln Relay %s, want NOT_MOUNTED", p.Health)
			}
			return
		}
	}
	t.Fatal("no Rln Relay entry")
}
