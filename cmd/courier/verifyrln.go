package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/rlnrelay"
)

const verifyRLNHelp = `usage: courier message verify-rln --root HEX[,HEX...] --epoch-sec N [--now UNIX_NS] < message.json

Reads one message in the REST JSON shape from stdin,
  {"payload": base64, "contentTopic": "...", "timestamp": ns, "meta": base64,
   "version": n, "ephemeral": bool, "proof": base64}
where proof is the RateLimitProof protobuf (WakuMessage field 21), and checks
it as an RLN relay validator does (17/WAKU2-RLN-RELAY, nwaku v0.38.1's
order): the message's own limits, then the proof decodes, the timestamp is
within 20 s of --now (only when --now is given, so that saved messages can
be checked), the proof's epoch is the timestamp's, its root is one of
--root, the zkSNARK verifies for the message (share_x is the hash of its
payload, content topic and timestamp), and it is for Waku's rln_identifier.
The nullifier log, which needs other messages, is not checked.

Prints "valid" and exits 0, or prints the reason and what failed, as
"REASON: detail" (REASON as in courier_rln_messages_total, e.g. invalid_root,
timestamp_mismatch, invalid_proof), and exits 1.

Each --root is the 32 bytes of a merkle_root as the proof carries them
(little-endian), in hex: 64 hex digits, 0x allowed. nwaku's logs print roots
the other way round (most significant byte first).

Flags:
`

// errNotValid is verify-rln's error for a message that is not valid; the
// reason is on stdout.
var errNotValid = errors.New("message is not valid")

// verifyRLN is "courier message verify-rln".
func verifyRLN(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("message verify-rln", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, verifyRLNHelp); fs.PrintDefaults() }
	var roots rootList
	fs.Var(&roots, "root", "acceptable merkle root(s), hex of the 32 wire bytes, comma separated or repeated (required)")
	epochSec := fs.Uint64("epoch-sec", 0, "epoch length in seconds, as --rln-relay-epoch-sec (required; The Waku Network: 600)")
	nowNs := fs.Int64("now", 0, "local time in Unix nanoseconds for the 20 s clock-gap check; absent: no clock check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(roots) == 0:
		return errors.New("--root is required")
	case *epochSec == 0:
		return errors.New("--epoch-sec is required and at least 1")
	}
	var now time.Time
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "now" {
			now = time.Unix(0, *nowNs)
		}
	})
	m, err := readMessage(stdin)
	if err != nil {
		return err
	}
	verifier, err := rln.NewVerifier(rln.VerifierConfig{})
	if err != nil {
		return err
	}
	v, err := rlnrelay.New(rlnrelay.Config{Verifier: verifier, Roots: rlnrelay.StaticRoots(roots), EpochSec: *epochSec})
	if err != nil {
		return err
	}
	reason, detail := checkRLN(v, m, now)
	if reason == "valid" {
		_, err := fmt.Fprintln(stdout, "valid")
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s: %s\n", reason, detail); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", errNotValid, reason)
}

// checkRLN applies the relay's message rules and then the RLN validator's
// checks, returning "valid" or the reason and its detail.
func checkRLN(v *rlnrelay.Validator, m *message.Message, now time.Time) (reason, detail string) {
	if _, err := message.Decode(m.Encode(nil), nil); err != nil {
		return "invalid_message", err.Error()
	}
	if err := message.Validate(m); err != nil {
		return "invalid_content_topic", err.Error()
	}
	r := v.Check(m, now)
	if r.Reason == rlnrelay.Valid {
		return "valid", ""
	}
	return r.Reason.String(), r.Err.Error()
}

// rootList is --root: 32-byte roots in hex, comma separated, repeatable.
type rootList []rln.Field

func (l *rootList) String() string {
	parts := make([]string, len(*l))
	for i, r := range *l {
		parts[i] = hex.EncodeToString(r[:])
	}
	return strings.Join(parts, ",")
}

func (l *rootList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "0x")
		b, err := hex.DecodeString(part)
		if err != nil || len(b) != rln.FieldSize {
			return fmt.Errorf("root %q is not 64 hex digits (32 bytes)", part)
		}
		*l = append(*l, rln.Field(b))
	}
	return nil
}
