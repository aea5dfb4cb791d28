//go:build unix

package jstest

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/freeport"
	"github.com/couriernet/courier/libnet"
)

// The keys of lib.js (lib-net's crypto test vectors).
const (
	hashKeyHex = "64f152869ca2d473e4ba64ab53f49ccdb2edae22da192c126850970e788af347"
	secretHex  = "c3774b92cc8850fb4026b073081290b82cab3c0f66cac250b4d710ee9aaf83ed8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d"
	publicHex  = "8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d"
)

func goEndpoint(t *testing.T, cfg libnet.Config) *libnet.Endpoint {
	t.Helper()
	hk, _ := hex.DecodeString(hashKeyHex)
	sk, _ := hex.DecodeString(secretHex)
	cfg.ListenAddr, cfg.HashKey, cfg.SigningKey = "127.0.0.1:0", hk, ed25519.PrivateKey(sk)
	if cfg.SenderID == "" {
		cfg.SenderID = "go-node"
	}
	e, err := libnet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Every published wrapper, and courier's package, load the core unchanged
// and exchange plain tells, signed tells, signed asks with their replies
// and multi-sends with every other, across processes: each client runs
// against each server, and its multi-send reaches all four servers.
func TestWrappersAcrossProcesses(t *testing.T) {
	require(t)
	ports := freeport.Get(t, 2*len(Impls))
	servers := map[string]*proc{}
	var serverPorts []int
	for i, impl := range Impls {
		servers[impl] = start(t, "serve.js", map[string]any{"impl": impl, "port": ports[i]})
		serverPorts = append(serverPorts, ports[i])
	}
	for ci, client := range Impls {
		for si, server := range Impls {
			order := append([]int{serverPorts[si]}, without(serverPorts, si)...)
			var res struct {
				Reply struct {
					Data   map[string]any
					Header map[string]any
					Sign   map[string]any
				}
			}
			run(t, "client.js", map[string]any{"impl": client, "port": ports[len(Impls)+ci], "servers": order}, &res)
			echo, _ := res.Reply.Data["echo"].(map[string]any)
			if echo["q"] != float64(7) || res.Reply.Header["sender_id"] != "server" || res.Reply.Sign["owner"] != publicHex {
				t.Fatalf("%s -> %s: reply %+v", client, server, res.Reply)
			}
			evs := servers[server].drain(300 * time.Millisecond)
			kinds := map[string]int{}
			for _, ev := range evs {
				data, _ := ev["data"].(map[string]any)
				kind, _ := data["kind"].(string)
				kinds[kind]++
				if kind == "tell-h" {
					h, _ := ev["header"].(map[string]any)
					s, _ := ev["sign"].(map[string]any)
					if h["sender_id"] != "client" || h["tracker_id"] != "t1" || s["owner"] != publicHex || len(s["sig"].(string)) != 192 {
						t.Fatalf("%s -> %s: signed tell arrived as %+v", client, server, ev)
					}
				}
				if kind == "tell" && ev["header"] != nil {
					t.Fatalf("%s -> %s: plain tell arrived with a header: %+v", client, server, ev)
				}
			}
			if kinds["tell"] != 1 || kinds["tell-h"] != 1 || kinds["ask"] != 2 || kinds["multi"] != 1 {
				t.Fatalf("%s -> %s: server %s saw %v", client, server, server, kinds)
			}
			for j, other := range Impls { // the multi-send and the flush ask reached the others
				if j == si {
					continue
				}
				got := map[string]int{}
				for _, ev := range servers[other].drain(100 * time.Millisecond) {
					data, _ := ev["data"].(map[string]any)
					got[fmt.Sprint(data["kind"])]++
				}
				if got["multi"] != 1 || got["ask"] != 1 {
					t.Fatalf("%s -> %s: server %s saw %v", client, server, other, got)
				}
			}
		}
	}
}

func without(s []int, i int) []int {
	out := append([]int{}, s[:i]...)
	return append(out, s[i+1:]...)
}

// A pure-Go libnet endpoint on the legacy lane talks to every wrapper and
// to courier's package: its tell arrives as shardus-core's binary route
// envelope ({"payload":{"value":base64,"dataType":"bb"},"route":…}) and
// its ask is answered through respond(). On the raw lane it talks to
// courier's package: a tell arrives as a Buffer, an ask is answered.
func TestGoEndpointInterop(t *testing.T) {
	require(t)
	ports := freeport.Get(t, len(Impls))
	g := goEndpoint(t, libnet.Config{Lane: libnet.LaneLegacy})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, impl := range Impls {
		s := start(t, "serve.js", map[string]any{"impl": impl, "port": ports[i]})
		peer := "127.0.0.1:" + strconv.Itoa(ports[i])
		if err := g.Tell(ctx, peer, libnet.Msg{Route: "binary/t", Payload: []byte("hello")}); err != nil {
			t.Fatalf("%s: tell: %v", impl, err)
		}
		ev := s.await("msg", 10*time.Second)
		data, _ := ev["data"].(map[string]any)
		pl, _ := data["payload"].(map[string]any)
		if data["route"] != "binary/t" || pl["value"] != base64.StdEncoding.EncodeToString([]byte("hello")) || pl["dataType"] != "bb" {
			t.Fatalf("%s: tell arrived as %+v", impl, ev)
		}
		if h, _ := ev["header"].(map[string]any); h["sender_id"] != "go-node" {
			t.Fatalf("%s: header %+v", impl, ev["header"])
		}
		r, err := g.Ask(ctx, peer, libnet.Msg{Route: "binary/ask", Payload: []byte("q")})
		if err != nil {
			t.Fatalf("%s: ask: %v", impl, err)
		}
		if !strings.Contains(string(r.Payload), `"echo"`) || r.Header.SenderID != "server" {
			t.Fatalf("%s: reply %q from %q", impl, r.Payload, r.Header.SenderID)
		}
	}

	raw := goEndpoint(t, libnet.Config{Lane: libnet.LaneRaw, SenderID: "go-raw"})
	rport := freeport.Get(t, 1)[0]
	s := start(t, "serve.js", map[string]any{"impl": "courier", "port": rport, "rawAll": true})
	peer := "127.0.0.1:" + strconv.Itoa(rport)
	if err := raw.Tell(ctx, peer, libnet.Msg{Route: "gossip", Payload: []byte{0, 1, 2, 255}}); err != nil {
		t.Fatal(err)
	}
	ev := s.await("raw", 10*time.Second)
	h, _ := ev["header"].(map[string]any)
	if ev["payload"] != base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255}) || ev["isBuffer"] != true || h["route"] != "gossip" ||
		h["sender_id"] != "go-raw" || h["dir"] != "tell" {
		t.Fatalf("raw tell arrived as %+v", ev)
	}
	r, err := raw.Ask(ctx, peer, libnet.Msg{Route: "q", Payload: []byte("abc")})
	if err != nil || string(r.Payload) != "re:abc" || r.Header.SenderID != "server" || r.Header.Lane() != libnet.LaneRaw {
		t.Fatalf("raw ask: %q %+v %v", r.Payload, r.Header, err)
	}
	if st := raw.Stats(); st.Base64Ops != 0 || st.JSONOps != 0 {
		t.Fatalf("raw lane did base64 %d, JSON %d", st.Base64Ops, st.JSONOps)
	}
}

