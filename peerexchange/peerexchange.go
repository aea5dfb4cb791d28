// Package peerexchange implements Waku peer exchange
// /vac/waku/peer-exchange/2.0.0-alpha1 (rfc-index 34/peer-exchange.md),
// server and client, as nwaku v0.38.1 does (waku/waku_peer_exchange/).
//
// # Server
//
// Each request is answered with a random sample of at most
// min(MaxPeers, num_peers) ENRs from Config.Peers (nwaku: peers found by
// discv5, of our cluster, not marked unreachable), with status 200. A
// request that does not decode gets 400; one over the rate limit 429 (the
// limit is off unless configured, nwaku's --rate-limit px:...).
//
// # Wire
//
// Request and response are one protobuf each, framed by an unsigned-varint
// length prefix. Responses carry an empty query in field 1, which nwaku's
// decoder requires, and always the status code.
package peerexchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/ethereum/go-ethereum/p2p/enr"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/peerexchange/internal/wire"
)

// ProtocolID is the libp2p protocol id of peer exchange.
const ProtocolID protocol.ID = "/vac/waku/peer-exchange/2.0.0-alpha1"

// Limits of nwaku waku_peer_exchange/common.nim.
const (
	// MaxPeers is the most ENRs in one response.
	MaxPeers = 60
	// DefaultNumPeers is what the client asks for by default.
	DefaultNumPeers = 5
	// MaxRPCSize bounds a frame: 10 WakuMessages of 150 KiB plus 64 KiB.
	MaxRPCSize = 10*150*1024 + 64*1024
	// DefaultTimeout bounds one exchange.
	DefaultTimeout = 10 * time.Second
)

// Errors of the client.
var (
	// ErrStatus: the server answered with a status other than 200.
	ErrStatus = errors.New("peerexchange: request refused")
	// ErrMalformed: the response does not decode.
	ErrMalformed = wire.ErrMalformed
)

// Config configures a Server.
type Config struct {
	// Peers returns the records to sample from, each verified. It is
	// called once per request, from the stream's goroutine.
	Peers func() []*enode.Node
	// RateLimit limits requests, globally and per peer; the zero value is
	// no limit.
	RateLimit ratelimit.Setting
	// Timeout bounds reading a request and writing the response. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Logger receives the server's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// ServerStats counts a Server's work.
type ServerStats struct {
	Requests, BadRequests, RateLimited, PeersSent uint64
}

// Server answers peer exchange requests on a host.
type Server struct {
	h       host.Host
	cfg     Config
	limiter *ratelimit.Limiter
	life    *lifecycle.Group

	requests, badRequests, rateLimited, peersSent atomic.Uint64
}

// setDefaults fills in the default of every zero field.
func (c *Config) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// NewServer mounts the peer exchange handler on h.
func NewServer(h host.Host, cfg Config) *Server {
	cfg.setDefaults()
	s := &Server{h: h, cfg: cfg, limiter: ratelimit.New(cfg.RateLimit, nil), life: lifecycle.New()}
	h.SetStreamHandler(ProtocolID, s.handle)
	return s
}

// Close removes the handler, resets the exchanges in progress and waits for
// their handlers to return. Calling it again returns nil.
func (s *Server) Close() error {
	return s.life.Close(func() error {
		s.h.RemoveStreamHandler(ProtocolID)
		return nil
	})
}

// Stats returns a copy of the counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{Requests: s.requests.Load(), BadRequests: s.badRequests.Load(), RateLimited: s.rateLimited.Load(), PeersSent: s.peersSent.Load()}
}

func (s *Server) handle(st network.Stream) {
	if !s.life.Enter() {
		st.Reset()
		return
	}
	defer s.life.Leave()
	stop := context.AfterFunc(s.life.Context(), func() { st.Reset() })
	defer stop()
	defer st.Close()
	st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	s.requests.Add(1)
	remote := st.Conn().RemotePeer()
	if !s.limiter.Allow(string(remote)) {
		s.rateLimited.Add(1)
		s.write(st, wire.Response{StatusCode: wire.StatusTooManyRequests})
		return
	}
	frame, err := lpframe.Read(st, MaxRPCSize)
	var rpc wire.RPC
	if err == nil {
		rpc, err = wire.DecodeRPC(frame)
	}
	if err == nil && !rpc.HasQuery {
		err = fmt.Errorf("%w: no query (field 1)", ErrMalformed)
	}
	if err != nil {
		s.badRequests.Add(1)
		s.cfg.Logger.Info("peer exchange: bad request", "peer", remote, "err", err)
		s.write(st, wire.Response{StatusCode: wire.StatusBadRequest, StatusDesc: err.Error()})
		return
	}
	enrs := s.sample(rpc.NumPeers)
	if s.write(st, wire.Response{ENRs: enrs, StatusCode: wire.StatusSuccess}) == nil {
		s.peersSent.Add(uint64(len(enrs)))
	}
}

