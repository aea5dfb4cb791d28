package connlimit

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/internal/testwait"
)

// server serves h on 127.0.0.1 within a Limiter of max connections.
func server(t *testing.T, max int, h http.Handler) (*Limiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{Max: max, Name: "test", Logger: slog.New(slog.DiscardHandler)})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() { defer close(done); l.Serve(srv, ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return l, ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closed reports whether the server closed c (a read ends in EOF or an
// error other than the short deadline's).
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// states returns the tracked connections' states in accept order.
func (l *Limiter) states() []http.ConnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []http.ConnState
	for el := l.order.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*entry).state)
	}
	return out
}

func get(t *testing.T, addr string) (int, string) {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// TestIdleMakeRoom: with 4 idle connections held (the limit), a client's
// GET is served: the oldest idle connection is closed for it, the others
// stay, and no more than 4 are held.
func TestIdleMakeRoom(t *testing.T) {
	l, addr := server(t, 4, ok)
	var idle []net.Conn
	for range 4 {
		idle = append(idle, dial(t, addr))
	}
	testwait.Until(t, "4 connections held", func() bool { return len(l.states()) == 4 })
	if code, body := get(t, addr); code != 200 || body != "ok" {
		t.Fatalf("GET at the limit: %d %q", code, body)
	}
	if !closed(idle[0]) {
		t.Error("the oldest idle connection is still open")
	}
	for i, c := range idle[1:] {
		if closed(c) {
			t.Errorf("idle connection %d closed, want only the oldest", i+1)
		}
	}
	if st := l.Stats(); st.Open > 4 || st.Evicted != 1 || st.Refused != 0 {
		t.Errorf("stats %+v; want at most 4 open, 1 evicted, none refused", st)
	}
}

// TestOldestFirstNeverServing: at the limit the oldest connection not in
// a handler is closed, whether idle or still sending its headers (a
// slow-loris client), and a connection whose request is in a handler is
// never closed, however old.
func TestOldestFirstNeverServing(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	l, addr := server(t, 3, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer close(release)
	busy := dial(t, addr)
	io.WriteString(busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-entered
	slow := dial(t, addr)
	io.WriteString(slow, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ") // headers never end
	idle := dial(t, addr)
	testwait.Until(t, "3 connections held", func() bool { return len(l.states()) == 3 })

	next := dial(t, addr) // takes the place of slow, the oldest not serving
	testwait.Until(t, "slow closed", func() bool { return l.Stats().Evicted == 1 })
	if !closed(slow) || closed(idle) || closed(busy) {
		t.Fatal("the first connection over the limit did not close the slow one alone")
	}
	dial(t, addr) // takes idle's place
	testwait.Until(t, "idle closed", func() bool { return l.Stats().Evicted == 2 })
	if !closed(idle) || closed(next) || closed(busy) {
		t.Fatal("the second connection over the limit did not close the idle one alone")
	}
	if st := l.Stats(); st.Open != 3 || st.Refused != 0 {
		t.Errorf("stats %+v; want 3 open, none refused", st)
	}
}

// TestAllServingRefused: when every held connection is being served, a
// new one is answered 503 with Connection: close and closed; once the
// requests end, new connections are served again.
func TestAllServingRefused(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	l, addr := server(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	var busy []net.Conn
	for range 2 {
		c := dial(t, addr)
		io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
		busy = append(busy, c)
		<-entered
	}
	code, body := get(t, addr)
	if code != http.StatusServiceUnavailable || body != RefusedText {
		t.Fatalf("at the limit with all serving: %d %q, want 503 %q", code, body, RefusedText)
	}
	close(release)
	for _, c := range busy {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("a request served at the limit: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	testwait.Until(t, "both idle", func() bool {
		s := l.states()
		return len(s) == 2 && s[0] == http.StateIdle && s[1] == http.StateIdle
	})
	if code, _ := get(t, addr); code != 200 {
		t.Fatalf("after the requests ended: %d", code)
	}
	if st := l.Stats(); st.Refused != 1 || st.Evicted != 1 || st.Open > 2 {
		t.Errorf("stats %+v; want 1 refused, 1 evicted, at most 2 open", st)
	}
}

// TestNoLimit: Max < 0 holds any number.
func TestNoLimit(t *testing.T) {
	l, addr := server(t, -1, ok)
	for range 20 {
		dial(t, addr)
	}
	if code, _ := get(t, addr); code != 200 {
		t.Fatal(code)
	}
	if st := l.Stats(); st.Evicted != 0 || st.Refused != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRefusalWellFormed(t *testing.T) {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(refusal))), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || !resp.Close || string(b) != RefusedText || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("refusal: %d close=%v %q %v", resp.StatusCode, resp.Close, b, resp.Header)
	}
}
