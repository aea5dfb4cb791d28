//go:build unix

// Package jstest runs lib-net's published JavaScript wrappers (@shardus/net
// 1.3.15 and 1.4.3, @shardeum-foundation/lib-net 1.6.1, pinned in
// package.json with a committed lockfile and installed with their install
// scripts off) and courier's own package (libnet/js, installed from its
// npm pack tarball, which builds the native core) against each other and
// against Go libnet endpoints. See README.md.
package jstest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Wrappers are the published wrappers the tests load over the core.
var Wrappers = []string{"wrapper-1.3.15", "wrapper-1.4.3", "wrapper-1.6.1"}

// Impls are every lib-net the tests run: the wrappers and courier's package.
var Impls = append(append([]string{}, Wrappers...), "courier")

const scriptTimeout = 3 * time.Minute

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func pkgDir() string { return filepath.Join(dir(), "..") }

func cacheDir() string { return filepath.Join(dir(), ".cache", "courier") }

var (
	setupOnce sync.Once
	setupErr  error
)

// require makes sure node, npm and go are there (skipping the test without
// them, failing it under CI=true), installs the published wrappers with
// their scripts off, and builds courier's package from its npm pack
// tarball (cached in .cache until a source of it changes); the wrappers
// then find the core where they require it (shardus-net.node in their
// package folder, a symbolic link to the one built core).
func require(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"node", "npm", "go", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, tool+" not found on PATH")
		}
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		missing(t, fmt.Sprintf("node --version: %v", err))
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); major < 20 {
		missing(t, "Node.js "+v+" is too old")
	}
	setupOnce.Do(func() { setupErr = setup() })
	if setupErr != nil {
		t.Fatalf("lib-net JavaScript suite: %v", setupErr)
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	msg := "lib-net JavaScript suite: " + why + ": install Node.js 20 or later with npm, Go and gcc, then run go test again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func setup() error {
	lock, err := os.OpenFile(filepath.Join(dir(), ".install.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if !installed(dir()) {
		if out, err := command(10*time.Minute, dir(), "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"); err != nil {
			return fmt.Errorf("npm ci: %w\n%s", err, out)
		}
	}
	core, err := buildPackage()
	if err != nil {
		return err
	}
	for _, w := range Wrappers {
		link := filepath.Join(dir(), "node_modules", w, "shardus-net.node")
		_ = os.Remove(link)
		if err := os.Symlink(core, link); err != nil {
			return err
		}
	}
	return nil
}

func installed(d string) bool {
	lockfile, err := os.Stat(filepath.Join(d, "package-lock.json"))
	if err != nil {
		return false
	}
	done, err := os.Stat(filepath.Join(d, "node_modules", ".package-lock.json"))
	return err == nil && !done.ModTime().Before(lockfile.ModTime())
}

// buildPackage packs libnet/js and installs the tarball into .cache; the
// install builds the core. It returns the core's path.
func buildPackage() (string, error) {
	key, err := sourceKey()
	if err != nil {
		return "", err
	}
	c := cacheDir()
	core := filepath.Join(c, "node_modules", "@couriernet", "lib-net", "shardus-net.node")
	if k, _ := os.ReadFile(filepath.Join(c, ".key")); string(k) == key {
		if _, err := os.Stat(core); err == nil {
			return core, nil
		}
	}
	_ = os.RemoveAll(c)
	if err := os.MkdirAll(c, 0o755); err != nil {
		return "", err
	}
	out, err := command(10*time.Minute, pkgDir(), "npm", "pack", "--pack-destination", c)
	if err != nil {
		return "", fmt.Errorf("npm pack: %w\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	tgz := filepath.Join(c, strings.TrimSpace(lines[len(lines)-1]))
	if err := os.WriteFile(filepath.Join(c, "package.json"), []byte(`{"private":true}`), 0o644); err != nil {
		return "", err
	}
	if out, err := command(15*time.Minute, c, "npm", "install", "--no-audit", "--no-fund", tgz); err != nil {
		return "", fmt.Errorf("npm install %s: %w\n%s", tgz, err, out)
	}
	if _, err := os.Stat(core); err != nil {
		return "", fmt.Errorf("the package installed without its core: %w", err)
	}
	return core, os.WriteFile(filepath.Join(c, ".key"), []byte(key), 0o644)
}

// sourceKey hashes what the package is built from: libnet's Go and C
// sources (not its tests) and the package's own files.
func sourceKey() (string, error) {
	h := sha256.New()
	libnet := filepath.Join(pkgDir(), "..")
	skip := map[string]bool{filepath.Join(pkgDir(), "native"): true, dir(): true, filepath.Join(pkgDir(), "node_modules"): true}
	err := filepath.WalkDir(libnet, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[p] || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.go") || name == "shardus-net.node" || strings.HasSuffix(name, ".tgz") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return nil
	})
	for _, f := range []string{"go.mod", "go.sum"} {
		b, _ := os.ReadFile(filepath.Join(libnet, "..", f))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

func command(timeout time.Duration, d string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = d
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return append(stdout.Bytes(), tail(stderr.Bytes())...), err
	}
	return stdout.Bytes(), nil
}

func env() []string { return append(os.Environ(), "COURIER_PKG="+cacheDir()) }

// run runs `node script '<args as JSON>'` and decodes its last stdout line
// into out.
func run(t testing.TB, script string, args, out any) {
	t.Helper()
	in, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, string(in))
	cmd.Dir, cmd.Env = dir(), env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s %s: %v after %v\nstdout:\n%s\nstderr:\n%s", script, in, err, time.Since(start).Round(time.Millisecond),
			tail(stdout.Bytes()), tail(stderr.Bytes()))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	if out != nil {
		if err := json.Unmarshal([]byte(last), out); err != nil {
			t.Fatalf("node %s: result %q: %v\nstderr:\n%s", script, last, err, tail(stderr.Bytes()))
		}
	}
	t.Logf("node %s %s (%v): %s", script, in, time.Since(start).Round(time.Millisecond), tail([]byte(last)))
}

// proc is a long-running script whose stdout lines are JSON events.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan map[string]any
	stderr *bytes.Buffer // written by os/exec until the process ends
}

