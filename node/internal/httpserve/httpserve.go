// Package httpserve runs the node's HTTP servers, the REST API and the
// metrics server: each bound in its address's family only, as nwaku binds
// the IpAddress it is given (0.0.0.0 is every IPv4 address, not IPv6's as
// well), served on a goroutine of its own, and shut down together.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/couriernet/courier/node/internal/peers"
)

// Timeouts of every server: a client has 10 s to send its request's
// headers and a minute for the whole request, and a response it does not
// read within a minute loses the connection instead of being held (up to
// tens of MB for a store page) for ever; an idle keep-alive connection is
// closed after two minutes.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = time.Minute
	writeTimeout      = time.Minute
	idleTimeout       = 2 * time.Minute
)

// Servers are the HTTP servers started with Serve. The zero value has
// none; Serve and Shutdown must not be called concurrently.
type Servers struct {
	servers []*http.Server
	addrs   []string
	wg      sync.WaitGroup
}

// Serve binds addr:port (addr an IP address; port 0 picks a free one) and
// serves h there until Shutdown; what names the server in errors and logs.
// The listener is bound before Serve returns, so a port in use is an error
// here.
func (s *Servers) Serve(what, addr string, port int, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen(peers.IPNetwork("tcp", addr), net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("node: %s: %w", what, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	s.servers = append(s.servers, srv)
	s.addrs = append(s.addrs, ln.Addr().String())
	log.Info("serving "+what, "addr", ln.Addr().String())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" stopped", "err", err)
		}
	}()
	return nil
}

// Shutdown shuts every server down, letting the requests in progress
// finish until ctx ends (http.Server.Shutdown); then it closes the
// connections of those still in flight, logged on log, so that a client
// that does not read its response cannot hold it. It returns once the
// servers' goroutines have; its error joins the failures to close.
func (s *Servers) Shutdown(ctx context.Context, log *slog.Logger) error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("stop: HTTP requests still in flight; closing their connections", "err", err)
			errs = append(errs, srv.Close())
		}
	}
	s.wg.Wait()
	return errors.Join(errs...)
}

// Addrs returns the bound addresses, in the order of the Serve calls.
func (s *Servers) Addrs() []string { return s.addrs }
