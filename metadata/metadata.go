// Package metadata implements the Waku metadata protocol
// /vac/waku/metadata/1.0.0 (rfc-index 66/metadata.md): peers exchange their
// cluster id and shards right after connecting, and a node disconnects from
// peers of another cluster.
//
// # Behaviour
//
// The Service answers every request with the local cluster id (always set,
// even when it is 0) and the local shards. On every new peer it requests the
// peer's metadata and closes the connection when the request fails, when the
// response has no cluster id, or when the cluster id differs: the rule of
// nwaku's peer_manager onPeerMetadata. nwaku also disconnects relay peers
// with no shard in common; this package does not (see Service).
//
// # Wire
//
// Each request and response is one protobuf framed by an unsigned-varint
// length prefix (nwaku writeLp/readLp, go-waku pbio), at most MaxRPCSize
// bytes, in both directions: nwaku reads at most 1024 too (RpcResponseMaxBytes).
// The codec writes shards packed in field 3 and unpacked in the deprecated
// field 2, as nwaku does, and field 3 alone when both would be over
// MaxRPCSize; it reads field 3, then packed 2, then unpacked 2 (nwaku
// waku_metadata/rpc.nim). Field 3 alone holds MinShardsFit (508) shards
// whatever their ids, up to 573 with low ids; a node must not relay a shard
// set that does not fit (CheckShards), for no peer could read its metadata.
package metadata

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/couriernet/courier/internal/lifecycle"
)

// ProtocolID is the libp2p protocol id of the metadata protocol.
const ProtocolID protocol.ID = "/vac/waku/metadata/1.0.0"

// maxShardID is the largest valid shard id (relay-sharding.md: 1024 shards).
const maxShardID = 1023

// Errors of the Service.
var (
	// ErrConfig: an invalid Config field.
	ErrConfig = errors.New("metadata: invalid config")
	// ErrNoClusterID: the peer's response has no cluster id (field 1 absent).
	ErrNoClusterID = errors.New("metadata: peer reported no cluster id")
	// ErrClusterMismatch: the peer's cluster id differs from ours.
	ErrClusterMismatch = errors.New("metadata: peer is on another cluster")
)

// Config configures a Service. Zero values of the tunables take the
// documented defaults; negative values are errors.
type Config struct {
	// ClusterID is the local cluster id, sent in every request and response
	// and compared with every peer's. 0 is a valid, explicit cluster id.
	ClusterID uint16
	// Shards returns the local shard ids (0..1023) at the time of each
	// request or response, so that it follows subscriptions. It is called
	// from several goroutines and must be safe for that. nil means no shards.
	// The returned slice is only read. A set that CheckShards refuses is
	// sent anyway, and peers drop the connection; the caller keeps it
	// within the bound.
	Shards func() []uint16
	// Timeout bounds one exchange (stream open, write, read), both when
	// checking a peer and when answering one. Default 5 s.
	Timeout time.Duration
	// Workers is the number of peer checks in flight at once. Default 4.
	Workers int
	// OnChecked, when set, is called after every check of a new peer with
	// its result (nil: kept; else the reason it was disconnected), from a
	// worker goroutine. A peer manager uses it to forget peers that fail.
	OnChecked func(peer.ID, error)
	// QueueSize is the number of new peers waiting for a check. When the
	// queue is full a new peer is not checked; the skip is logged and
	// counted in Stats.QueueFull. Default 256.
	QueueSize int
	// Logger receives the service's logs. Nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultTimeout   = 5 * time.Second
	DefaultWorkers   = 4
	DefaultQueueSize = 256
)

// setDefaults fills in the default of every zero field.
func (c *Config) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v < 0", ErrConfig, c.Timeout)
	case c.Workers < 0:
		return fmt.Errorf("%w: Workers %d < 0", ErrConfig, c.Workers)
	case c.QueueSize < 0:
		return fmt.Errorf("%w: QueueSize %d < 0", ErrConfig, c.QueueSize)
	}
	return nil
}

// PeerInfo is the metadata a peer reported in its response.
type PeerInfo struct {
	ClusterID uint16
	// Shards are the peer's shard ids in the order it sent them; ids over
	// 1023 are left out. The slice is owned by the PeerInfo.
	Shards []uint16
}

// Stats counts the work of a Service. Take a copy with (*Service).Stats.
type Stats struct {
	Checked          uint64 // peers whose check finished, passed or failed
	Accepted         uint64 // peers of the same cluster, kept
	RequestFailed    uint64 // disconnected: the request failed (dial, stream, decode, timeout)
	NoClusterID      uint64 // disconnected: response without cluster id
	ClusterMismatch  uint64 // disconnected: another cluster
	QueueFull        uint64 // new peers not checked because the queue was full
	RequestsAnswered uint64 // inbound requests answered
	RequestsRefused  uint64 // inbound requests that could not be read, decoded or answered
}

