package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/couriernet/courier/rln"
)

// parseKeystoreFlags parses generateRlnKeystore's command line as
// runKeystore does, without the environment and file.
func parseKeystoreFlags(t *testing.T, args ...string) *nodeOptions {
	t.Helper()
	p := newFlagSet("generateRlnKeystore", keystoreFlags)
	if err := p.parse(args); err != nil {
		t.Fatal(err)
	}
	o := &nodeOptions{}
	if err := p.resolve(keystoreFlags, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKeystoreFlags checks generateRlnKeystore's command line: nwaku's
// flags of the command with nwaku's defaults, and courier's approval flag.
func TestKeystoreFlags(t *testing.T) {
	o := parseKeystoreFlags(t)
	if o.keystore.execute || o.keystore.approve || o.keystore.userMessageLimit != 1 || len(o.cfg.RLNRelay.EthClientAddresses) != 1 ||
		o.cfg.RLNRelay.EthClientAddresses[0] != "http://localhost:8540/" {
		t.Errorf("defaults %+v %+v", o.keystore, o.cfg.RLNRelay)
	}
	o = parseKeystoreFlags(t, "--execute", "--rln-relay-approve-deposit", "--rln-relay-user-message-limit=100", "--rln-relay-chain-id=59141",
		"--rln-relay-cred-path=k.json", "--rln-relay-cred-password=pw", "--rln-relay-eth-private-key=0x01")
	r := o.cfg.RLNRelay
	if !o.keystore.execute || !o.keystore.approve || o.keystore.userMessageLimit != 100 || r.ChainID != 59141 || r.CredPath != "k.json" ||
		r.CredPassword != "pw" || r.EthPrivateKey != "0x01" {
		t.Errorf("given %+v %+v", o.keystore, r)
	}
	p := newFlagSet("generateRlnKeystore", keystoreFlags)
	if err := p.parse([]string{"--rln-relay=true"}); err == nil || !strings.Contains(err.Error(), "unknown flag --rln-relay") {
		t.Errorf("--rln-relay, a node flag: %v", err)
	}
}

// TestKeystoreDryRun: without --execute a credential is made and printed,
// its commitment Poseidon of its secret, and nothing is sent or saved;
// --execute without what a registration needs is refused before anything
// is sent.
func TestKeystoreDryRun(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	if err := generateKeystore(context.Background(), parseKeystoreFlags(t), log); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`idSecretHash=([0-9a-f]{64}) idCommitment=([0-9a-f]{64})`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "not executing, exiting") {
		t.Fatalf("dry run printed:\n%s", out.String())
	}
	field := func(s string) rln.Field {
		b, _ := hex.DecodeString(s)
		var be [32]byte
		copy(be[:], b)
		f, err := rln.FieldFromBigEndian(be)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if c, err := rln.IdentityCommitment(field(m[1])); err != nil || c != field(m[2]) {
		t.Errorf("printed commitment is not Poseidon of the printed secret: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--execute"}, "--execute needs --rln-relay-cred-path and --rln-relay-cred-password"},
		{[]string{"--execute", "--rln-relay-cred-path=k.json", "--rln-relay-cred-password=pw"}, "--execute needs --rln-relay-eth-private-key"},
		{[]string{"--execute", "--rln-relay-cred-path=k.json", "--rln-relay-cred-password=pw", "--rln-relay-eth-private-key=01", "--rln-relay-eth-contract-address=0x1"},
			`--rln-relay-eth-contract-address "0x1": want the membership contract's address`},
	} {
		err := generateKeystore(context.Background(), parseKeystoreFlags(t, tc.args...), slog.New(slog.DiscardHandler))
		if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}
