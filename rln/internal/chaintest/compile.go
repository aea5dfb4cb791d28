//go:build unix

// Package chaintest gives RLN tests a chain with a membership contract on
// it: go-ethereum's simulated backend (NewSimulated), or the same kind of
// chain in a go-ethereum node stack whose JSON-RPC this package serves over
// HTTP and WebSocket with go-ethereum's own rpc server, on servers a test
// can stop and restart (NewServed), for tests that go through real
// endpoint addresses as --rln-relay-eth-client-address does. A loop can
// commit blocks (Chain.Mine), as a real chain would.
//
// The contracts are this folder's contracts/*.sol: a membership contract
// with the ABI of The Waku Network's (waku-rlnv2-contract WakuRlnV2), a
// linear price calculator and an ERC-20 test token. They are compiled at
// test time with npm solc, against the Poseidon (poseidon-solidity) and
// Merkle tree (@zk-kit/lazy-imt.sol) libraries from npm, pinned in
// package.json with a committed lockfile. Compile installs them with
// `npm ci` and caches its output under node_modules; without Node.js it
// skips the test, and under CI=true it fails it.
package chaintest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
)

// Names of the compiled contracts, as Artifacts keys them.
const (
	MembershipContract = "RlnMembership.sol:RlnMembership"
	CalculatorContract = "LinearPriceCalculator.sol:LinearPriceCalculator"
	TokenContract      = "TestToken.sol:TestToken"
)

// Artifact is one compiled contract.
type Artifact struct {
	// ABI is the contract's ABI as solc wrote it (JSON).
	ABI json.RawMessage `json:"abi"`
	// Bin is the creation bytecode in hex without 0x, with a
	// __$<id>$__ placeholder for each library it calls.
	Bin string `json:"bin"`
	// Links maps each library the bytecode calls ("file:name") to its
	// placeholder id.
	Links map[string]string `json:"links"`
}

// Artifacts are the compiled contracts, keyed "file:name".
type Artifacts struct {
	// Solc is the compiler's version.
	Solc string `json:"solc"`
	// Contracts are the compiled contracts and libraries.
	Contracts map[string]Artifact `json:"contracts"`
}

// ParsedABI returns the parsed ABI of contract name; it fails the test
// when there is none.
func (a *Artifacts) ParsedABI(t testing.TB, name string) abi.ABI {
	t.Helper()
	c, ok := a.Contracts[name]
	if !ok {
		t.Fatalf("chaintest: no compiled contract %s", name)
	}
	parsed, err := abi.JSON(bytes.NewReader(c.ABI))
	if err != nil {
		t.Fatalf("chaintest: ABI of %s: %v", name, err)
	}
	return parsed
}

// metaData returns bind.MetaData for contract name with its libraries as
// dependencies, for bind.LinkAndDeploy. A library's ID is its placeholder
// id; a contract's is its name.
func (a *Artifacts) metaData(name string) (*bind.MetaData, error) {
	byID := map[string]*bind.MetaData{}
	var build func(name, id string) (*bind.MetaData, error)
	build = func(name, id string) (*bind.MetaData, error) {
		if m, ok := byID[id]; ok {
			return m, nil
		}
		c, ok := a.Contracts[name]
		if !ok {
			return nil, fmt.Errorf("chaintest: no compiled contract %s", name)
		}
		m := &bind.MetaData{ID: id, ABI: string(c.ABI), Bin: "0x" + c.Bin}
		libs := make([]string, 0, len(c.Links))
		for lib := range c.Links {
			libs = append(libs, lib)
		}
		sort.Strings(libs)
		for _, lib := range libs {
			dep, err := build(lib, c.Links[lib])
			if err != nil {
				return nil, err
			}
			m.Deps = append(m.Deps, dep)
		}
		byID[id] = m
		return m, nil
	}
	return build(name, name)
}

// Dir returns this package's folder: package.json, contracts/ and
// node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

var (
	compileMu  sync.Mutex
	compiled   *Artifacts
	compileErr error
)

// Compile returns the compiled contracts, compiling them once per process
// (and once per change of the sources, across processes, through a cache
// in node_modules). Without Node.js 20 and npm it skips the test, or fails
// it under CI=true; a failed install or compile fails it.
func Compile(t testing.TB) *Artifacts {
	t.Helper()
	Require(t)
	compileMu.Lock()
	defer compileMu.Unlock()
	if compiled == nil && compileErr == nil {
		compiled, compileErr = compileCached()
	}
	if compileErr != nil {
		t.Fatalf("chaintest: %v", compileErr)
	}
	return compiled
}

// Require makes sure Node.js 20 or later and npm are on PATH and the
// packages of package.json are installed (`npm ci` when node_modules is
// missing or older than package-lock.json). Without Node.js or npm it skips
// the test with a hint, or fails it when CI=true.
func Require(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
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
	if err := withLock(install); err != nil {
		t.Fatalf("chaintest: %v", err)
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	msg := "chaintest: " + why + ": the RLN chain tests compile their contract with npm solc; install Node.js 20 or later with npm, then run go test again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// withLock runs f holding an flock on Dir/.install.lock, so that test
// binaries of several packages do not install or compile at once.
func withLock(f func() error) error {
	lock, err := os.OpenFile(filepath.Join(Dir(), ".install.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	return f()
}

// install runs `npm ci` unless node_modules matches package-lock.json.
func install() error {
	dir := Dir()
	lockfile, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	if done, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !done.ModTime().Before(lockfile.ModTime()) {
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

// compileCached returns the cached compile output for the current sources
// or runs compile.mjs and caches what it prints.
func compileCached() (*Artifacts, error) {
	key, err := sourceKey()
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(Dir(), "node_modules", ".courier-compiled", key+".json")
	var out []byte
	err = withLock(func() error {
		if b, err := os.ReadFile(cache); err == nil {
			out = b
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "compile.mjs")
		cmd.Dir = Dir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("node compile.mjs: %w\n%s", err, tail(stderr.Bytes()))
		}
		out = b
		if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
			return err
		}
		tmp := cache + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, cache)
	})
	if err != nil {
		return nil, err
	}
	var a Artifacts
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, fmt.Errorf("compile output: %w", err)
	}
	for _, name := range []string{MembershipContract, CalculatorContract, TokenContract} {
		if _, ok := a.Contracts[name]; !ok {
			return nil, fmt.Errorf("compile output has no %s", name)
		}
	}
	return &a, nil
}

// sourceKey hashes what the compile output depends on: the contracts, the
// compile script and the lockfile (solc's and the libraries' versions).
func sourceKey() (string, error) {
	dir := Dir()
	files, err := filepath.Glob(filepath.Join(dir, "contracts", "*.sol"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	files = append(files, filepath.Join(dir, "compile.mjs"), filepath.Join(dir, "package-lock.json"))
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// tail returns the last 4 KiB of b.
func tail(b []byte) []byte {
	if len(b) > 4096 {
		return b[len(b)-4096:]
	}
	return b
}
