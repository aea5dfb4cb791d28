//go:build unix

// Package zerokitjs runs RLN's other implementations against courier in
// Go tests: zerokit's own RLN as npm @waku/zerokit-rln-wasm 0.2.1 (the
// rln-wasm of zerokit v0.8.0, whose circuit is nwaku v0.38.1's) and
// snarkjs, pinned in package.json with a committed lockfile. Start runs
// peer.mjs, a JSON-lines server, in Node.js; its methods call zerokit's
// and snarkjs' functions with the bytes zerokit serialises.
package zerokitjs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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

// CallTimeout bounds one request; proving in the wasm build takes a few
// seconds.
const CallTimeout = 2 * time.Minute

// Dir returns the folder of package.json, peer.mjs and node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Peer is a running peer.mjs. Its methods are safe for concurrent use and
// run one request at a time.
type Peer struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte
	next    int
	errMu   sync.Mutex // guards stderr, which exec's copier writes
	stderr  bytes.Buffer
	LoadMs  float64         // zerokit's newRLN time
	VKey    json.RawMessage // snarkjs' verification_key.json of the zkey
	dead    error
	stopped chan struct{}
}

// Start makes sure Node.js 20+ and npm are there and the packages are
// installed (npm ci, once, under a lock), starts peer.mjs and loads the
// circuit files of dir (rln_final.zkey, rln.wasm) into zerokit and
// snarkjs. Without Node.js or npm it skips t, or fails it under CI=true.
// The process ends when t's test ends.
func Start(t testing.TB, dir string) *Peer {
	t.Helper()
	require(t)
	cmd := exec.Command("node", "peer.mjs")
	cmd.Dir = Dir()
	p := &Peer{cmd: cmd, lines: make(chan []byte, 1), stopped: make(chan struct{})}
	cmd.Stderr = &lockedWriter{buf: &p.stderr, mu: &p.errMu}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node peer.mjs: %v", err)
	}
	go func() {
		defer close(p.stopped)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.stopped:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-p.stopped
		}
		cmd.Wait()
	})
	var init struct {
		LoadMs float64         `json:"loadMs"`
		VKey   json.RawMessage `json:"vkey"`
	}
	if err := p.call("init", map[string]any{"dir": dir}, &init); err != nil {
		t.Fatalf("zerokit/snarkjs peer: %v", err)
	}
	p.LoadMs, p.VKey = init.LoadMs, init.VKey
	return p
}

type lockedWriter struct {
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (p *Peer) stderrText() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.stderr.String()
}

// call sends one request and decodes its result into out.
func (p *Peer) call(op string, args map[string]any, out any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	p.next++
	req := map[string]any{"id": p.next, "op": op}
	for k, v := range args {
		req[k] = v
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.dead = fmt.Errorf("peer.mjs: write: %w\n%s", err, p.stderrText())
		return p.dead
	}
	var line []byte
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.dead = fmt.Errorf("peer.mjs exited\n%s", p.stderrText())
			return p.dead
		}
		line = l
	case <-time.After(CallTimeout):
		p.cmd.Process.Kill()
		p.dead = fmt.Errorf("peer.mjs: %s: no answer in %v", op, CallTimeout)
		return p.dead
	}
	var resp struct {
		ID     int             `json:"id"`
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("peer.mjs: bad answer %q: %w", line, err)
	}
	if !resp.OK {
		return fmt.Errorf("peer.mjs: %s: %s", op, resp.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp.Result, out)
}

// Hex is a byte string that travels as hex.
type Hex []byte

func (h Hex) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	*h = v
	return err
}

// Hash is zerokit's hash (hash_to_field_le): 32 bytes little-endian.
func (p *Peer) Hash(data []byte) ([]byte, error) {
	var out Hex
	err := p.call("hash", map[string]any{"data": Hex(data)}, &out)
	return out, err
}

// Poseidon is zerokit's poseidon_hash of 32-byte little-endian inputs.
func (p *Peer) Poseidon(inputs ...[]byte) ([]byte, error) {
	in := make([]Hex, len(inputs))
	for i := range inputs {
		in[i] = inputs[i]
	}
	var out Hex
	err := p.call("poseidon", map[string]any{"inputs": in}, &out)
	return out, err
}

// Key is an identity as zerokit's extended key generation returns it.
type Key struct {
	Trapdoor   Hex `json:"trapdoor"`
	Nullifier  Hex `json:"nullifier"`
	Secret     Hex `json:"secret"`
	Commitment Hex `json:"commitment"`
}

// SeededKey is zerokit's generateSeededExtendedMembershipKey.
func (p *Peer) SeededKey(seed []byte) (Key, error) {
	var k Key
	err := p.call("seededKey", map[string]any{"seed": Hex(seed)}, &k)
	return k, err
}

// NewKey is zerokit's generateExtendedMembershipKey (random).
func (p *Peer) NewKey() (Key, error) {
	var k Key
	err := p.call("key", nil, &k)
	return k, err
}

// Witness is zerokit's RLNWitnessInput, field elements 32-byte
// little-endian.
type Witness struct {
	Secret       Hex   `json:"secret"`
	Limit        Hex   `json:"limit"`
	MessageID    Hex   `json:"messageId"`
	PathElements []Hex `json:"pathElements"`
	PathIndex    []int `json:"pathIndex"`
	X            Hex   `json:"x"`
	Ext          Hex   `json:"ext"`
}

// ProofValues is zerokit's proof output: the 128-byte compressed proof and
// its values, as serialize_proof_values orders them.
type ProofValues struct {
	Proof     Hex     `json:"proof"`
	Root      Hex     `json:"root"`
	Ext       Hex     `json:"ext"`
	X         Hex     `json:"x"`
	Y         Hex     `json:"y"`
	Nullifier Hex     `json:"nullifier"`
	Ms        float64 `json:"ms"`    // mean wall time of Prove's calls
	CPUMs     float64 `json:"cpuMs"` // mean CPU time of the Node.js process
}

