package peers

import (
	"context"
	cryptotls "crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	tls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/libp2p/go-libp2p/p2p/transport/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/couriernet/courier/mplex"
)

// HostConfig is how the node's libp2p host is made.
type HostConfig struct {
	// MaxConnections is the connection manager's high water mark; it
	// trims to four fifths of it.
	MaxConnections int
	AgentString    string
	// Mplex lists, in order of preference, whether each muxer offered is
	// mplex (else yamux).
	Mplex []bool
	// WebSocket adds the WebSocket transport; with WSSCert set, secure
	// WebSocket with that certificate.
	WebSocket bool
	WSSCert   *cryptotls.Certificate
	// PortMapping asks UPnP and NAT-PMP routers for a port mapping.
	PortMapping bool
	// Listen are the addresses to listen on, none for a host that does
	// not listen.
	Listen []ListenAddr
	// Registerer receives go-libp2p's metrics.
	Registerer prometheus.Registerer
}

// NewHost makes the node's libp2p host with key as its identity: TCP
// without SO_REUSEPORT (so that a second process cannot listen on a port a
// node already holds and take half of its inbound dials), optionally
// WebSocket; TLS 1.3 then Noise (go-libp2p's defaults, which go-waku uses;
// nwaku speaks Noise only, and multistream-select settles on it); the
// muxers of cfg; identify with cfg.AgentString; no ping (the node mounts
// its own). It checks the host listens on every configured address
// (CheckListening).
func NewHost(key crypto.PrivKey, cfg HostConfig) (host.Host, error) {
	cm, err := connmgr.NewConnManager(max(1, cfg.MaxConnections*4/5), cfg.MaxConnections)
	if err != nil {
		return nil, fmt.Errorf("node: connection manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport()),
		libp2p.Security(tls.ID, tls.New),
		libp2p.Security(noise.ID, noise.New),
		libp2p.ConnectionManager(cm),
		libp2p.Ping(false),
		libp2p.UserAgent(cfg.AgentString),
	}
	for _, m := range cfg.Mplex {
		if m {
			opts = append(opts, libp2p.Muxer(mplex.ID, mplex.DefaultTransport()))
		} else {
			opts = append(opts, libp2p.Muxer(yamux.ID, yamux.DefaultTransport))
		}
	}
	switch {
	case cfg.WebSocket && cfg.WSSCert != nil:
		conf := &cryptotls.Config{Certificates: []cryptotls.Certificate{*cfg.WSSCert}, MinVersion: cryptotls.VersionTLS12}
		opts = append(opts, libp2p.Transport(websocket.New, websocket.WithTLSConfig(conf)))
	case cfg.WebSocket:
		opts = append(opts, libp2p.Transport(websocket.New))
	}
	if cfg.PortMapping {
		opts = append(opts, libp2p.NATPortMap())
	}
	if len(cfg.Listen) == 0 {
		opts = append(opts, libp2p.NoListenAddrs)
	} else {
		opts = append(opts, libp2p.ListenAddrs(Multiaddrs(cfg.Listen)...))
	}
	opts = append(opts, libp2p.PrometheusRegisterer(cfg.Registerer))
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("node: start libp2p host: %w", err)
	}
	if err := CheckListening(h, cfg.Listen); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	return h, nil
}

// DropAfter closes h's network, and so every connection and stream, once
// grace has passed or ctx ended, whichever is first, unless the returned
// func is called before: the guard of the node's Stop, so that no peer can
// hold it. A nil h (a node whose host was never made) drops nothing.
func DropAfter(ctx context.Context, h host.Host, grace time.Duration, log *slog.Logger) (cancel func()) {
	if h == nil {
		return func() {}
	}
	var once sync.Once
	drop := func() {
		once.Do(func() {
			log.Warn("stop: services still busy with peers; closing the connections", "grace", grace)
			if err := h.Network().Close(); err != nil {
				log.Warn("stop: closing the connections", "err", err)
			}
		})
	}
	timer := time.AfterFunc(grace, drop)
	stopCtx := context.AfterFunc(ctx, drop)
	return func() {
		timer.Stop()
		stopCtx()
	}
}
