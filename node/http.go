package node

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/couriernet/courier/node/internal/httpserve"
	"github.com/couriernet/courier/rest"
)

// Version is the node's version string, served at /debug/v1/version and
// sent as the libp2p user agent.
const Version = "courier v0.1.0"

// httpParts are the node's HTTP servers: the REST API (built by New) and
// the metrics server, bound at Start.
type httpParts struct {
	rest       *rest.Server // nil without REST
	servers    httpserve.Servers
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
		if err := n.http.servers.Serve("REST API", n.cfg.RESTAddress, n.cfg.RESTPort, srv, n.cfg.Logger); err != nil {
			return err
		}
	}
	if n.cfg.MetricsServer {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(n.Registry(), promhttp.HandlerOpts{}))
		return n.http.servers.Serve("metrics", n.cfg.MetricsAddress, n.cfg.MetricsPort, mux, n.cfg.Logger)
	}
	return nil
}

// stopHTTP shuts the servers down. Requests in flight get StopGrace (or
// what is left of ctx) to finish; then their connections are closed, so
// that a client that does not read its response cannot hold the stop. Only
// a failure to close is an error.
func (n *Node) stopHTTP(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StopGrace)
	defer cancel()
	err := n.http.servers.Shutdown(ctx, n.cfg.Logger)
	if n.http.removeREST != nil {
		n.http.removeREST()
	}
	return err
}

// HTTPAddrs returns the bound addresses of the REST and metrics servers, in
// that order, for the ones that run.
func (n *Node) HTTPAddrs() []string { return n.http.servers.Addrs() }
