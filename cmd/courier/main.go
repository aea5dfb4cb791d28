// Command courier is a Waku node, a message-path benchmark and a set of
// small clients. Run `courier help` for the subcommands. With nwaku's flags
// and no subcommand, with no arguments but WAKUNODE2_<FLAG> variables, or
// under the name wakunode2, it runs a node with nwaku v0.38.1's command line.
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
		{"query", "query a store node, directly or through a node's REST API", runQuery},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: courier <command> [flags]\n       courier [node flags]   (runs a node, as nwaku's wakunode2)\n       WAKUNODE2_<FLAG>=... courier   (the same, flags from the environment)\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun `courier <command> --help` for a command's flags.\n")
}

func main() {
	if isNodeInvocation(os.Args[0], os.Args[1:], os.Environ()) {
		exit("node", runNode(os.Args[1:]))
		return
	}
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
			exit(c.name, c.run(os.Args[2:]))
			return
		}
	}
	fmt.Fprintf(os.Stderr, "courier: unknown command %q\n", os.Args[1])
	usage()
	os.Exit(2)
}

// exit ends the process for a command's error: 0 for none or --help, 2 for
// a command line that cannot be parsed or asks for what is not supported,
// 1 for anything else.
func exit(name string, err error) {
	var refused *refusedError
	var bad *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return
	case errors.As(err, &refused), errors.As(err, &bad):
		fmt.Fprintf(os.Stderr, "courier %s: %v\n", name, err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "courier %s: %v\n", name, err)
		os.Exit(1)
	}
}