// Prove makes a proof with zerokit (the circom witness calculator on
// rln.wasm, then generateRLNProofWithWitness), repeat times (at least
// once; Ms is the mean).
func (p *Peer) Prove(w *Witness, repeat int) (ProofValues, error) {
	var out ProofValues
	err := p.call("prove", map[string]any{"witness": w, "repeat": repeat}, &out)
	return out, err
}

// Verdict is a verifier's answer; Error is set when it refused the input
// outright (zerokit throws on points it cannot decode).
type Verdict struct {
	Valid bool    `json:"valid"`
	Error string  `json:"error"`
	Ms    float64 `json:"ms"`    // mean wall time per call
	CPUMs float64 `json:"cpuMs"` // mean CPU time of the Node.js process per call
}

// Verify is zerokit's verifyWithRoots for proof values, the signal bytes
// and the acceptable roots (none: the root is not checked), repeat times.
func (p *Peer) Verify(v *ProofValues, signal []byte, roots [][]byte, repeat int) (Verdict, error) {
	rs := make([]Hex, len(roots))
	for i := range roots {
		rs[i] = roots[i]
	}
	var out Verdict
	err := p.call("verify", map[string]any{
		"proof": v.Proof, "root": v.Root, "ext": v.Ext, "x": v.X, "y": v.Y, "nullifier": v.Nullifier,
		"signal": Hex(signal), "roots": rs, "repeat": repeat,
	}, &out)
	return out, err
}

// SnarkProof is snarkjs' proof.json: projective coordinates as decimal
// strings (G2 coordinates as [c0, c1]).
type SnarkProof struct {
	PiA      []string   `json:"pi_a"`
	PiB      [][]string `json:"pi_b"`
	PiC      []string   `json:"pi_c"`
	Protocol string     `json:"protocol,omitempty"`
	Curve    string     `json:"curve,omitempty"`
}

// SnarkProve is snarkjs' groth16.fullProve with the circuit's inputs by
// name (decimal strings or arrays of them), repeat times.
// The two durations are the mean wall and CPU time per proof in ms.
func (p *Peer) SnarkProve(inputs map[string]any, repeat int) (proof SnarkProof, public []string, ms, cpuMs float64, err error) {
	var out struct {
		Proof         SnarkProof `json:"proof"`
		PublicSignals []string   `json:"publicSignals"`
		Ms            float64    `json:"ms"`
		CPUMs         float64    `json:"cpuMs"`
	}
	err = p.call("snarkProve", map[string]any{"inputs": inputs, "repeat": repeat}, &out)
	return out.Proof, out.PublicSignals, out.Ms, out.CPUMs, err
}

// SnarkVerify is snarkjs' groth16.verify with the zkey's verification key.
func (p *Peer) SnarkVerify(proof *SnarkProof, public []string, repeat int) (Verdict, error) {
	var out Verdict
	err := p.call("snarkVerify", map[string]any{"proof": proof, "publicSignals": public, "repeat": repeat}, &out)
	return out, err
}

// Signal is nwaku's toRLNSignal computed in JavaScript, and zerokit's hash
// of it.
func (p *Peer) Signal(payload []byte, contentTopic string, timestamp int64) (signal, x []byte, err error) {
	var out struct {
		Signal Hex `json:"signal"`
		X      Hex `json:"x"`
	}
	err = p.call("signal", map[string]any{"payload": Hex(payload), "contentTopic": contentTopic,
		"timestamp": strconv.FormatInt(timestamp, 10)}, &out)
	return out.Signal, out.X, err
}

// Epoch is nwaku's calcEpoch of a timestamp in nanoseconds, computed in
// JavaScript's float64: 32 bytes.
func (p *Peer) Epoch(timestamp int64, epochSec uint64) ([]byte, error) {
	var out Hex
	err := p.call("epoch", map[string]any{"timestamp": strconv.FormatInt(timestamp, 10), "epochSec": epochSec}, &out)
	return out, err
}

// ExternalNullifier is nwaku's generateExternalNullifier with zerokit's
// hash and Poseidon.
func (p *Peer) ExternalNullifier(epoch, rlnIdentifier []byte) ([]byte, error) {
	var out Hex
	err := p.call("ext", map[string]any{"epoch": Hex(epoch), "rlnIdentifier": Hex(rlnIdentifier)}, &out)
	return out, err
}

// EncodeProof is nwaku's RateLimitProof encoding of the seven fields, in
// field order, written in JavaScript.
func (p *Peer) EncodeProof(fields ...[]byte) ([]byte, error) {
	fs := make([]Hex, len(fields))
	for i := range fields {
		fs[i] = fields[i]
	}
	var out Hex
	err := p.call("encodeProof", map[string]any{"fields": fs}, &out)
	return out, err
}

// Witness runs circom's witness calculator (rln.wasm) on the named inputs
// and returns every wire as a decimal string.
func (p *Peer) Witness(inputs map[string]any) ([]string, error) {
	var out []string
	err := p.call("witness", map[string]any{"inputs": inputs}, &out)
	return out, err
}

func require(t testing.TB) {
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
	if err := install(); err != nil {
		t.Fatalf("zerokit/snarkjs peer: %v", err)
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	msg := "zerokit/snarkjs peer: " + why + ": install Node.js 20 or later with npm, then run go test again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// install runs npm ci unless node_modules is newer than package-lock.json;
// an flock keeps several test binaries from installing at once.
func install() error {
	dir := Dir()
	lock, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
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
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return nil
}
