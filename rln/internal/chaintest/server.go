//go:build unix

package chaintest

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/rpc"
)

// Server serves a served Chain's JSON-RPC (eth_*, net_* and the rest of
// the eth service's APIs) with go-ethereum's rpc server on one 127.0.0.1
// port: HTTP POST at URL and WebSocket at WSURL. Stop takes it off the
// network (closing the HTTP and WebSocket connections too) and Start puts
// it back on the same port, so that tests can cut and restore an
// endpoint.
type Server struct {
	apis []rpc.API
	addr string

	mu   sync.Mutex
	rpc  *rpc.Server
	http *http.Server
	done chan struct{}
}

// Serve starts a new Server for the chain, which must come from
// NewServed, on a free port; it stops when the test ends. Each call makes
// another endpoint of the same chain.
func (c *Chain) Serve(t testing.TB) *Server {
	t.Helper()
	if c.apis == nil {
		t.Fatal("chaintest: Serve needs a chain from NewServed")
	}
	s := &Server{apis: c.apis}
	if err := s.start("127.0.0.1:0"); err != nil {
		t.Fatalf("chaintest: serve: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// URL returns the server's HTTP address, http://127.0.0.1:<port>.
func (s *Server) URL() string { return "http://" + s.addr }

// WSURL returns the server's WebSocket address, ws://127.0.0.1:<port>.
func (s *Server) WSURL() string { return "ws://" + s.addr }

// Start serves again on the same port after Stop; it fails the test when
// the port cannot be had. Starting a running server does nothing.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(s.addr); err != nil {
		t.Fatalf("chaintest: restart %s: %v", s.addr, err)
	}
}

func (s *Server) start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http != nil {
		return nil
	}
	srv := rpc.NewServer()
	for _, api := range s.apis {
		if err := srv.RegisterName(api.Namespace, api.Service); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Stop()
		return err
	}
	s.addr = ln.Addr().String()
	ws := srv.WebsocketHandler([]string{"*"})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			ws.ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // ends with http.ErrServerClosed on Stop
	}()
	s.rpc, s.http, s.done = srv, hs, done
	return nil
}

// Stop closes the listener and every connection, HTTP and WebSocket. It
// is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return
	}
	s.http.Close()
	s.rpc.Stop() // closes the WebSocket connections, which http.Server does not track
	<-s.done
	s.rpc, s.http, s.done = nil, nil, nil
}
