// Command courier is a Waku node, a message-path benchmark and a set of
// small clients. Run `courier help` for the subcommands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"node", "run a Waku node", runNode},
		{"bench", "run the message-path benchmark", runBench},
		{"message", "message tools: `courier message hash`", runMessage},
		{"publish", "publish a message through a node's REST API", runPublish},
		{"subscribe", "subscribe through a node's REST API and print messages", runSubscribe},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: courier <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun `courier <command> --help` for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	if a := os.Args[1]; a == "help" || a == "-h" || a == "--help" {
		usage()
		return
	}
	for _, c := range commands {
		if c.name == os.Args[1] {
			err := c.run(os.Args[2:])
			if errors.Is(err, flag.ErrHelp) {
				return // --help printed the command's usage
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "courier %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "courier: unknown command %q\n", os.Args[1])
	usage()
	os.Exit(2)
}
