package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rest"
)

const messageHashHelp = `usage: courier message hash [--pubsub-topic TOPIC] < message.json

Reads one message in the REST JSON shape from stdin,
  {"payload": base64, "contentTopic": "...", "timestamp": ns, "meta": base64,
   "version": n, "ephemeral": bool}
and prints its deterministic message hash (14/WAKU2-MESSAGE) as lowercase
hex. The message is hashed as given: an absent timestamp is hashed as 8 zero
bytes, never replaced by the current time, and an empty payload or content
topic is hashed too (publishing refuses them, hashing does not).

Flags:
`

const messageUsage = "usage: courier message hash [--pubsub-topic TOPIC] < message.json\n" +
	"       courier message verify-rln --root HEX[,HEX...] --epoch-sec N [--now UNIX_NS] < message.json"

func runMessage(args []string) error { return messageCommand(args, os.Stdin, os.Stdout) }

// messageCommand runs "courier message hash" or "courier message
// verify-rln" with stdin and stdout.
func messageCommand(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "verify-rln" {
		return verifyRLN(args[1:], stdin, stdout)
	}
	return messageHash(args, stdin, stdout)
}

// messageHash is "courier message hash" reading the message from stdin and
// printing the hash to stdout.
func messageHash(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "hash" {
		return errors.New(messageUsage)
	}
	fs := flag.NewFlagSet("message hash", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, messageHashHelp); fs.PrintDefaults() }
	topic := fs.String("pubsub-topic", "/waku/2/rs/0/0", "pubsub topic the message is published on")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	m, err := readMessage(stdin)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, m.Hash(*topic, nil))
	return err
}

// readMessage reads one message in the REST JSON shape, at most 1 MiB.
func readMessage(stdin io.Reader) (*message.Message, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > 1<<20 {
		return nil, errors.New("message JSON over 1 MiB")
	}
	return rest.DecodeMessage(data)
}
