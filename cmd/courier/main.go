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
	"strings"

	"github.com/couriernet/courier/cmd/courier/internal/stopsignal"
)

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"node", "run a Waku node", runNode},
		{"generateRlnKeystore", "register an RLN membership and save it to a keystore, as nwaku's", runKeystore},
		{"bench", "run the message-path benchmark", runBench},
		{"message", "message tools: `courier message hash`, `courier message verify-rln`", runMessage},
		{"publish", "publish a message through a node's REST API", runPublish},
		{"subscribe", "subscribe through a node's REST API and print messages", runSubscribe},
		{"query", "query a store node, directly or through a node's REST API", runQuery},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: courier <command> [flags]\n       courier [node flags]   (runs a node, as nwaku's wakunode2)\n       WAKUNODE2_<FLAG>=... courier   (the same, flags from the environment)\n       courier --version\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun `courier <command> --help` for a command's flags. Exit code: 0 on success, 1 on any error.\n")
}

// main runs the node at once when asked to, since SIGINT and SIGTERM have
// been caught from the process's first moments for it (stopsignal); every
// other command first gives them back their default action.
func main() {
	if isNodeInvocation(os.Args[0], os.Args[1:], os.Environ()) {
		exit("node", runNode(os.Args[1:]))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "node" {
		exit("node", runNode(os.Args[2:]))
		return
	}
	stopsignal.Release()
	if len(os.Args) < 2 {
		usage()
		os.Exit(1)
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
	os.Exit(1)
}

// exit ends the process for a command's error, by one rule for every
// command: 0 for none (--help and --version included), else the error on
// one line of stderr and 1, whether a flag, an environment variable, a
// config file or the configuration as a whole was refused, or the command
// failed while running. 1 is nwaku's code for all of these: confutils
// quits with QuitFailure on a flag it cannot take, and wakunode2 on a
// configuration it refuses (apps/wakunode2/wakunode2.nim).
func exit(name string, err error) {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintf(os.Stderr, "courier %s: %s\n", name, oneLine(err))
	os.Exit(1)
}

// oneLine returns err's text on one line: the lines of an error that has
// several (errors.Join's, pgx's for each address it dialed) trimmed and
// joined with "; ", or with a space after a line that ends in ":" and so
// introduces the next.
func oneLine(err error) string {
	var b strings.Builder
	for line := range strings.Lines(err.Error()) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteByte(' ')
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return b.String()
}
