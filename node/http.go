package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/couriernet/courier/internal/connlimit"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/rest"
)

// Version is the node's version string, served at /debug/v1/version and
// sent as the libp2p user agent.
const Version = "courier v0.1.0"

// httpParts are the node's HTTP servers: the REST API (built by New) and
// the metrics server, with their bound addresses once Start listened.
type httpParts struct {
	rest       *rest.Server // nil without REST
	servers    []*http.Server
	addrs      []string
	removeREST func() // the REST cache's relay handler
}

// startHTTP starts the REST API and the metrics server as configured. The
// listeners are bound before it returns, so a port in use is an error here.
func (n *Node) startHTTP() error {
	if srv := n.http.rest; srv != nil {
		if n.relay != nil {
			var cts []string
			if n.cfg.contentShards != nil {
				cts = n.cfg.ContentTopics
			}
			srv.CacheTopics(n.cfg.pubsubTopics(), cts, n.cfg.contentShards)
			n.http.removeREST = n.relay.AddHandler("rest-cache", srv.Deliver)
		}
		if err := n.serve("REST API", n.cfg.RESTAddress, n.cfg.RESTPort, srv); err != nil {
			return err
		}
	}
	if n.cfg.MetricsServer {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(n.Registry(), promhttp.HandlerOpts{}))
		if err := n.serve("metrics", n.cfg.MetricsAddress, n.cfg.MetricsPort, mux); err != nil {
			return err
		}
	}
	return nil
}

// serve binds addr:port in addr's family only, as nwaku binds the IpAddress
// it is given: 0.0.0.0 is every IPv4 address, not IPv6's as well.
func (n *Node) serve(what, addr string, port int, h http.Handler) error {
	ln, err := net.Listen(peers.IPNetwork("tcp", addr), net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("node: %s: %w", what, err)
	}
	// WriteTimeout: a client that does not read its response loses the
	// connection instead of holding the response (up to tens of MB for a
	// store page) for ever.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	n.http.servers = append(n.http.servers, srv)
	n.http.addrs = append(n.http.addrs, ln.Addr().String())
	n.cfg.Logger.Info("serving "+what, "addr", ln.Addr().String())
	n.life.wg.Add(1)
	go func() {
		defer n.life.wg.Done()
		limit := connlimit.New(connlimit.Config{Max: n.cfg.HTTPMaxConnections, Name: what, Logger: n.cfg.Logger})
		if err := limit.Serve(srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.cfg.Logger.Error(what+" stopped", "err", err)
		}
	}()
	return nil
}

// stopHTTP shuts the servers down. Requests in flight get StopGrace (or
// what is left of ctx) to finish; then their connections are closed, so
// that a client that does not read its response cannot hold the stop. Only
// a failure to close is an error.
func (n *Node) stopHTTP(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StopGrace)
	defer cancel()
	var errs []error
	for _, s := range n.http.servers {
		if err := s.Shutdown(ctx); err != nil {
			n.cfg.Logger.Warn("stop: HTTP requests still in flight; closing their connections", "grace", StopGrace, "err", err)
			errs = append(errs, s.Close())
		}
	}
	if n.http.removeREST != nil {
		n.http.removeREST()
	}
	return errors.Join(errs...)
}

// HTTPAddrs returns the bound addresses of the REST and metrics servers, in
// that order, for the ones that run.
func (n *Node) HTTPAddrs() []string { return n.http.addrs }