func start(t testing.TB, script string, args any) *proc {
	t.Helper()
	in, _ := json.Marshal(args)
	cmd := exec.Command("node", script, string(in))
	cmd.Dir, cmd.Env = dir(), env()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	p := &proc{t: t, cmd: cmd, stdin: stdin, events: make(chan map[string]any, 4096), stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	// A child the script started may hold stderr open after the script
	// ends: Wait gives up on it after this long instead of waiting for it.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.events <- ev
			}
		}
		close(p.events)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	p.await("ready", 30*time.Second)
	return p
}

// await returns the next event named name, failing after d.
func (p *proc) await(name string, d time.Duration) map[string]any {
	p.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.fail("%s ended before %q", p.cmd.Args[1], name)
			}
			if ev["event"] == name {
				return ev
			}
		case <-timer.C:
			p.fail("%s: no %q within %v", p.cmd.Args[1], name, d)
		}
	}
}

// fail ends the script and fails the test with the message and the end of
// the script's stderr, read once the process is gone and os/exec no
// longer writes to it.
func (p *proc) fail(format string, args ...any) {
	p.t.Helper()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.t.Fatalf(format+"; stderr:\n%s", append(args, tail(p.stderr.Bytes()))...)
}

// drain returns the events that arrive until quiet for d.
func (p *proc) drain(d time.Duration) []map[string]any {
	var evs []map[string]any
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-time.After(d):
			return evs
		}
	}
}

func (p *proc) send(line string) {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func tail(b []byte) []byte {
	if len(b) > 4096 {
		return b[len(b)-4096:]
	}
	return b
}
