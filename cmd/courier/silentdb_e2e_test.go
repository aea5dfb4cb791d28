//go:build unix

package main

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive/postgres"
)

// testE2ESilentDatabase: a Postgres URL naming a server that accepts and
// never answers (a wrong port, a stuck proxy) held the node in start-up
// for ever, deaf to SIGTERM and SIGINT however many came. The start now
// fails after postgres.DefaultConnectTimeout with one line and exit code
// 1; and while it waits, a second SIGTERM ends the process at once.
func testE2ESilentDatabase(t *testing.T, bin string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	}()
	start := func() *proc {
		p := startProc(t, "silent-db", bin, "node", "--listen-address=127.0.0.1", "--tcp-port=0", "--rest=false",
			"--store=true", "--data-dir="+t.TempDir(), "--store-message-db-url=postgres://u:p@"+ln.Addr().String()+"/db")
		select {
		case <-accepted:
		case <-time.After(15 * time.Second):
			t.Fatal("the node did not connect to the database")
		}
		return p
	}

	p := start()
	select {
	case <-p.done:
	case <-time.After(postgres.DefaultConnectTimeout + 15*time.Second):
		t.Fatalf("still starting %v after connecting to a database that does not answer", postgres.DefaultConnectTimeout+15*time.Second)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(p.log.String(), "timeout") {
		t.Fatalf("exit code %d, stderr %q: want 1 and a line naming the timeout", code, p.log)
	}

	p = start()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		t.Fatal("still running 3 s after a second SIGTERM")
	}
}