type counters struct {
	checked, accepted, requestFailed, noClusterID, clusterMismatch, queueFull atomic.Uint64
	answered, refused                                                         atomic.Uint64
}

// Service serves and checks the metadata protocol on one host.
//
// Goroutines: Workers check goroutines plus one per inbound stream being
// answered; Close stops and waits for all of them.
type Service struct {
	h      host.Host
	cfg    Config
	log    *slog.Logger
	life   *lifecycle.Group
	queue  chan peer.ID
	notify *network.NotifyBundle
	stats  counters

	mu      sync.Mutex
	pending map[peer.ID]struct{} // queued or being checked
	peers   map[peer.ID]PeerInfo // checked and kept

	// checked, if set (by tests), is called after every check with its result.
	checked func(peer.ID, error)
}

// New registers the metadata stream handler on h, subscribes to h's
// connection events and starts the check workers. Peers already connected
// are queued for a check too. Errors wrap ErrConfig.
func New(h host.Host, cfg Config) (*Service, error) {
	if h == nil {
		return nil, fmt.Errorf("%w: nil host", ErrConfig)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{
		h: h, cfg: cfg, log: cfg.Logger.With("protocol", string(ProtocolID)),
		life:    lifecycle.New(),
		queue:   make(chan peer.ID, cfg.QueueSize),
		pending: make(map[peer.ID]struct{}),
		peers:   make(map[peer.ID]PeerInfo),
	}
	s.notify = &network.NotifyBundle{
		ConnectedF:    func(_ network.Network, c network.Conn) { s.enqueue(c.RemotePeer()) },
		DisconnectedF: func(_ network.Network, c network.Conn) { s.forget(c.RemotePeer()) },
	}
	h.SetStreamHandler(ProtocolID, s.handle)
	for range cfg.Workers {
		s.life.Go(s.work)
	}
	h.Network().Notify(s.notify)
	for _, p := range h.Network().Peers() {
		s.enqueue(p)
	}
	return s, nil
}

// Close removes the stream handler and the event subscription, cancels
// checks and answers in flight and waits for every goroutine of the Service
// to end. Peers are not disconnected. Calling it again returns nil.
func (s *Service) Close() error {
	return s.life.Close(func() error {
		s.h.Network().StopNotify(s.notify)
		s.h.RemoveStreamHandler(ProtocolID)
		return nil
	})
}

// Peer returns the metadata of a connected peer that passed the check.
func (s *Service) Peer(p peer.ID) (PeerInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info, ok := s.peers[p]
	return info, ok
}

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	c := &s.stats
	return Stats{
		Checked: c.checked.Load(), Accepted: c.accepted.Load(),
		RequestFailed: c.requestFailed.Load(), NoClusterID: c.noClusterID.Load(),
		ClusterMismatch: c.clusterMismatch.Load(), QueueFull: c.queueFull.Load(),
		RequestsAnswered: c.answered.Load(), RequestsRefused: c.refused.Load(),
	}
}

// local returns the RPC describing this node.
func (s *Service) local() RPC {
	r := RPC{ClusterID: uint32(s.cfg.ClusterID), HasClusterID: true}
	if s.cfg.Shards != nil {
		for _, id := range s.cfg.Shards() {
			r.Shards = append(r.Shards, uint32(id))
		}
	}
	return r
}

