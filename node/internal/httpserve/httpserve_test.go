package httpserve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestServeAndShutdown: a server answers on the address it was bound to,
// a second one on the same port fails in Serve, and Shutdown stops the
// one that runs.
func TestServeAndShutdown(t *testing.T) {
	var s Servers
	log := slog.New(slog.DiscardHandler)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	if err := s.Serve("test", "127.0.0.1", 0, h, log); err != nil {
		t.Fatal(err)
	}
	addrs := s.Addrs()
	if len(addrs) != 1 || !strings.HasPrefix(addrs[0], "127.0.0.1:") || strings.HasSuffix(addrs[0], ":0") {
		t.Fatalf("addrs %q", addrs)
	}
	resp, err := http.Get("http://" + addrs[0] + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("body %q", body)
	}
	_, port, _ := net.SplitHostPort(addrs[0])
	p, _ := strconv.Atoi(port)
	if err := s.Serve("again", "127.0.0.1", p, h, log); err == nil || !strings.Contains(err.Error(), "node: again:") {
		t.Fatalf("second server on %d: %v, want an error naming it", p, err)
	}
	if len(s.Addrs()) != 1 {
		t.Fatalf("a failed Serve kept its address: %q", s.Addrs())
	}
	if err := s.Shutdown(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addrs[0] + "/"); err == nil {
		t.Fatal("still served after Shutdown")
	}
}

// TestFamily: an IPv4 address binds tcp4 only, so 0.0.0.0 does not take
// the IPv6 wildcard as well.
func TestFamily(t *testing.T) {
	var s Servers
	if err := s.Serve("v4", "0.0.0.0", 0, http.NotFoundHandler(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background(), slog.New(slog.DiscardHandler))
	_, port, _ := net.SplitHostPort(s.Addrs()[0])
	ln, err := net.Listen("tcp6", "[::]:"+port)
	if err != nil {
		if strings.Contains(err.Error(), "address family not supported") || strings.Contains(err.Error(), "cannot assign") {
			t.Skip("no IPv6 here:", err)
		}
		t.Fatalf("[::]:%s taken by a server on 0.0.0.0: %v", port, err)
	}
	ln.Close()
}