// flood sends plain-lane frames to addr until stop is closed, counting
// those written.
func flood(g *libnet.Endpoint, addr string, stop chan struct{}, sent *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		done := make(chan error, 1)
		g.SendFrame(addr, &libnet.OutFrame{Data: []byte(`{"UUID":"x","data":{"kind":"flood"},"msgDir":"tell"}`)}, func(err error) { done <- err })
		if <-done == nil {
			sent.Add(1)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// A worker thread that listens with the core ends (worker.terminate())
// while frames keep arriving and its own sends are in flight; the process
// goes on (no abort from a
// thread-safe function called after its release), and a second worker
// listens and receives.
func TestWorkerEndsWhileReceiving(t *testing.T) {
	require(t)
	for _, impl := range []string{"courier", "wrapper-1.6.1"} {
		t.Run(impl, func(t *testing.T) {
			ports := freeport.Get(t, 2)
			var fromWorkers atomic.Int64
			g := goEndpoint(t, libnet.Config{Lane: libnet.LaneRaw, FrameHandler: func(*libnet.Frame) { fromWorkers.Add(1) }})
			stop := make(chan struct{})
			var sent atomic.Int64
			for _, p := range ports {
				go flood(g, "127.0.0.1:"+strconv.Itoa(p), stop, &sent)
			}
			var res struct {
				First, Second int
				Codes         []int
			}
			run(t, "worker.js", map[string]any{"impl": impl, "ports": ports, "to": port(g.Addr())}, &res)
			close(stop)
			if res.First < 200 || res.Second < 100 || len(res.Codes) != 2 || fromWorkers.Load() == 0 {
				t.Fatalf("workers received %+v (frames sent %d), sent %d", res, sent.Load(), fromWorkers.Load())
			}
		})
	}
}

// Through courier's package 100,000 tells leave no pending Timeout (no
// one-way timer is armed); the published wrapper 1.4.3 over the same core
// keeps one 300-second timer per tell (build/src/index.js, _sendAug).
func TestTellsLeaveNoPendingTimer(t *testing.T) {
	require(t)
	var got atomic.Int64
	g := goEndpoint(t, libnet.Config{Lane: libnet.LaneRaw, FrameHandler: func(*libnet.Frame) { got.Add(1) }})
	for _, tc := range []struct {
		impl      string
		n         int
		minLeft   int
		maxLeft   int
		published bool
	}{
		{"courier", 100000, 0, 0, false},
		{"wrapper-1.4.3", 2000, 2000, 2010, true},
	} {
		got.Store(0)
		var res struct{ Before, After, Sent int }
		run(t, "timers.js", map[string]any{"impl": tc.impl, "port": freeport.Get(t, 1)[0], "to": port(g.Addr()), "n": tc.n}, &res)
		if res.Sent != tc.n || res.After-res.Before < tc.minLeft || res.After-res.Before > tc.maxLeft {
			t.Fatalf("%s: %+v, want %d to %d pending timers after %d tells", tc.impl, res, tc.minLeft, tc.maxLeft, tc.n)
		}
		deadline := time.Now().Add(30 * time.Second)
		for got.Load() < int64(tc.n) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got.Load() != int64(tc.n) {
			t.Fatalf("%s: the Go endpoint received %d of %d", tc.impl, got.Load(), tc.n)
		}
	}
}

// lib-net's answers: a send to a dead port fails with lib-net's error text
// (ConnectionFailedError, the Debug form of its SenderError); a header
// version other than 1 fails with "Failed to parse header"; a payload
// over the sender's payloadSizeLimitInBytes is refused before it is
// written (lib-net would write it for the receiver to drop). Malformed
// frames reach no listener and leave the listener working.
func TestLibNetAnswers(t *testing.T) {
	require(t)
	for _, impl := range []string{"courier", "wrapper-1.6.1"} {
		t.Run(impl, func(t *testing.T) {
			ports := freeport.Get(t, 3)
			s := start(t, "serve.js", map[string]any{"impl": impl, "port": ports[1]})
			var res struct{ DeadPort, BadVersion, Oversized, Fine *string }
			run(t, "errors.js", map[string]any{"impl": impl, "port": ports[0], "to": ports[1], "dead": ports[2]}, &res)
			wantDead := fmt.Sprintf(`ConnectionFailedError(Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }, 127.0.0.1:%d)`, ports[2])
			if res.DeadPort == nil || !strings.Contains(*res.DeadPort, wantDead) {
				t.Errorf("dead port: %v, want it to contain %s", deref(res.DeadPort), wantDead)
			}
			if res.BadVersion == nil || !(strings.Contains(*res.BadVersion, "Failed to parse header") || strings.Contains(*res.BadVersion, "error caught in _sendAug")) {
				t.Errorf("header version 7: %v", deref(res.BadVersion))
			}
			if res.Oversized == nil || !strings.Contains(*res.Oversized, "too large") {
				t.Errorf("oversized: %v", deref(res.Oversized))
			}
			if res.Fine != nil {
				t.Errorf("a fine send failed: %s", *res.Fine)
			}
			if ev := s.await("msg", 10*time.Second); ev["data"].(map[string]any)["kind"] != "fine" {
				t.Fatalf("first message to arrive: %+v", ev)
			}

			addr := "127.0.0.1:" + strconv.Itoa(ports[1])
			bad := [][]byte{
				{0x01, 0x09, 0, 0, 0, 0},                        // unknown header version
				{0x01, 0x01, 0xff, 0xff, 0, 0},                  // header length past the frame
				append([]byte{0x01, 0x01}, make([]byte, 40)...), // empty header, unsigned
				[]byte("not json at all"),                       // the plain lane, not augData
			}
			for _, b := range bad {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				frame := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
				_, _ = c.Write(append(frame, b...))
				c.Close()
			}
			c, _ := net.Dial("tcp", addr)
			_, _ = c.Write([]byte{0xff, 0xff, 0xff, 0xff}) // a 4 GiB frame: over every limit
			c.Close()
			g := goEndpoint(t, libnet.Config{Lane: libnet.LaneLegacy})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := g.Tell(ctx, addr, libnet.Msg{Route: "after", Payload: []byte("ok")}); err != nil {
				t.Fatal(err)
			}
			for _, ev := range s.drain(time.Second) {
				if ev["event"] != "msg" {
					continue
				}
				data, _ := ev["data"].(map[string]any)
				if data["route"] != "after" && data["kind"] != "fine" {
					t.Fatalf("a malformed frame reached the listener: %+v", ev)
				}
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<no error>"
	}
	return *s
}

// getSenderAddress recovers what @ethereumjs/tx signs (legacy EIP-155 and
// unprotected, contract creation, EIP-2930, EIP-1559), applies lib-net's
// gas rule (creation gets no 32000, the zero address does) and refuses a
// high-s signature; through courier's package and the 1.6.1 wrapper.
func TestGetSenderAddress(t *testing.T) {
	require(t)
	for _, impl := range []string{"courier", "wrapper-1.6.1"} {
		var res map[string]struct {
			Expected string
			Got      struct {
				Address  string
				IsValid  bool
				GasValid bool
			}
			Error string
		}
		run(t, "sender.js", map[string]any{"impl": impl}, &res)
		wantGas := map[string]bool{"legacyEIP155": true, "legacyUnprotected": true, "creation": true, "toZeroUnderGas": false, "eip2930": true, "eip1559": false}
		for name, gas := range wantGas {
			r := res[name]
			if r.Got.Address != strings.ToLower(r.Expected) || r.Got.GasValid != gas || r.Got.IsValid != gas {
				t.Errorf("%s %s: %+v, want %s gasValid %v", impl, name, r, r.Expected, gas)
			}
		}
		if !strings.Contains(res["highS"].Error, "s above secp256k1n/2") {
			t.Errorf("%s high s: %+v", impl, res["highS"])
		}
	}
}

// Node's asynchronous signals stay off the Go runtime's threads (which
// block them from the start, as the core loads) and reach the handlers
// JavaScript installs: the main thread does not block SIGINT, the threads
// Go started do, and 200 signals sent while tells run are all caught.
func TestSignalsStayOnNodeThreads(t *testing.T) {
	require(t)
	var got atomic.Int64
	g := goEndpoint(t, libnet.Config{Lane: libnet.LaneRaw, FrameHandler: func(*libnet.Frame) { got.Add(1) }})
	for _, impl := range []string{"courier", "wrapper-1.4.3"} {
		var res struct {
			Pid     int
			Threads []struct {
				Tid           int
				SigintBlocked bool
			}
			Caught int
		}
		run(t, "signals.js", map[string]any{"impl": impl, "port": freeport.Get(t, 1)[0], "to": port(g.Addr())}, &res)
		blocked := 0
		for _, th := range res.Threads {
			if th.Tid == res.Pid && th.SigintBlocked {
				t.Fatalf("%s: the main thread blocks SIGINT", impl)
			}
			if th.SigintBlocked {
				blocked++
			}
		}
		if blocked < 2 || res.Caught != 200 {
			t.Fatalf("%s: %d threads block SIGINT (Go's), %d of 200 signals caught: %+v", impl, blocked, res.Caught, res)
		}
	}
}

// courier's raw lane from JavaScript: a tell and its duplicate (dropped
// before JavaScript and counted), a multi-send with one result per peer, an
// ask and its reply, and an unanswered ask that fails after its timeout
// with no JavaScript timer pending while it waits.
func TestRawLaneFromJS(t *testing.T) {
	require(t)
	ports := freeport.Get(t, 5)
	s1 := start(t, "serve.js", map[string]any{"impl": "courier", "port": ports[1]})
	s2 := start(t, "serve.js", map[string]any{"impl": "courier", "port": ports[2]})
	legacyOnly := start(t, "serve.js", map[string]any{"impl": "wrapper-1.6.1", "port": ports[4]})
	var res struct {
		Multi []*string
		Reply struct {
			Payload string
			Header  map[string]string
		}
		Mute                       string
		MuteMs                     int
		TimersBefore, TimersDuring int
	}
	run(t, "raw.js", map[string]any{"port": ports[0], "servers": []int{ports[1], ports[2]}, "dead": ports[3], "legacyOnly": ports[4]}, &res)
	if len(res.Multi) != 4 || res.Multi[0] != nil || res.Multi[1] != nil ||
		res.Multi[2] == nil || !strings.Contains(*res.Multi[2], "ConnectionRefused") ||
		res.Multi[3] == nil || !strings.Contains(*res.Multi[3], "not known to take the raw lane") {
		t.Fatalf("multi results %v", res.Multi)
	}
	if res.Reply.Payload != "re:abc" || res.Reply.Header["sender_id"] != "server" || res.Reply.Header["route"] != "q" {
		t.Fatalf("reply %+v", res.Reply)
	}
	if !strings.Contains(res.Mute, "timed out") || res.MuteMs < 300 || res.TimersDuring != res.TimersBefore {
		t.Fatalf("unanswered ask: %q after %d ms; Timeouts %d before, %d while waiting", res.Mute, res.MuteMs, res.TimersBefore, res.TimersDuring)
	}
	routes := map[string]int{}
	for _, ev := range s1.drain(300 * time.Millisecond) {
		if ev["event"] == "raw" {
			h := ev["header"].(map[string]any)
			routes[h["route"].(string)]++
			fanned := h["route"] == "gossip" || h["route"] == "multi"
			if h["sender_id"] != "js-raw" || (fanned && ev["payload"] != base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 0, 255})) {
				t.Fatalf("raw message %+v", ev)
			}
		}
	}
	if routes["gossip"] != 1 || routes["multi"] != 1 || routes["q"] != 1 || routes["mute"] != 1 {
		t.Fatalf("server 1 saw %v", routes)
	}
	s1.send("stats")
	if st := s1.await("stats", 5*time.Second)["stats"].(map[string]any); st["dropped_duplicates"] != float64(1) {
		t.Fatalf("dropped duplicates: %v", st["dropped_duplicates"])
	}
	if got := s2.drain(300 * time.Millisecond); len(got) != 1 || got[0]["event"] != "raw" {
		t.Fatalf("server 2 saw %v", got)
	}
	if got := legacyOnly.drain(200 * time.Millisecond); len(got) != 0 {
		t.Fatalf("the legacy-only peer got %v", got)
	}
}
