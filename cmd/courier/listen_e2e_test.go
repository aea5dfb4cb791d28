package main

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testE2EPortInUse: a TCP or WebSocket port in use ends the node with exit
// code 1 and a last line naming the problem: the WebSocket one no longer
// leaves a node running on TCP alone, and go-libp2p's fx start-up log
// lines do not precede courier's error.
func testE2EPortInUse(t *testing.T, bin string) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := strconv.Itoa(held.Addr().(*net.TCPAddr).Port)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"tcp", []string{"--tcp-port=" + port},
			"courier node: node: start libp2p host: failed to listen on any addresses: [listen tcp4 127.0.0.1:" + port + ": bind: address already in use]\n"},
		{"websocket", []string{"--tcp-port=0", "--websocket-support=true", "--websocket-port=" + port},
			"courier node: node: --websocket-port " + port + ": cannot listen on /ip4/127.0.0.1/tcp/" + port + "/ws: listen tcp 127.0.0.1:" + port + ": bind: address already in use\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"--listen-address=127.0.0.1", "--rest=false", "--metrics-server=false"}, tt.args...)...)
			cmd.Env = childEnv()
			var stderr, stdout bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("still running with port %s in use:\n%s", port, stderr.String())
			}
			var exit *exec.ExitError
			out := stderr.String()
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || out != tt.want || strings.Contains(stdout.String(), "fx") {
				t.Fatalf("exit %v, stderr\n%s\nstdout\n%s\nwant exit 1, no fx lines, and the error alone on stderr\n%s", err, out, stdout.String(), tt.want)
			}
		})
	}
}