// Request opens a metadata stream to p (dialing if ctx allows it), sends the
// local metadata and returns the peer's response. ctx bounds the exchange;
// its deadline, if any, becomes the stream deadline. Errors are stream,
// framing (too large, truncated) or decoding errors (ErrTooLarge,
// ErrMalformed).
func (s *Service) Request(ctx context.Context, p peer.ID) (RPC, error) {
	st, err := s.h.NewStream(ctx, p, ProtocolID)
	if err != nil {
		return RPC{}, fmt.Errorf("metadata: open stream: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		st.SetDeadline(dl)
	}
	req := s.local()
	if err := writeFrame(st, req.append(nil)); err != nil {
		st.Reset()
		return RPC{}, fmt.Errorf("metadata: write request: %w", err)
	}
	st.CloseWrite()
	frame, err := readFrame(st)
	if err != nil {
		st.Reset()
		return RPC{}, fmt.Errorf("metadata: read response: %w", err)
	}
	st.Close()
	return decode(frame)
}

// handle answers one inbound request.
func (s *Service) handle(st network.Stream) {
	if !s.life.Enter() {
		st.Reset()
		return
	}
	defer s.life.Leave()
	stop := context.AfterFunc(s.life.Context(), func() { st.Reset() })
	defer stop()
	if err := s.answer(st); err != nil {
		s.stats.refused.Add(1)
		s.log.Debug("metadata request refused", "peer", st.Conn().RemotePeer(), "err", err)
		st.Reset()
		return
	}
	s.stats.answered.Add(1)
	st.Close()
}

func (s *Service) answer(st network.Stream) error {
	st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	frame, err := readFrame(st)
	if err != nil {
		return err
	}
	if _, err := decode(frame); err != nil {
		return err
	}
	resp := s.local()
	return writeFrame(st, resp.append(nil))
}

// enqueue queues p for a check unless it is queued, being checked or
// already accepted. It never blocks (it runs in the swarm's notification).
func (s *Service) enqueue(p peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Closed() {
		return
	}
	if _, ok := s.pending[p]; ok {
		return
	}
	if _, ok := s.peers[p]; ok {
		return
	}
	select {
	case s.queue <- p:
		s.pending[p] = struct{}{}
	default:
		s.stats.queueFull.Add(1)
		s.log.Warn("metadata check queue full, peer not checked", "peer", p, "queue", cap(s.queue))
	}
}

// forget drops p's metadata once its last connection is gone.
func (s *Service) forget(p peer.ID) {
	if s.h.Network().Connectedness(p) == network.Connected {
		return
	}
	s.mu.Lock()
	delete(s.peers, p)
	s.mu.Unlock()
}

func (s *Service) work() {
	for {
		select {
		case <-s.life.Context().Done():
			return
		case p := <-s.queue:
			s.check(p)
		}
	}
}

// check requests p's metadata without dialing and disconnects p unless it
// reports our cluster id (nwaku peer_manager.nim onPeerMetadata).
func (s *Service) check(p peer.ID) {
	ctx, cancel := context.WithTimeout(network.WithNoDial(s.life.Context(), "metadata check"), s.cfg.Timeout)
	resp, err := s.Request(ctx, p)
	cancel()
	var info PeerInfo
	if err == nil {
		info, err = s.verify(resp)
	}
	if s.life.Context().Err() != nil {
		return // closing: leave the peer alone
	}
	s.record(p, info, err)
	if err != nil {
		s.log.Info("disconnecting peer", "peer", p, "reason", err)
		if cerr := s.h.Network().ClosePeer(p); cerr != nil {
			s.log.Debug("close peer", "peer", p, "err", cerr)
		}
	}
	if s.cfg.OnChecked != nil {
		s.cfg.OnChecked(p, err)
	}
	if s.checked != nil {
		s.checked(p, err)
	}
}

// verify applies the cluster rule to a response.
func (s *Service) verify(r RPC) (PeerInfo, error) {
	if !r.HasClusterID {
		return PeerInfo{}, ErrNoClusterID
	}
	if r.ClusterID != uint32(s.cfg.ClusterID) {
		return PeerInfo{}, fmt.Errorf("%w: %d, ours %d", ErrClusterMismatch, r.ClusterID, s.cfg.ClusterID)
	}
	info := PeerInfo{ClusterID: s.cfg.ClusterID, Shards: make([]uint16, 0, len(r.Shards))}
	for _, id := range r.Shards {
		if id <= maxShardID {
			info.Shards = append(info.Shards, uint16(id))
		}
	}
	return info, nil
}

// record counts a finished check and keeps an accepted peer's metadata
// while it is still connected.
func (s *Service) record(p peer.ID, info PeerInfo, err error) {
	s.stats.checked.Add(1)
	switch {
	case err == nil:
		s.stats.accepted.Add(1)
	case errors.Is(err, ErrNoClusterID):
		s.stats.noClusterID.Add(1)
	case errors.Is(err, ErrClusterMismatch):
		s.stats.clusterMismatch.Add(1)
	default:
		s.stats.requestFailed.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, p)
	if err == nil && s.h.Network().Connectedness(p) == network.Connected {
		s.peers[p] = info
	}
}

// writeFrame writes b with its unsigned-varint length prefix in one write.
func writeFrame(w io.Writer, b []byte) error {
	buf := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(b)), uint64(len(b)))
	_, err := w.Write(append(buf, b...))
	return err
}

// errFrameTooLarge: a length prefix over MaxRPCSize.
var errFrameTooLarge = fmt.Errorf("%w: length prefix", ErrTooLarge)

// readFrame reads one unsigned-varint length-prefixed frame of at most
// MaxRPCSize bytes. The returned slice is newly allocated and owned by the
// caller.
func readFrame(r io.Reader) ([]byte, error) {
	var n uint64
	var one [1]byte
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return nil, fmt.Errorf("%w: varint overflow", ErrMalformed)
		}
		if _, err := io.ReadFull(r, one[:]); err != nil {
			return nil, err
		}
		n |= uint64(one[0]&0x7f) << shift
		if one[0] < 0x80 {
			break
		}
		if n > MaxRPCSize {
			return nil, errFrameTooLarge
		}
	}
	if n > MaxRPCSize {
		return nil, errFrameTooLarge
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
