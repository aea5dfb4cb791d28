package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"golang.org/x/sync/semaphore"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
)

// ProtocolID is the libp2p protocol id of store v3 (rfc-index 13/store.md).
const ProtocolID protocol.ID = "/vac/waku/store-query/3.0.0"

// Status codes of StoreQueryResponse (nwaku waku_store/common.nim).
const (
	StatusOK                 = 200
	StatusBadResponse        = 300
	StatusBadRequest         = 400
	StatusTooManyRequests    = 429
	StatusServiceUnavailable = 503
	StatusPeerDialFailure    = 504
)

// Frame limits.
const (
	// MaxRequestSize is the largest request frame a Server reads, in bytes:
	// room for archive.MaxQueryHashes hashes and more. nwaku reads requests
	// of any size; a bound keeps a peer from making us buffer without limit.
	MaxRequestSize = 256 << 10
	// MaxResponseSize is the largest response frame a Client reads, in
	// bytes: a full page of the largest messages, with room for the
	// key-value framing.
	MaxResponseSize = archive.MaxPageSize*(message.MaxSize+1024) + 64<<10
)

// ErrConfig is wrapped by an invalid Config.
var ErrConfig = errors.New("store: invalid config")

// Config configures a Server. The zero value serves without a rate limit.
type Config struct {
	// RateLimit admits requests as nwaku's --rate-limit for store does
	// (package internal/ratelimit): a refused request is answered with 429
	// TOO_MANY_REQUESTS and request id "N/A". The zero value sets no limit,
	// nwaku's default.
	RateLimit ratelimit.Setting
	// Timeout bounds one request: reading it, querying the archive and
	// writing the response. Zero means DefaultTimeout; negative is invalid.
	Timeout time.Duration
	// MaxBytesInFlight bounds, in bytes, what the answers of all requests
	// together hold: query results while they are framed and response
	// frames while they are written. Zero means DefaultMaxBytesInFlight;
	// negative is invalid. See the package doc, "Memory bound".
	MaxBytesInFlight int
	// BusyWait is how long a request waits for room in MaxBytesInFlight
	// before it is answered 503 SERVICE_UNAVAILABLE. Zero means
	// DefaultBusyWait; negative is invalid.
	BusyWait time.Duration
	// Logger receives the server's logs. nil means slog.Default().
	Logger *slog.Logger
	// Now gives the time to the rate limiter. nil means time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultTimeout = 30 * time.Second
	// DefaultMaxBytesInFlight is room for about four of the largest pages
	// (100 messages of 150 KiB) being framed, or eight being written.
	DefaultMaxBytesInFlight = 128 << 20
	DefaultBusyWait         = 5 * time.Second
)

func (c *Config) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxBytesInFlight == 0 {
		c.MaxBytesInFlight = DefaultMaxBytesInFlight
	}
	if c.BusyWait == 0 {
		c.BusyWait = DefaultBusyWait
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v is negative", ErrConfig, c.Timeout)
	case c.MaxBytesInFlight < 0:
		return fmt.Errorf("%w: MaxBytesInFlight %d is negative", ErrConfig, c.MaxBytesInFlight)
	case c.BusyWait < 0:
		return fmt.Errorf("%w: BusyWait %v is negative", ErrConfig, c.BusyWait)
	}
	return nil
}

// Server answers store v3 queries from an archive. Each inbound stream
// carries one request and one response, each framed by an unsigned-varint
// length prefix; the server closes the stream after the response, as
// nwaku does (waku_store/protocol.nim).
type Server struct {
	h       host.Host
	a       archive.Archive
	cfg     Config
	limiter *ratelimit.Limiter
	rejects []byte // the encoded 429 response, built once as nwaku does
	// inFlight holds Config.MaxBytesInFlight: each answer reserves what it
	// may hold before it queries the archive (see reserve).
	inFlight *semaphore.Weighted

	life *lifecycle.Group

	answered, failed, limited, badRequests, queries, busy atomic.Uint64
	bytesIn, bytesOut                                     atomic.Uint64
	queryTime, writeTime                                  atomic.Int64 // nanoseconds; -1 before the first
}

// NewServer mounts the store protocol on h, answering from a. Close
// unmounts it.
func NewServer(h host.Host, a archive.Archive, cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reject := &Response{RequestID: "N/A", StatusCode: StatusTooManyRequests, StatusDesc: "TOO_MANY_REQUESTS"}
	s := &Server{h: h, a: a, cfg: cfg, limiter: ratelimit.New(cfg.RateLimit, cfg.Now), rejects: frame(reject),
		inFlight: semaphore.NewWeighted(int64(cfg.MaxBytesInFlight))}
	s.queryTime.Store(-1)
	s.writeTime.Store(-1)
	s.life = lifecycle.New()
	h.SetStreamHandler(ProtocolID, s.handle)
	return s, nil
}

