//go:build unix

package membership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/rln/internal/chaintest"
	"github.com/couriernet/courier/rln/membership"
)

// TestOutageAndRecovery: the Manager's own loop polls an HTTP endpoint;
// when the RPC server stops, it keeps its roots and reports NOT_READY in
// Health and a warning in the log; registrations go on meanwhile; when the
// server is back it catches up with the root after each of them and is
// READY again.
func TestOutageAndRecovery(t *testing.T) {
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	srv := chain.Serve(t)
	logs := &logBuffer{}
	cfg := config(d, logs, srv.URL())
	cfg.PollInterval = 50 * time.Millisecond
	cfg.CallTimeout = 2 * time.Second
	m := start(t, cfg)
	initial, _ := m.Window().Latest()

	srv.Stop()
	eventually(t, "NOT_READY", func() bool { return m.Health().State == membership.StateNotReady })
	h := m.Health()
	if h.Failures < 2 || h.Roots != 1 || !strings.Contains(h.Desc, "Ethereum RPC failing") || !strings.Contains(h.Desc, "validating with the 1 roots known") || h.LastError == "" {
		t.Fatalf("Health during the outage = %+v", h)
	}
	if !m.AcceptableRoot(initial[:]) {
		t.Fatal("the known root was dropped during the outage")
	}
	if !logs.contains("membership contract unreachable") {
		t.Fatalf("no warning logged:\n%s", logs)
	}

	ms := register(t, d, 3)
	srv.Start(t)
	want := [][32]byte{initial}
	for i := range ms {
		want = append(want, le(treeRoot(t, leaves(t, ms[:i+1]))))
	}
	eventually(t, "catch-up", func() bool { return equalRoots(m.Window().Roots(), want) })
	eventually(t, "READY", func() bool { return m.Health().State == membership.StateReady })
	if h := m.Health(); h.Failures != 0 || h.Members != 3 || h.Desc != "" {
		t.Fatalf("Health after recovery = %+v", h)
	}
	if !logs.contains("membership contract reachable again") {
		t.Fatalf("no recovery logged:\n%s", logs)
	}
}

// TestEndpointsInOrder: with two endpoints the first is used; when it
// stops, the second takes over within the same poll; the Manager stays on
// it (as nwaku stays on the client it connected) until it fails, then goes
// back to the first; with both down, polls fail and Health says so.
func TestEndpointsInOrder(t *testing.T) {
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	a, b := chain.Serve(t), chain.Serve(t)
	m := start(t, config(d, nil, a.URL(), b.URL()))
	endpoint := func(want *chaintest.Server) {
		t.Helper()
		if got := m.Health().Endpoint; got != membership.Redact(want.URL()) {
			t.Fatalf("endpoint %s, want %s", got, want.URL())
		}
	}
	var ms []member
	step := func(want *chaintest.Server) {
		t.Helper()
		ms = append(ms, register(t, d, 1)...)
		membership.Poll(m)
		endpoint(want)
		latest, _ := m.Window().Latest()
		if root := le(treeRoot(t, leaves(t, ms))); latest != root {
			t.Fatalf("latest root %x, want %x", latest, root)
		}
		if h := m.Health(); h.Failures != 0 || h.State != membership.StateReady {
			t.Fatalf("Health = %+v", h)
		}
	}
	endpoint(a)
	a.Stop()
	step(b)
	a.Start(t)
	step(b)
	b.Stop()
	step(a)

	a.Stop()
	membership.Poll(m)
	if h := m.Health(); h.Failures != 1 || h.State != membership.StateReady {
		t.Fatalf("after one failed poll: %+v", h)
	}
	membership.Poll(m)
	if h := m.Health(); h.Failures != 2 || h.State != membership.StateNotReady || !strings.Contains(h.LastError, "no Ethereum RPC endpoint answered") {
		t.Fatalf("after two failed polls: %+v", h)
	}
	b.Start(t)
	step(b)
}

// TestWebSocketEndpoint: a ws:// endpoint works, and after its server
// restarts (dropping the connection) the Manager reconnects and catches
// up.
func TestWebSocketEndpoint(t *testing.T) {
	chain := chaintest.NewServed(t)
	d := chain.Deploy(t, chaintest.DeployConfig{})
	srv := chain.Serve(t)
	m := start(t, config(d, nil, srv.WSURL()))
	ms := register(t, d, 1)
	membership.Poll(m)
	if m.Window().Len() != 2 || m.Health().Endpoint != membership.Redact(srv.WSURL()) {
		t.Fatalf("window %d roots, Health %+v", m.Window().Len(), m.Health())
	}
	srv.Stop()
	membership.Poll(m)
	if m.Health().Failures != 1 {
		t.Fatalf("poll with the server down: %+v", m.Health())
	}
	ms = append(ms, register(t, d, 2)...)
	srv.Start(t)
	membership.Poll(m)
	if h := m.Health(); h.Failures != 0 || h.Roots != 4 || h.Members != 3 {
		t.Fatalf("after restart: %+v", h)
	}
	latest, _ := m.Window().Latest()
	if latest != le(treeRoot(t, leaves(t, ms))) {
		t.Fatal("latest root is not the contract's")
	}
}
