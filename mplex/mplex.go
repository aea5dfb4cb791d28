// Package mplex is the mplex stream multiplexer (/mplex/6.7.0, libp2p specs
// mplex/README.md) for go-libp2p: a network.Multiplexer offered beside
// yamux, because js-libp2p's WebSocket stack, and so js-waku (@waku/sdk),
// speaks nothing else. nwaku offers both (waku/node/waku_switch.nim).
//
// # Wire
//
// A frame is a uvarint header (stream id << 3 | flag, at most 9 bytes), a
// uvarint payload length and the payload. Stream ids are counted per
// initiator, so the same id may be open in each direction at once; the
// flag tells which side opened the stream. A NewStream frame's payload is
// the stream's name, read and ignored. Close half-closes the sender's
// side; Reset aborts both.
//
// # Limits
//
// mplex has no flow control, so a reader must not let a fast sender fill
// its memory, and the connection's reader must never block on one slow
// stream, or every stream on the connection stalls. The limits on what the
// peer sends mirror js-libp2p's mplex (@libp2p/mplex, src/mplex.ts):
//   - a frame longer than MaxFrameSize (1 MiB) closes the connection;
//   - inbound streams beyond Transport.MaxInboundStreams (1024) are reset;
//     in a go-libp2p host this is a ceiling the resource manager's limits
//     come under, since the swarm resets every inbound stream its
//     resource manager refuses (see "Stream limits" below);
//   - a stream holding more than Transport.MaxStreamBuffer (4 MiB) unread
//     is reset;
//   - when the streams of a connection hold more than
//     Transport.MaxConnBuffer (16 MiB) unread, or the resource manager
//     refuses more memory, the stream holding most unread data is reset.
//
// Unread data is reserved in the connection's resource scope, as go-libp2p's
// yamux reserves its receive windows. A reset stream's reads and writes
// return a *network.StreamError with StreamResourceLimitExceeded; the
// peer sees a Reset frame.
//
// A peer that stops reading cannot hang a writer, a Reset or a shutdown,
// nor make the connection hold more for it:
//   - a write to the connection that does not complete within
//     Transport.WriteTimeout (10 s: go-yamux's ConnectionWriteTimeout,
//     which go-libp2p keeps) closes the connection with ErrWriteTimeout.
//     As in go-yamux, the deadline is moved on once half of it has passed;
//     writes go out in pieces of at most 64 KiB (go-yamux's largest frame),
//     so each piece has at least 5 s;
//   - at most MaxQueuedResets (4096, 16 bytes each) Reset frames wait to
//     be written besides the batch in the write, whether they refuse
//     streams opened past MaxInboundStreams or end streams reset on this
//     side (a stream leaves the connection when it is reset, so a peer
//     that opens streams the host resets, for an unknown protocol, could
//     otherwise grow the queue without end); one more closes the
//     connection with ErrTooManyResets. js-libp2p is stricter: it closes
//     the connection when the peer opens more than 5 streams a second
//     past its limit (disconnectThreshold);
//   - the send queue holds at most 32 frames (8 MiB). Write and CloseWrite
//     wait for room until their deadline; Reset never waits: its frame is
//     queued apart and written before the frames already queued, and the
//     stream's own queued frames are dropped. A stream reset before its
//     NewStream frame went out is never announced. So no frame of a stream
//     goes out after its Reset, local or the peer's, nor for a stream the
//     peer never heard of: js-libp2p counts those against the connection
//     (its "missing stream" rate limit).
//
// A stream closed for reading and writing on this side (Close, or
// CloseRead and CloseWrite) is forgotten at once, whether or not the peer
// closed its side, as go-yamux v5 forgets a stream on Close; what the peer
// still sends on it is dropped. So mplex needs no stream close timeout
// (hashicorp/yamux's StreamCloseTimeout, which go-yamux does not have),
// and streams closed here cannot pile up. Streams open at once are
// counted by go-libp2p's resource manager, as for yamux.
//
// # Stream limits
//
// Streams open at once are also counted by go-libp2p's resource manager.
// A courier node configures it (node/internal/peers/resources.go) so
// that a peer may hold DefaultMaxInboundStreams (1024) inbound streams
// across all protocols and connections, the bound this package resets
// streams at, and keeps go-libp2p's defaults, autoscaled to an eighth of
// the machine's memory (go-libp2p p2p/host/resource-manager
// limit_defaults.go), for the rest:
// with M GiB of RAM, a peer may hold 64 + M/2 inbound streams of any one
// protocol, and streams whose protocol is still being negotiated count
// against a node-wide transient limit of 128 + 16*M. So streams of one
// protocol are refused long before MaxInboundStreams (on 16 GiB, past 72),
// and streams over several protocols at 1024 per peer, as here. A refused
// stream is reset (network.StreamResourceLimitExceeded), as past
// MaxInboundStreams.
//
// Deadlines follow net.Conn: setting or moving one also applies to a Read
// or Write already waiting. Every waiting reader sees io.EOF or the reset.
package mplex

