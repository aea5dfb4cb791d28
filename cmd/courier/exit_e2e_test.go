//go:build unix

package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/archive/embedded"
)

// testE2EExitCodes: every configuration error, whichever way it comes (a
// flag, the environment, the config file, the configuration as a whole,
// `courier bench`'s or `courier query`'s arguments), ends with one line
// on stderr and exit code 1, nwaku's (confutils quits with QuitFailure);
// --version prints the version with exit code 0, as nwaku's does.
func testE2EExitCodes(t *testing.T, bin string) {
	dir := t.TempDir()
	badKey := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badKey, []byte("tcp-port = 1\nno-such-key = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// key's peer id: a static node with it is this node itself.
	const key = "4f3edf983ac636a65a842ce7c78d9aa706d3b113bce9c46f30d7d21715b23b1d"
	const selfID = "16Uiu2HAmUAvtPDLtcHBAdKhcuiVLQCUAe2VXr2vVFh8Fkc7T1K9F"
	for _, c := range []struct {
		args []string
		env  []string
		want string // a substring of the one line on stderr (the last one, with usage)
		// usage: the flag package prints the command's usage first.
		usage bool
	}{
		{[]string{"--no-such-flag=1"}, nil, "courier node: unknown flag --no-such-flag", false},
		{[]string{"--tcp-port=abc"}, nil, `courier node: --tcp-port=abc: "abc" is not a number`, false},
		{[]string{"--rln-relay=true", "--relay=false"}, nil, "courier node: node: invalid config: --rln-relay needs --relay", false},
		{[]string{"--tcp-port=99999"}, nil, `courier node: --tcp-port=99999: "99999" is out of range: want 0..65535`, false},
		{nil, []string{"WAKUNODE2_TCP_PORT=-5"}, `courier node: WAKUNODE2_TCP_PORT="-5": "-5" is out of range: want 0..65535`, false},
		{[]string{"--max-connections=-1"}, nil, `courier node: --max-connections=-1: "-1" is out of range: want 1..9223372036854775807`, false},
		{[]string{"--store=true", "--store-sync=true", "--store-sync-interval=9223372036854775807"}, nil,
			`courier node: --store-sync-interval=9223372036854775807: "9223372036854775807" is out of range: want 1..4294967295 seconds`, false},
		{nil, []string{"WAKUNODE2_TCP_PORT=abc"}, `courier node: WAKUNODE2_TCP_PORT="abc": "abc" is not a number`, false},
		{[]string{"--config-file=" + badKey}, nil, `courier node: config file ` + badKey + `: unknown key "no-such-key"`, false},
		{[]string{"--config-file=" + filepath.Join(dir, "missing.toml")}, nil, "courier node: config file: open ", false},
		{[]string{"--store=true", "--store-message-retention-policy=capacity:10;capacity:20"}, nil,
			"courier node: node: invalid config: --store-message-retention-policy=capacity:10;capacity:20: archive: invalid config: retention policy \"capacity:10;capacity:20\": a capacity policy is given twice", false},
		{[]string{"--store=true", "--store-message-retention-policy=size:1kb"}, nil,
			"courier node: node: invalid config: --store-message-retention-policy=size:1kb: ", false},
		{[]string{"--nodekey=" + key, "--staticnode=/ip4/127.0.0.1/tcp/60000/p2p/" + selfID}, nil,
			"courier node: node: invalid config: --staticnode /ip4/127.0.0.1/tcp/60000/p2p/" + selfID + " has this node's own peer id", false},
		{[]string{"--store=true", "--store-message-db-url=sqlite://" + filepath.Join(dir, "no-such-dir", "store.sqlite3")}, nil,
			"courier node: node: invalid config: --store-message-db-url: archive: invalid config: database URL sqlite://" + filepath.Join(dir, "no-such-dir", "store.sqlite3") +
				": directory " + filepath.Join(dir, "no-such-dir") + " does not exist", false},
		{[]string{"--websocket-secure-support=true"}, nil,
			"courier node: node: invalid config: --websocket-secure-support needs --websocket-secure-key-path and --websocket-secure-cert-path", false},
		{[]string{"bench", "-n", "0"}, nil, "courier bench: -n 0: need at least one measured message", false},
		{[]string{"bench", "--no-such-flag"}, nil, "courier bench: flag provided but not defined: -no-such-flag", true},
		{[]string{"query", "--page-size=0"}, nil, "courier query: --page-size must be 1..100", false},
	} {
		stdout, stderr, code := runBin(t, bin, dir, c.env, c.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || !strings.HasSuffix(stderr, "\n") || len(lines) != 1 && !c.usage || !strings.Contains(lines[len(lines)-1], c.want) {
			t.Errorf("courier %s (env %q): exit %d, stderr %q; want exit 1 and one line with %q", strings.Join(c.args, " "), c.env, code, stderr, c.want)
		}
		if strings.Contains(stderr, "open archive") || strings.Contains(stdout, "listening") {
			t.Errorf("courier %s: got past the configuration: stderr %q, stdout %q", strings.Join(c.args, " "), stderr, stdout)
		}
	}
	if _, stderr, code := runBin(t, bin, dir, nil, "no-such-command"); code != 1 || !strings.HasPrefix(stderr, `courier: unknown command "no-such-command"`) {
		t.Errorf("courier no-such-command: exit %d, stderr %q; want exit 1", code, stderr)
	}

	link := filepath.Join(dir, "wakunode2")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`^version / git commit hash: courier v\d+\.\d+\.\d+( \([0-9a-f]+(-dirty)?\))?\n$`)
	for _, args := range [][]string{{"--version"}, {"node", "--version"}, {"--relay=true", "--version"}} {
		for _, b := range []string{bin, link} {
			stdout, stderr, code := runBin(t, b, dir, nil, args...)
			if code != 0 || stderr != "" || !version.MatchString(stdout) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 0 and the version line", filepath.Base(b), strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
	if _, _, code := runBin(t, bin, dir, nil, "--help"); code != 0 {
		t.Errorf("courier --help: exit %d, want 0", code)
	}
	if _, stderr, _ := runBin(t, bin, dir, nil, "node", "--help"); !strings.Contains(stderr, "Exit codes, as nwaku's: 0 for a clean stop, --help and --version; 1 for\nevery error") {
		t.Errorf("node --help does not state the exit codes:\n%s", stderr)
	}
}

// runBin runs bin with args in dir, the environment childEnv plus env,
// and returns its output and exit code; it fails the test if bin runs for
// more than a minute (a node that started).
func runBin(t *testing.T, bin, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, append(childEnv(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("courier %s still running after a minute", strings.Join(args, " "))
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run courier %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// testE2EStopDuringStart: SIGTERM while the node is still starting (held
// in start-up by a DNS discovery name server that never answers) is a
// clean stop: exit code 0, "stopped" logged, the archive closed so that it
// opens again; the node never got to listen.
func testE2EStopDuringStart(t *testing.T, bin string) {
	mute, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	dir := t.TempDir()
	p := startProc(t, "starting", bin, "node", "--listen-address=127.0.0.1", "--tcp-port=0", "--store=true", "--data-dir="+dir,
		"--dns-discovery-url=enrtree://AOGYWMBYOUIMOENHXCHILPKY3ZRFEULMFI4DOM442QSZ73TT2A7VI@nodes.example.org",
		"--dns-addrs-name-server="+mute.LocalAddr().String())
	p.waitLog(t, regexp.MustCompile(`--nat defaults to none`), 15*time.Second)
	time.Sleep(500 * time.Millisecond)
	if p.out.count("listening") != 0 {
		t.Fatal("the node finished starting before SIGTERM; the name server did not hold it")
	}
	took := p.stop(t)
	t.Logf("stopped %v after SIGTERM", took.Round(time.Millisecond))
	if p.out.count("stopping during start-up") != 1 || p.out.count("msg=stopped") != 1 || p.out.count("listening") != 0 {
		t.Fatalf("stdout does not show a stop during start-up:\n%s", p.out)
	}
	a, err := embedded.Open(filepath.Join(dir, "archive"), archive.Config{Logger: slog.New(slog.DiscardHandler)}, embedded.Options{})
	if err != nil {
		t.Fatalf("the archive after the stop: %v", err)
	}
	a.Close()
}

// testE2ESecretsHidden: a command's error is one line on stderr, and
// neither it nor the log shows a database password or an Ethereum
// endpoint's API key; an endpoint with a port outside 1 to 65535 or no
// host is refused at once.
func testE2ESecretsHidden(t *testing.T, bin string) {
	dir := t.TempDir()
	rln := []string{"--rln-relay=true", "--rln-relay-eth-contract-address=0x1111111111111111111111111111111111111111"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--store=true", "--store-message-db-url=mysql://u:PWSECRET@x/db"},
			`courier node: node: invalid config: --store-message-db-url: archive: invalid config: database URL "mysql://u:xxxxx@x/db" (scheme "mysql")`},
		{[]string{"--store=true", "--store-message-db-url=postgres://u@127.0.0.1:1/db?password=PWSECRET"},
			"courier node: node: --store-message-db-url: open archive PostgreSQL postgres://u@127.0.0.1:1/db?password=xxxxx: archive: postgres: failed to connect to "},
		{[]string{"--store=true", "--store-message-db-url=postgres://u:PWSECRET@127.0.0.1:1/db?sslpassword=PWSECRET"},
			"courier node: node: --store-message-db-url: open archive PostgreSQL postgres://u:xxxxx@127.0.0.1:1/db?sslpassword=xxxxx: "},
		{append([]string{"--rln-relay-eth-client-address=http://127.0.0.1:0/v3/SECRETKEY"}, rln...),
			`--rln-relay-eth-client-address "http://127.0.0.1:0/<redacted>": port 0; want 1 to 65535`},
		{append([]string{"--rln-relay-eth-client-address=https://127.0.0.1:99999/?apikey=SECRETKEY"}, rln...),
			`--rln-relay-eth-client-address "https://127.0.0.1:99999?<redacted>": port 99999; want 1 to 65535`},
		{append([]string{"--rln-relay-eth-client-address=http://:8545/#SECRETKEY"}, rln...),
			`--rln-relay-eth-client-address "http://:8545#<redacted>": no host`},
	} {
		args := append([]string{"node", "--data-dir=" + dir, "--tcp-port=0"}, c.args...)
		stdout, stderr, code := runBin(t, bin, dir, nil, args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("courier %s: exit %d, stderr %q; want exit 1 and one line with %q", strings.Join(args, " "), code, stderr, c.want)
		}
		if strings.Contains(stdout+stderr, "SECRET") {
			t.Errorf("courier %s shows a secret:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
		}
	}
}