// sample picks min(MaxPeers, n) records at random (reservoir sampling, as
// nwaku's getEnrsFromStore).
func (s *Server) sample(n uint64) [][]byte {
	k := int(min(n, MaxPeers))
	if k == 0 || s.cfg.Peers == nil {
		return nil
	}
	var out [][]byte
	for i, node := range s.cfg.Peers() {
		raw, err := rlp.EncodeToBytes(node.Record())
		if err != nil {
			continue
		}
		switch {
		case len(out) < k:
			out = append(out, raw)
		default:
			if j := rand.IntN(i + 1); j < k {
				out[j] = raw
			}
		}
	}
	return out
}

func (s *Server) write(st network.Stream, r wire.Response) error {
	if err := lpframe.Write(st, wire.EncodeResponse(r)); err != nil {
		s.cfg.Logger.Debug("peer exchange: write response", "peer", st.Conn().RemotePeer(), "err", err)
		return err
	}
	return nil
}

// ClientStats counts a Client's work.
type ClientStats struct {
	Requests, Failures uint64
	// Rejected counts ENRs in responses that did not decode, failed their
	// signature or had malformed Waku fields.
	Rejected uint64
	// Received counts ENRs that decoded.
	Received uint64
}

// Client asks peers for peers.
type Client struct {
	h   host.Host
	log *slog.Logger

	requests, failures, rejected, received atomic.Uint64
}

// NewClient returns a client on h; log nil means slog.Default().
func NewClient(h host.Host, log *slog.Logger) *Client {
	if log == nil {
		log = slog.Default()
	}
	return &Client{h: h, log: log}
}

// Stats returns a copy of the counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{Requests: c.requests.Load(), Failures: c.failures.Load(), Rejected: c.rejected.Load(), Received: c.received.Load()}
}

// Request asks p for numPeers peers (0 means DefaultNumPeers) and returns
// those whose records verify and decode. Each rejected record is logged
// and counted in Stats.Rejected; a status other than 200 is an error
// wrapping ErrStatus.
func (c *Client) Request(ctx context.Context, p peer.ID, numPeers uint64) ([]discovery.Peer, error) {
	c.requests.Add(1)
	if numPeers == 0 {
		numPeers = DefaultNumPeers
	}
	peers, err := c.request(ctx, p, numPeers)
	if err != nil {
		c.failures.Add(1)
	}
	return peers, err
}

func (c *Client) request(ctx context.Context, p peer.ID, numPeers uint64) ([]discovery.Peer, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	st, err := c.h.NewStream(ctx, p, ProtocolID)
	if err != nil {
		return nil, fmt.Errorf("peerexchange: open stream: %w", err)
	}
	defer st.Close()
	if d, ok := ctx.Deadline(); ok {
		st.SetDeadline(d)
	}
	if err := lpframe.Write(st, wire.EncodeRequest(numPeers)); err != nil {
		st.Reset()
		return nil, fmt.Errorf("peerexchange: write request: %w", err)
	}
	st.CloseWrite()
	frame, err := lpframe.Read(st, MaxRPCSize)
	if err != nil {
		st.Reset()
		return nil, fmt.Errorf("peerexchange: read response: %w", err)
	}
	rpc, err := wire.DecodeRPC(frame)
	if err != nil {
		return nil, err
	}
	if rpc.Response.StatusCode != wire.StatusSuccess {
		return nil, fmt.Errorf("%w: %d %s", ErrStatus, rpc.Response.StatusCode, rpc.Response.StatusDesc)
	}
	var out []discovery.Peer
	for _, raw := range rpc.Response.ENRs {
		dp, err := decodeENR(raw)
		if err != nil {
			c.rejected.Add(1)
			c.log.Info("peer exchange: ENR rejected", "from", p, "err", err)
			continue
		}
		c.received.Add(1)
		out = append(out, dp)
	}
	return out, nil
}

// decodeENR verifies and decodes a record in its RLP form.
func decodeENR(raw []byte) (discovery.Peer, error) {
	if len(raw) > discovery.MaxRecordSize {
		return discovery.Peer{}, fmt.Errorf("%w: %d bytes", discovery.ErrTooLarge, len(raw))
	}
	var r enr.Record
	if err := rlp.DecodeBytes(raw, &r); err != nil {
		return discovery.Peer{}, fmt.Errorf("%w: %w", discovery.ErrMalformed, err)
	}
	n, err := enode.New(enode.ValidSchemes, &r)
	if err != nil {
		return discovery.Peer{}, fmt.Errorf("%w: %w", discovery.ErrMalformed, err)
	}
	return discovery.DecodePeer(n)
}
