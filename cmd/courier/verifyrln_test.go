package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/testcircuit"
	"github.com/couriernet/courier/rln"
)

var updateRLN = flag.Bool("update", false, "rewrite testdata/verify-rln with fresh proofs (needs the RLN circuit files)")

// The golden inputs of verify-rln: messages with proofs made by a member
// with limit 10 at leaf 42 of a tree whose other nodes are fixed values,
// epochs of 600 s, timestamps 200 s into epoch vrEpoch.
const (
	vrDir      = "testdata/verify-rln"
	vrEpochSec = 600
	vrEpoch    = 2941100
	vrT0       = int64(vrEpoch*vrEpochSec+200) * int64(time.Second)
)

// rlnMessage is the REST JSON shape verify-rln reads.
type rlnMessage struct {
	Payload      []byte `json:"payload"`
	ContentTopic string `json:"contentTopic"`
	Timestamp    int64  `json:"timestamp"`
	Proof        []byte `json:"proof,omitempty"`
}

func (m rlnMessage) json(t *testing.T) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readRESTMessage(t *testing.T, name string) rlnMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vrDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var m rlnMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func vrMember(t *testing.T) (*rln.Member, rln.Field) {
	t.Helper()
	id := rln.SeededIdentityCredential([]byte("verify-rln golden member"))
	leaf, err := rln.RateCommitment(id.Commitment, 10)
	if err != nil {
		t.Fatal(err)
	}
	path := rln.MerklePath{Index: 42}
	for i := range path.Siblings {
		path.Siblings[i] = rln.HashToField([]byte(fmt.Sprint("verify-rln sibling ", i)))
	}
	root, err := path.Root(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return &rln.Member{SecretHash: id.SecretHash, UserMessageLimit: 10, Path: path}, root
}

func prove(t *testing.T, p *rln.Prover, member *rln.Member, id uint64, payload string, ts int64) rlnMessage {
	t.Helper()
	s := rln.Signal{Payload: []byte(payload), ContentTopic: "/courier/1/verify-rln/proto", Timestamp: ts}
	proof, err := p.Prove(s, member, id, rln.EpochAt(ts, vrEpochSec))
	if err != nil {
		t.Fatal(err)
	}
	return rlnMessage{Payload: s.Payload, ContentTopic: s.ContentTopic, Timestamp: ts, Proof: proof.Marshal()}
}

// TestMakeVerifyRLNGolden rewrites the golden inputs with -update (and
// TestVerifyRLNGolden, run with -update too, the expected outputs).
func TestMakeVerifyRLNGolden(t *testing.T) {
	if !*updateRLN {
		t.Skip("run with -update to rewrite " + vrDir)
	}
	dir := testcircuit.Dir(t)
	p, err := rln.NewProver(rln.ProverConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var other rln.RLNIdentifier
	copy(other[:], "another application")
	po, err := rln.NewProver(rln.ProverConfig{Dir: dir, RLNIdentifier: other})
	if err != nil {
		t.Fatal(err)
	}
	member, root := vrMember(t)
	if err := os.MkdirAll(vrDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(vrDir, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("valid.json", prove(t, p, member, 3, "hello, The Waku Network", vrT0).json(t))
	write("other-app.json", prove(t, po, member, 4, "a message for another application", vrT0+1).json(t))
	write("roots.txt", []byte(hex.EncodeToString(root[:])))
}

// verifyCase is one run of verify-rln: its input and flags.
type verifyCase struct {
	name  string
	msg   func(rlnMessage) rlnMessage
	input string // another golden input than valid.json
	args  func(root string) []string
}

// withField returns proof with field num replaced (appended last, so it
// wins, as protobuf reads it).
func withField(proof []byte, num protowire.Number, v []byte) []byte {
	out := append([]byte(nil), proof...)
	out = protowire.AppendTag(out, num, protowire.BytesType)
	return protowire.AppendBytes(out, v)
}

func proofField(t *testing.T, proof []byte, num int) []byte {
	p, err := rln.DecodeRateLimitProof(proof)
	if err != nil {
		t.Fatal(err)
	}
	switch num {
	case 1:
		return p.Proof[:]
	case 2:
		return p.MerkleRoot[:]
	case 3:
		return p.Epoch[:]
	case 6:
		return p.Nullifier[:]
	}
	t.Fatalf("field %d", num)
	return nil
}

// verifyCases are the golden runs: each changes one thing of the valid
// message or the flags.
func verifyCases(t *testing.T) []verifyCase {
	std := func(root string) []string { return []string{"--root", root, "--epoch-sec", strconv.Itoa(vrEpochSec)} }
	at := func(now int64) func(string) []string {
		return func(root string) []string { return append(std(root), "--now", strconv.FormatInt(now, 10)) }
	}
	same := func(m rlnMessage) rlnMessage { return m }
	flip := func(num protowire.Number, i int) func(rlnMessage) rlnMessage {
		return func(m rlnMessage) rlnMessage {
			v := append([]byte(nil), proofField(t, m.Proof, int(num))...)
			v[i] ^= 1
			m.Proof = withField(m.Proof, num, v)
			return m
		}
	}
	return []verifyCase{
		{name: "valid", msg: same, args: std},
		{name: "valid, clock within 20 s", msg: same, args: at(vrT0 + 20*int64(time.Second))},
		{name: "valid, several roots", msg: same, args: func(root string) []string {
			return []string{"--root", strings.Repeat("ab", 32) + ",0x" + root, "--epoch-sec", strconv.Itoa(vrEpochSec)}
		}},
		{name: "clock 21 s ahead", msg: same, args: at(vrT0 + 21*int64(time.Second))},
		{name: "no proof", msg: func(m rlnMessage) rlnMessage { m.Proof = nil; return m }, args: std},
		{name: "malformed proof", msg: func(m rlnMessage) rlnMessage { m.Proof = []byte{0x0a, 0x90}; return m }, args: std},
		{name: "other epoch length", msg: same, args: func(root string) []string { return []string{"--root", root, "--epoch-sec", "60"} }},
		{name: "timestamp in the next epoch", msg: func(m rlnMessage) rlnMessage { m.Timestamp += 600 * int64(time.Second); return m }, args: std},
		{name: "timestamp changed in its epoch", msg: func(m rlnMessage) rlnMessage { m.Timestamp++; return m }, args: std},
		{name: "payload changed", msg: func(m rlnMessage) rlnMessage { m.Payload = []byte("hello, another network"); return m }, args: std},
		{name: "content topic changed", msg: func(m rlnMessage) rlnMessage { m.ContentTopic = "/courier/1/other/proto"; return m }, args: std},
		{name: "epoch field changed", msg: flip(3, 0), args: std},
		{name: "root field changed", msg: flip(2, 5), args: std},
		{name: "nullifier changed", msg: flip(6, 9), args: std},
		{name: "proof bytes changed", msg: flip(1, 100), args: std},
		{name: "root not given", msg: same, args: func(string) []string {
			return []string{"--root", strings.Repeat("cd", 32), "--epoch-sec", strconv.Itoa(vrEpochSec)}
		}},
		{name: "non-canonical nullifier", msg: func(m rlnMessage) rlnMessage {
			n := proofField(t, m.Proof, 6)
			m.Proof = withField(m.Proof, 6, plusR(n))
			return m
		}, args: std},
		{name: "another application's proof", input: "other-app.json", msg: same, args: std},
		{name: "empty content topic", msg: func(m rlnMessage) rlnMessage { m.ContentTopic = " "; return m }, args: std},
	}
}

// plusR returns the little-endian field element le plus the modulus r.
func plusR(le []byte) []byte {
	be := make([]byte, len(le))
	for i := range le {
		be[len(le)-1-i] = le[i]
	}
	n := new(big.Int).Add(new(big.Int).SetBytes(be), fr.Modulus())
	b := n.FillBytes(make([]byte, 32))
	out := make([]byte, 32)
	for i := range b {
		out[31-i] = b[i]
	}
	return out
}

// TestVerifyRLNGolden runs verify-rln on the golden inputs, unchanged and
// with one thing changed each, and compares what it prints and whether it
// fails with testdata/verify-rln/expected.txt (rewritten with -update).
func TestVerifyRLNGolden(t *testing.T) {
	rootHex, err := os.ReadFile(filepath.Join(vrDir, "roots.txt"))
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(rootHex))
	var got strings.Builder
	for _, tc := range verifyCases(t) {
		input := "valid.json"
		if tc.input != "" {
			input = tc.input
		}
		m := tc.msg(readRESTMessage(t, input))
		var out bytes.Buffer
		err := verifyRLN(tc.args(root), bytes.NewReader(m.json(t)), &out)
		switch {
		case err == nil:
			if out.String() != "valid\n" {
				t.Errorf("%s: exit 0 with %q", tc.name, out.String())
			}
		case errors.Is(err, errNotValid):
			if out.String() == "valid\n" || !strings.HasSuffix(err.Error(), strings.SplitN(out.String(), ":", 2)[0]) {
				t.Errorf("%s: error %v with output %q", tc.name, err, out.String())
			}
		default:
			t.Errorf("%s: %v", tc.name, err)
		}
		fmt.Fprintf(&got, "%s => exit %d: %s", tc.name, map[bool]int{true: 0, false: 1}[err == nil], out.String())
	}
	path := filepath.Join(vrDir, "expected.txt")
	if *updateRLN {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("verify-rln output:\n%s\nwant (%s):\n%s", got.String(), path, want)
	}
}

// TestVerifyRLNExpectedReasons pins the reason of each golden run, so that
// the expected outputs cannot drift unnoticed when rewritten.
func TestVerifyRLNExpectedReasons(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(vrDir, "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{
		"valid": "valid", "valid, clock within 20 s": "valid", "valid, several roots": "valid",
		"clock 21 s ahead": "invalid_timestamp", "no proof": "no_proof", "malformed proof": "malformed_proof",
		"other epoch length": "timestamp_mismatch", "timestamp in the next epoch": "timestamp_mismatch",
		"timestamp changed in its epoch": "invalid_proof", "payload changed": "invalid_proof",
		"content topic changed": "invalid_proof", "epoch field changed": "timestamp_mismatch",
		"root field changed": "invalid_root", "nullifier changed": "invalid_proof", "proof bytes changed": "invalid_proof",
		"root not given": "invalid_root", "non-canonical nullifier": "non_canonical",
		"another application's proof": "rln_identifier", "empty content topic": "invalid_content_topic",
	}
	lines := strings.Split(strings.TrimSpace(string(want)), "\n")
	if len(lines) != len(reasons) {
		t.Fatalf("%d expected outputs, %d reasons pinned", len(lines), len(reasons))
	}
	for _, line := range lines {
		name, rest, ok := strings.Cut(line, " => ")
		if !ok {
			t.Fatalf("line %q", line)
		}
		_, output, _ := strings.Cut(rest, ": ")
		reason, _, _ := strings.Cut(output, ":")
		if reasons[name] != reason {
			t.Errorf("%s: reason %q, want %q", name, reason, reasons[name])
		}
		if wantExit := map[bool]string{true: "exit 0", false: "exit 1"}[reason == "valid"]; !strings.HasPrefix(rest, wantExit) {
			t.Errorf("%s: %s", name, rest)
		}
	}
}

// TestVerifyRLNFreshProof makes a proof now with the prover and checks it
// with verify-rln through the message command, with and without a clock.
func TestVerifyRLNFreshProof(t *testing.T) {
	p, err := rln.NewProver(rln.ProverConfig{Dir: testcircuit.Dir(t)})
	if err != nil {
		t.Fatal(err)
	}
	member, root := vrMember(t)
	now := time.Now().UnixNano()
	m := prove(t, p, member, 0, "fresh", now)
	for _, tc := range []struct {
		now  string
		want string
	}{
		{"", "valid\n"},
		{strconv.FormatInt(now+int64(time.Second), 10), "valid\n"},
		{strconv.FormatInt(now+int64(time.Minute), 10), "invalid_timestamp: "},
	} {
		args := []string{"verify-rln", "--root", hex.EncodeToString(root[:]), "--epoch-sec", strconv.Itoa(vrEpochSec)}
		if tc.now != "" {
			args = append(args, "--now", tc.now)
		}
		var out bytes.Buffer
		err := messageCommand(args, bytes.NewReader(m.json(t)), &out)
		if !strings.HasPrefix(out.String(), tc.want) || (err == nil) != (tc.want == "valid\n") {
			t.Fatalf("--now %q: %v, %q; want %q", tc.now, err, out.String(), tc.want)
		}
	}
}

// TestVerifyRLNUsage: bad flags and input are errors, not verdicts.
func TestVerifyRLNUsage(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join(vrDir, "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := strings.Repeat("00", 32)
	for _, tc := range []struct {
		args  []string
		input string
	}{
		{[]string{"--epoch-sec", "600"}, string(valid)},
		{[]string{"--root", root}, string(valid)},
		{[]string{"--root", root, "--epoch-sec", "0"}, string(valid)},
		{[]string{"--root", "abcd", "--epoch-sec", "600"}, string(valid)},
		{[]string{"--root", root, "--epoch-sec", "600", "extra"}, string(valid)},
		{[]string{"--root", root, "--epoch-sec", "600"}, `{"payload":"aGk=","contentTopic":"/a/1/b/c","proof":"***"}`},
		{[]string{"--root", root, "--epoch-sec", "600"}, "not json"},
	} {
		var out bytes.Buffer
		err := verifyRLN(tc.args, strings.NewReader(tc.input), &out)
		if err == nil || errors.Is(err, errNotValid) || out.Len() != 0 {
			t.Errorf("%v on %.20q: %v, output %q", tc.args, tc.input, err, out.String())
		}
	}
	// The proof is base64 of the protobuf in the JSON, as REST carries it.
	var m struct{ Proof string }
	if err := json.Unmarshal(valid, &m); err != nil {
		t.Fatal(err)
	}
	if b, err := base64.StdEncoding.DecodeString(m.Proof); err != nil || len(b) != rln.EncodedProofSize {
		t.Fatalf("golden proof: %d bytes, %v", len(b), err)
	}
}
