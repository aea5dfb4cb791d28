package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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

func runMessage(args []string) error { return messageHash(args, os.Stdin, os.Stdout) }

// messageHash is "courier message hash" reading the message from stdin and
// printing the hash to stdout.
func messageHash(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "hash" {
		return errors.New("usage: courier message hash [--pubsub-topic TOPIC] < message.json")
	}
	fs := flag.NewFlagSet("message hash", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, messageHashHelp); fs.PrintDefaults() }
	topic := fs.String("pubsub-topic", "/waku/2/rs/0/0", "pubsub topic the message is published on")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > 1<<20 {
		return errors.New("message JSON over 1 MiB")
	}
	m, err := rest.DecodeMessage(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, m.Hash(*topic, nil))
	return err
}