import (
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// ID is the protocol id offered in muxer negotiation.
const ID = "/mplex/6.7.0"

// Defaults of the Transport fields.
const (
	DefaultMaxInboundStreams = 1024
	DefaultMaxStreamBuffer   = 4 << 20
	DefaultMaxConnBuffer     = 16 << 20
	DefaultWriteTimeout      = 10 * time.Second
)

// MaxQueuedResets is how many Reset frames may wait to be written; one
// more closes the connection with ErrTooManyResets.
const MaxQueuedResets = 4096

// Transport is the mplex network.Multiplexer. Its zero value uses the
// defaults; it must not be changed once in use.
type Transport struct {
	// MaxInboundStreams is how many streams the peer may have open at once;
	// a NewStream beyond it is answered with a Reset. Zero means 1024
	// (js-libp2p maxInboundStreams).
	MaxInboundStreams int
	// MaxStreamBuffer is how many bytes one stream may hold unread before
	// it is reset. Zero means 4 MiB (js-libp2p maxStreamBufferSize).
	MaxStreamBuffer int
	// MaxConnBuffer is how many bytes all streams of a connection may hold
	// unread; past it the stream holding most is reset. Zero means 16 MiB.
	MaxConnBuffer int
	// WriteTimeout is how long a write to the connection may take before
	// the connection is closed with ErrWriteTimeout. Zero means 10 s
	// (go-yamux ConnectionWriteTimeout).
	WriteTimeout time.Duration
}

// DefaultTransport returns a Transport with the default limits.
func DefaultTransport() *Transport { return &Transport{} }

var _ network.Multiplexer = (*Transport)(nil)

// NewConn starts multiplexing nc. Memory for unread data is reserved in a
// span of scope, which may be nil (no resource manager). The connection
// owns nc from here on and closes it.
func (t *Transport) NewConn(nc net.Conn, isServer bool, scope network.PeerScope) (network.MuxedConn, error) {
	var span network.ResourceScopeSpan
	if scope != nil {
		var err error
		if span, err = scope.BeginSpan(); err != nil {
			return nil, err
		}
	}
	return newConn(nc, t.limits(), span), nil
}

type limits struct {
	inbound, stream, conn int
	writeTimeout          time.Duration
}

func (t *Transport) limits() limits {
	l := limits{t.MaxInboundStreams, t.MaxStreamBuffer, t.MaxConnBuffer, t.WriteTimeout}
	if l.inbound <= 0 {
		l.inbound = DefaultMaxInboundStreams
	}
	if l.stream <= 0 {
		l.stream = DefaultMaxStreamBuffer
	}
	if l.conn <= 0 {
		l.conn = DefaultMaxConnBuffer
	}
	if l.writeTimeout <= 0 {
		l.writeTimeout = DefaultWriteTimeout
	}
	return l
}