// Close unmounts the protocol, cancels the queries in progress and waits
// for their handlers to return. Calling it again returns nil.
func (s *Server) Close() error {
	return s.life.Close(func() error {
		s.h.RemoveStreamHandler(ProtocolID)
		return nil
	})
}

// ServerStats counts requests since NewServer.
type ServerStats struct {
	Answered    uint64 // responses written, errors included
	Queries     uint64 // requests decoded and run against the archive
	BadRequests uint64 // requests that did not decode (400)
	RateLimited uint64 // requests refused by the rate limit (429)
	// Busy counts requests answered 503 SERVICE_UNAVAILABLE: no room in
	// Config.MaxBytesInFlight within Config.BusyWait.
	Busy   uint64
	Failed uint64 // streams reset: read, archive or write failures
	// BytesIn and BytesOut count protocol bytes as nwaku's
	// waku_service_network_bytes does for the store (waku_store/protocol.nim
	// handler): in, each request read within the rate limit; out, each
	// response written (a 429 included). Lengths are of the protobuf
	// message, without the length prefix.
	BytesIn, BytesOut uint64
	// QueryTime and WriteTime are the durations of the last request's
	// phases, nwaku's waku_store_time_seconds "query-db-time" (decode,
	// archive query and encode of a request within the rate limit) and
	// "send-store-resp-time" (writing its response, when that succeeded).
	// Each is -1 until it was first measured.
	QueryTime, WriteTime time.Duration
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{Answered: s.answered.Load(), Queries: s.queries.Load(), BadRequests: s.badRequests.Load(),
		RateLimited: s.limited.Load(), Busy: s.busy.Load(), Failed: s.failed.Load(), BytesIn: s.bytesIn.Load(), BytesOut: s.bytesOut.Load(),
		QueryTime: time.Duration(s.queryTime.Load()), WriteTime: time.Duration(s.writeTime.Load())}
}

func (s *Server) handle(st network.Stream) {
	if !s.life.Enter() {
		st.Reset()
		return
	}
	defer s.life.Leave()
	ctx, cancel := context.WithTimeout(s.life.Context(), s.cfg.Timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { st.Reset() })
	defer stop()
	st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	if err := s.serve(ctx, st); err != nil {
		s.failed.Add(1)
		s.cfg.Logger.Debug("store request failed", "peer", st.Conn().RemotePeer(), "err", err)
		st.Reset()
		return
	}
	s.answered.Add(1)
	st.Close()
}

func (s *Server) serve(ctx context.Context, st network.Stream) error {
	peer := st.Conn().RemotePeer()
	if !s.limiter.Allow(string(peer)) {
		// nwaku answers before reading the request, so the id is "N/A".
		s.limited.Add(1)
		if _, err := st.Write(s.rejects); err != nil {
			return err
		}
		s.bytesOut.Add(uint64(messageLen(s.rejects)))
		return nil
	}
	req, err := lpframe.Read(st, MaxRequestSize)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	s.bytesIn.Add(uint64(len(req)))
	start := time.Now()
	resp, held := s.answer(ctx, req)
	defer s.inFlight.Release(held)
	written := time.Now()
	s.queryTime.Store(int64(written.Sub(start)))
	if _, err := st.Write(resp); err != nil {
		return err
	}
	s.writeTime.Store(int64(time.Since(written)))
	s.bytesOut.Add(uint64(messageLen(resp)))
	return nil
}

// messageLen is the length of the message in a frame, without its
// unsigned-varint length prefix.
func messageLen(frame []byte) int {
	_, n := protowire.ConsumeVarint(frame)
	return len(frame) - max(n, 0)
}

// answer returns the framed response to one encoded request and the
// bytes of Config.MaxBytesInFlight it holds, for the caller to release
// once the frame is written.
func (s *Server) answer(ctx context.Context, data []byte) ([]byte, int64) {
	req, err := DecodeRequest(data)
	if err != nil {
		s.badRequests.Add(1)
		var de *decodeError
		errors.As(err, &de)
		return frame(&Response{StatusCode: StatusBadRequest, StatusDesc: "decoding rpc failed: " + de.name}), 0
	}
	s.queries.Add(1)
	need, ok := s.reserve(ctx, req)
	if !ok {
		s.busy.Add(1)
		// nwaku's text for the code (waku_store/common.nim).
		return frame(&Response{StatusCode: StatusServiceUnavailable, StatusDesc: "SERVICE_UNAVAILABLE"}), 0
	}
	var out []byte
	if resp, err := Answer(ctx, s.a, req); err != nil {
		out = frame(&Response{StatusCode: StatusBadResponse, StatusDesc: err.Error()})
	} else {
		out = frame(resp)
	}
	// The query result is garbage now: keep what the frame holds.
	keep := min(need, int64(len(out)))
	s.inFlight.Release(need - keep)
	return out, keep
}

