package node

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestHTTPConnectionLimit: with HTTPMaxConnections 8, twenty idle
// connections to the REST API leave 8 open (the oldest closed to
// make room) and a client's GET /health is still answered.
func TestHTTPConnectionLimit(t *testing.T) {
	n := startTestNode(t, Config{Relay: true, REST: true, RESTAddress: "127.0.0.1", HTTPMaxConnections: 8})
	addr := n.HTTPAddrs()[0]
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health at the limit: %d", resp.StatusCode)
	}
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	// The server accepts in arrival order, so the GET's connection came
	// last; kept alive, it is one of the 8.
	if open != 7 {
		t.Errorf("%d of 20 idle connections still open, want the newest 7 beside the GET's", open)
	}
}
