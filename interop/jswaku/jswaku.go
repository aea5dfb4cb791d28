//go:build unix

// Package jswaku runs js-waku, the Waku client of browser and Node.js
// apps (npm @waku/sdk, pinned in package.json with a committed lockfile),
// against courier nodes. Go tests start nodes on 127.0.0.1, run small
// Node.js scripts from this folder against them and check the JSON each
// script prints. See README.md for how to add a test.
package jswaku

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/node"
)

// ScriptTimeout bounds one run of a script.
const ScriptTimeout = 3 * time.Minute

// Dir returns the suite's folder: where package.json, the scripts and
// node_modules are.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Require makes sure Node.js (20 or later) and npm are on PATH and the
// suite's packages are installed, running `npm ci` in Dir when
// node_modules is missing or older than package-lock.json. Without Node.js
// or npm it skips the test with a hint on installing them, or fails it
// when the environment has CI=true. A failed `npm ci` fails the test.
func Require(t testing.TB) {
	t.Helper()
	RequirePackages(t, "js-waku suite", Dir())
}

// RequirePackages is Require for the npm packages of another folder, dir
// (holding package.json and package-lock.json), as another suite that
// drives js-waku has; suite names it in the skip or failure message.
func RequirePackages(t testing.TB, suite, dir string) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, suite, fmt.Sprintf("%s not found on PATH", tool))
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		missing(t, suite, fmt.Sprintf("node --version: %v", err))
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); major < 20 {
		missing(t, suite, fmt.Sprintf("Node.js %s is too old", v))
	}
	if err := install(dir); err != nil {
		t.Fatalf("%s: %v", suite, err)
	}
}

func missing(t testing.TB, suite, why string) {
	t.Helper()
	msg := suite + ": " + why + ": install Node.js 20 or later with npm (https://nodejs.org, or your package manager's nodejs and npm), then run go test again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// install runs `npm ci` in dir unless node_modules matches
// package-lock.json. An flock on dir/.install.lock keeps test binaries of
// several packages from installing at once.
func install(dir string) error {
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if installed(dir) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, tail(out))
	}
	return nil
}

// installed reports whether npm recorded an install newer than the
// lockfile.
func installed(dir string) bool {
	lockfile, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	done, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err == nil && !done.ModTime().Before(lockfile.ModTime())
}

// StartNode starts a node from cfg on 127.0.0.1 with free TCP, WebSocket
// and REST ports and WebSocket on (set cfg.WebSocketSecure and its paths
// for /wss); the other fields are kept. The node stops when the test ends.
func StartNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	cfg.ListenAddress, cfg.TCPPort, cfg.WebSocket, cfg.WebSocketPort = "127.0.0.1", 0, true, 0
	if cfg.REST {
		cfg.RESTAddress, cfg.RESTPort = "127.0.0.1", 0
	}
	if cfg.MetricsServer {
		cfg.MetricsAddress, cfg.MetricsPort = "127.0.0.1", 0
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Stop(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := n.Stop(ctx); err != nil {
			t.Errorf("stop node: %v", err)
		}
	})
	return n
}

// WebSocketAddr returns n's /ws or /wss listen address with /p2p/<id>,
// the address a js-waku client dials.
func WebSocketAddr(t testing.TB, n *node.Node) string {
	t.Helper()
	for _, a := range n.ListenAddresses() {
		if strings.Contains(a, "/ws/") || strings.Contains(a, "/wss/") {
			return a
		}
	}
	t.Fatalf("node has no WebSocket address: %q", n.ListenAddresses())
	return ""
}

// Run runs `node <script> <args as JSON>` in Dir, with env (KEY=value)
// added to the environment, and decodes the last line of its stdout into
// out (a pointer; nil to ignore it). A script that fails, prints no JSON
// or runs longer than ScriptTimeout fails the test, with the end of its
// stderr.
func Run(t testing.TB, script string, args, out any, env ...string) {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, string(in))
	cmd.Dir = Dir()
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v after %v\nstderr:\n%s", script, in, err, time.Since(start).Round(time.Millisecond), tail(stderr.Bytes()))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	if out == nil {
		return
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("node %s: result %q: %v\nstderr:\n%s", script, last, err, tail(stderr.Bytes()))
	}
	t.Logf("node %s (%v): %s", script, time.Since(start).Round(time.Millisecond), last)
}

// tail returns the last 4 KiB of b.
func tail(b []byte) []byte {
	if len(b) > 4096 {
		return b[len(b)-4096:]
	}
	return b
}