// reserve takes from Config.MaxBytesInFlight what answering req may hold
// at once: its largest page's result and that page's frame (see
// maxPageBytes), at most the whole budget. It waits up to Config.BusyWait
// for room; false when there was none.
func (s *Server) reserve(ctx context.Context, req *Request) (int64, bool) {
	need := min(2*maxPageBytes(req), int64(s.cfg.MaxBytesInFlight))
	if s.inFlight.TryAcquire(need) {
		return need, true
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.BusyWait)
	defer cancel()
	return need, s.inFlight.Acquire(ctx, need) == nil
}

// maxPageBytes bounds the frame of req's response: its page of messages
// (each at most message.MaxSize with its hash, pubsub topic and framing
// when data is included, a hash otherwise), the request id it echoes,
// and room for the status and the cursor.
func maxPageBytes(req *Request) int64 {
	perMessage := int64(64)
	if req.IncludeData {
		perMessage = message.MaxSize + 1024
	}
	n := archiveQuery(req).Limit
	if n == 0 {
		n = archive.DefaultPageSize
	}
	return int64(n)*perMessage + int64(len(req.RequestID)) + 1024
}

// AnswerError is an archive failure as Answer reports it. Its text is
// nwaku's status text: the StoreError "BAD_RESPONSE: " prefix, then
// "archive error: " and the ArchiveError (waku_archive/common.nim; texts
// of waku_archive/archive.nim and the drivers' "cursor not found").
type AnswerError struct{ Err error }

func (e *AnswerError) Error() string {
	const prefix = "BAD_RESPONSE: archive error: "
	err := e.Err
	switch {
	case errors.Is(err, archive.ErrUnknownCursor):
		return prefix + "DRIVER_ERROR: cursor not found"
	case errors.Is(err, archive.ErrZeroCursor):
		return prefix + "INVALID_QUERY: all zeroes cursor hash"
	case errors.Is(err, archive.ErrTooManyContentTopics):
		return prefix + "INVALID_QUERY: too many content topics"
	case errors.Is(err, archive.ErrBadQuery):
		return prefix + "INVALID_QUERY: " + err.Error()
	}
	return prefix + "DRIVER_ERROR: " + err.Error()
}

func (e *AnswerError) Unwrap() error { return e.Err }

// Answer answers req from a as the protocol handler does, for a query the
// node makes to itself (nwaku handleSelfStoreRequest, used by the REST
// API): a 200 response carrying req's request id, each message's stored
// bytes in KeyValue.Wire (not decoded; KeyValue.Message is nil). An
// archive failure is returned as an *AnswerError wrapping it.
func Answer(ctx context.Context, a archive.Archive, req *Request) (*Response, error) {
	res, err := a.Query(ctx, archiveQuery(req))
	if err != nil {
		return nil, &AnswerError{err}
	}
	resp := &Response{RequestID: req.RequestID, StatusCode: StatusOK, StatusDesc: "OK",
		Messages: make([]KeyValue, len(res.Messages)), Cursor: res.Cursor}
	for i := range res.Messages {
		m := &res.Messages[i]
		resp.Messages[i] = KeyValue{Hash: m.Hash, Wire: m.Wire}
		if m.Wire != nil {
			resp.Messages[i].PubsubTopic = m.PubsubTopic
		}
	}
	return resp, nil
}

// archiveQuery maps a request to an archive query as nwaku's toArchiveQuery
// does (waku/node/kernel_api/store.nim): a page size over the archive's
// maximum is cut to it, 0 takes the default.
func archiveQuery(r *Request) archive.Query {
	limit := archive.MaxPageSize
	if r.Limit < uint64(limit) {
		limit = int(r.Limit)
	}
	return archive.Query{
		PubsubTopic: r.PubsubTopic, ContentTopics: r.ContentTopics,
		StartTime: r.StartTime, EndTime: r.EndTime, Hashes: r.Hashes,
		Cursor: r.Cursor, Forward: r.Forward, Limit: limit, IncludeData: r.IncludeData,
	}
}

// frame returns the length-prefixed encoding of r in one buffer.
func frame(r *Response) []byte {
	n := r.size()
	buf := make([]byte, 0, protowire.SizeVarint(uint64(n))+n)
	buf = protowire.AppendVarint(buf, uint64(n))
	return r.Append(buf)
}
