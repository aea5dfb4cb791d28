package lightpush

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/shard"
)

// Publisher is what the service needs of the relay; *relay.Relay is one.
type Publisher interface {
	// Check applies the relay's network policy (the rules its validator
	// applies after message.Validate).
	Check(m *message.Message) error
	// PublishEnvelope publishes env's wire bytes and returns the number of
	// relay peers on its pubsub topic. When there are none it must leave
	// no state behind for the topic (relay.Relay.PublishEnvelope joins
	// nothing then): the service answers 505 and keeps nothing either.
	PublishEnvelope(ctx context.Context, env *message.Envelope) (int, error)
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("lightpush: invalid config")

// Config configures a Service.
type Config struct {
	// Relay publishes the pushed messages. Required: nwaku mounts lightpush
	// only with relay.
	Relay Publisher
	// ClusterID is the cluster whose static-shard pubsub topics
	// (/waku/2/rs/<ClusterID>/<0..1023>) the service publishes on: a push
	// on another cluster's topic is refused 421 UNSUPPORTED_PUBSUB_TOPIC,
	// one on a topic that is not a static shard 400 BAD_REQUEST. Zero is
	// cluster 0. The node passes its --cluster-id.
	ClusterID uint16
	// Autoshard returns the pubsub topic of a content topic. Nil means
	// static sharding: a v3 request without a pubsub topic is refused (420).
	Autoshard func(contentTopic string) (string, error)
	// Counters receives the decode, hash and encode counts. Nil means not
	// counted.
	Counters *message.Counters
	// Timeout bounds reading a request, publishing it and writing the
	// response. Default 10 s.
	Timeout time.Duration
	// RateLimit admits requests as nwaku's RequestRateLimiter for
	// lightpush (--rate-limit lightpush:V/P), one limiter per version; a
	// request over it is answered 429 "Request rejected due to too many
	// requests" (v2: is_success false, "TOO_MANY_REQUESTS"), request id
	// "N/A", and is not read. The zero value sets no limit.
	RateLimit ratelimit.Setting
	// RLN, when set, is RLN relay's step of every push (see RLN). Nil
	// means RLN relay is off.
	RLN RLN
	// Logger receives debug records. Nil means slog.Default().
	Logger *slog.Logger
}

// RLN is RLN relay's step of a push (17/WAKU2-RLN-RELAY), as nwaku's relay
// push handler takes it (waku_lightpush/callbacks.nim getRelayPushHandler,
// and the same in waku_lightpush_legacy): a message without a proof gets
// one of the service node's membership, and one with a proof, or any on a
// node without a membership, must pass the RLN validator. It runs after
// the message rules and the relay's Check, with the timestamp filled.
type RLN interface {
	// Prepare returns the message to publish on pubsubTopic, m itself or
	// a copy carrying a new proof, and its decoded proof; m is not
	// modified. An *OutOfRLNProofError is answered 504 OUT_OF_RLN_PROOF,
	// any other error 420 INVALID_MESSAGE, each with the error's text
	// (nwaku's: the proof's error, "RLN validation failed").
	Prepare(pubsubTopic string, m *message.Message) (*message.Message, *rln.RateLimitProof, error)
}

// OutOfRLNProofError is RLN.Prepare's error when no proof could be made
// (the membership's message ids of the epoch are spent, or its path is not
// known). Its text is Err's.
type OutOfRLNProofError struct{ Err error }

func (e *OutOfRLNProofError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *OutOfRLNProofError) Unwrap() error { return e.Err }

// DefaultTimeout is the default of Config.Timeout and ClientConfig.Timeout.
const DefaultTimeout = 10 * time.Second

// Service serves lightpush v3 and v2 on a host.
type Service struct {
	h       host.Host
	cfg     Config
	c       counters
	limitV3 *ratelimit.Limiter
	limitV2 *ratelimit.Limiter

	life *lifecycle.Group
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

func (c *Config) validate() error {
	switch {
	case c.Relay == nil:
		return fmt.Errorf("%w: no relay to publish with", ErrConfig)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout %v < 0", ErrConfig, c.Timeout)
	}
	return nil
}

// New mounts both protocols on h. Errors wrap ErrConfig.
func New(h host.Host, cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{h: h, cfg: cfg, life: lifecycle.New(),
		limitV3: ratelimit.New(cfg.RateLimit, nil), limitV2: ratelimit.New(cfg.RateLimit, nil)}
	if h != nil {
		h.SetStreamHandler(ProtocolID, s.handleV3)
		h.SetStreamHandler(LegacyProtocolID, s.handleV2)
	}
	return s, nil
}

// Close removes the stream handlers, cancels requests in flight and waits
// for them. Calling it again returns nil.
func (s *Service) Close() error {
	return s.life.Close(func() error {
		if s.h != nil {
			s.h.RemoveStreamHandler(ProtocolID)
			s.h.RemoveStreamHandler(LegacyProtocolID)
		}
		return nil
	})
}

// Answers to a request over the rate limit (nwaku waku_lightpush/common.nim
// TooManyRequestsMessage, waku_lightpush_legacy/common.nim).
var (
	limitedV3 = (&Response{RequestID: "N/A", StatusCode: StatusTooManyRequests, StatusDesc: "Request rejected due to too many requests"}).append(nil)
	limitedV2 = (&LegacyRPC{RequestID: "N/A", Response: &LegacyResponse{Info: "TOO_MANY_REQUESTS"}}).Append(nil)
)

func (s *Service) handleV3(st network.Stream) {
	if !s.limitV3.Allow(string(st.Conn().RemotePeer())) {
		s.refuse(st, 3, limitedV3)
		return
	}
	s.serve(st, &s.c.bytesInV3, func(ctx context.Context, b []byte) []byte {
		resp := s.answerV3(ctx, b)
		return resp.append(nil)
	}, func(requestID string) []byte {
		s.c.count(3, StatusInvalidMessage)
		return (&Response{RequestID: requestID, StatusCode: StatusInvalidMessage, StatusDesc: tooLargeText}).append(nil)
	})
}

func (s *Service) handleV2(st network.Stream) {
	if !s.limitV2.Allow(string(st.Conn().RemotePeer())) {
		s.refuse(st, 2, limitedV2)
		return
	}
	s.serve(st, &s.c.bytesInV2, func(ctx context.Context, b []byte) []byte {
		resp := s.answerV2(ctx, b)
		return resp.Append(nil)
	}, func(requestID string) []byte {
		s.c.count(2, StatusInvalidMessage)
		s.c.legacyFailure(tooLargeText)
		return (&LegacyRPC{RequestID: requestID, Response: &LegacyResponse{Info: tooLargeText}}).Append(nil)
	})
}

// refuse answers a request over the rate limit without reading it.
func (s *Service) refuse(st network.Stream, version int, answer []byte) {
	s.c.count(version, StatusTooManyRequests)
	st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	if err := lpframe.Write(st, answer); err != nil {
		st.Reset()
		return
	}
	st.Close()
}

// serve reads one request from st, adds its length to bytesIn, answers it
// and closes the stream. A request over MaxRequestSize carries a message
// over message.MaxSize: nwaku reads requests of any size and answers it as
// its relay refuses the message (INVALID_MESSAGE, "Message size exceeded
// maximum of 153600 bytes"), so the service reads only its first bytes,
// for the request id, passes over the rest and answers tooLarge(id).
func (s *Service) serve(st network.Stream, bytesIn *atomic.Uint64, answer func(context.Context, []byte) []byte, tooLarge func(requestID string) []byte) {
	if !s.life.Enter() {
		st.Reset()
		return
	}
	defer s.life.Leave()
	ctx, cancel := context.WithTimeout(s.life.Context(), s.cfg.Timeout)
	defer cancel()
	st.SetDeadline(time.Now().Add(s.cfg.Timeout))
	n, err := lpframe.ReadLength(st)
	var out []byte
	switch {
	case err != nil:
	case n > MaxRequestSize:
		var id string
		if id, err = skipRequest(st, n); err == nil {
			out = tooLarge(id)
		}
	default:
		b := make([]byte, n)
		if _, err = io.ReadFull(st, b); err == nil {
			out = answer(ctx, b)
		}
	}
	if err != nil {
		s.c.unreadable.Add(1)
		st.Reset()
		return
	}
	bytesIn.Add(n)
	if err := lpframe.Write(st, out); err != nil {
		st.Reset()
		return
	}
	st.Close()
}

// tooLargeText is nwaku's answer to a message over message.MaxSize (its
// relay's validateMessage).
var tooLargeText = fmt.Sprintf("Message size exceeded maximum of %d bytes", message.MaxSize)

// requestHead is how much of an oversized request skipRequest reads to
// find its request id (field 1, which nwaku, go-waku and js-waku write
// first).
const requestHead = 1024

// skipRequest reads the n bytes of an oversized request from r, keeping
// only its first requestHead, and returns the request id found there
// (field 1 of both LightPushRequest and the legacy PushRPC), or "N/A" when
// the head holds none.
func skipRequest(r io.Reader, n uint64) (string, error) {
	head := make([]byte, min(n, requestHead))
	if _, err := io.ReadFull(r, head); err != nil {
		return "", err
	}
	if _, err := io.CopyN(io.Discard, r, int64(n)-int64(len(head))); err != nil {
		return "", err
	}
	return headRequestID(head), nil
}

// headRequestID returns field 1 of the protobuf whose first bytes are
// head, "N/A" when head does not hold it whole.
func headRequestID(head []byte) string {
	for len(head) > 0 {
		num, typ, n := protowire.ConsumeTag(head)
		if n < 0 {
			break
		}
		head = head[n:]
		if num == 1 && typ == protowire.BytesType {
			if v, m := protowire.ConsumeBytes(head); m >= 0 {
				return string(v)
			}
			break
		}
		if m := protowire.ConsumeFieldValue(num, typ, head); m >= 0 {
			head = head[m:]
			continue
		}
		break
	}
	return "N/A"
}

// answerV3 answers one encoded LightPushRequest (nwaku
// waku_lightpush/protocol.nim handleRequest).
func (s *Service) answerV3(ctx context.Context, b []byte) Response {
	req, err := decodeRequest(b)
	if err != nil {
		s.c.count(3, StatusBadRequest)
		return Response{RequestID: "N/A", StatusCode: StatusBadRequest, StatusDesc: "decode_rpc_failure: " + err.Error()}
	}
	return s.Push(ctx, req)
}

// Push handles one v3 request as if it had come over the network, for
// callers in the same process (the REST API on a node serving lightpush).
// req.Message is handed over: the published envelope aliases it.
func (s *Service) Push(ctx context.Context, req Request) Response {
	code, desc, peers := s.push(ctx, req.Message, req.PubsubTopic, req.HasPubsubTopic, false)
	s.c.count(3, code)
	resp := Response{RequestID: req.RequestID, StatusCode: code, StatusDesc: desc}
	if code == StatusOK {
		resp.RelayPeerCount, resp.HasRelayPeerCount = uint32(peers), true
	}
	return resp
}

// answerV2 answers one encoded legacy PushRPC (nwaku
// waku_lightpush_legacy/protocol.nim handleRequest).
func (s *Service) answerV2(ctx context.Context, b []byte) LegacyRPC {
	rpc, err := decodeLegacyRPC(b)
	var info string
	switch {
	case err != nil:
		info = "decode_rpc_failure: " + err.Error()
	case rpc.Request == nil:
		info = "empty_request_body_failure"
	default:
		return LegacyRPC{RequestID: rpc.RequestID, Response: s.PushLegacy(ctx, *rpc.Request)}
	}
	s.c.count(2, StatusBadRequest)
	s.c.legacyFailure(info)
	return LegacyRPC{RequestID: rpc.RequestID, Response: &LegacyResponse{Info: info}}
}

// PushLegacy handles one v2 request, as Push does for v3. The answer's info
// is "OK" on success, nwaku's text otherwise.
func (s *Service) PushLegacy(ctx context.Context, req LegacyRequest) *LegacyResponse {
	code, desc, _ := s.push(ctx, req.Message, req.PubsubTopic, true, true)
	s.c.count(2, code)
	if code == StatusOK {
		return &LegacyResponse{IsSuccess: true, Info: "OK"}
	}
	s.c.legacyFailure(desc)
	return &LegacyResponse{Info: desc}
}

// push decodes wire once, applies the message rules and the relay's,
// hashes once and publishes. It returns the status code, its description
// and the number of relay peers. legacy selects the v2 texts where they
// differ.
func (s *Service) push(ctx context.Context, wire []byte, topic string, hasTopic, legacy bool) (uint32, string, int) {
	m, err := message.Decode(wire, s.cfg.Counters)
	if errors.Is(err, message.ErrTooLarge) {
		// nwaku decodes, then relay's validateMessage refuses the size.
		return StatusInvalidMessage, tooLargeText, 0
	}
	if err != nil {
		return StatusBadRequest, "decode_rpc_failure: " + err.Error(), 0
	}
	// Before autosharding reads the content topic, so that no answer
	// echoes one of more than 1024 bytes.
	if err := message.Validate(m); err != nil {
		return StatusInvalidMessage, err.Error(), 0
	}
	if !hasTopic {
		if s.cfg.Autoshard == nil {
			return StatusInvalidMessage, "Pubsub topic must be specified when static sharding is enabled", 0
		}
		if topic, err = s.cfg.Autoshard(m.ContentTopic); err != nil {
			return StatusInvalidMessage, "Invalid content-topic:" + err.Error(), 0
		}
	}
	if strings.TrimSpace(topic) == "" {
		return StatusBadRequest, "topic must not be empty", 0
	}
	if code, desc := s.checkTopic(topic); code != StatusOK {
		return code, desc, 0
	}
	if err := s.cfg.Relay.Check(m); err != nil {
		return StatusInvalidMessage, err.Error(), 0
	}
	reencode := m.Timestamp == 0
	if reencode {
		// nwaku's relay publish fills a zero timestamp with the current
		// time (waku_relay/protocol.nim publish): re-encoded, as is a
		// message RLN relay attaches a proof to.
		filled := *m
		filled.Timestamp, filled.Present = time.Now().UnixNano(), m.Present|message.HasTimestamp
		m = &filled
	}
	var proof *rln.RateLimitProof
	if s.cfg.RLN != nil {
		out, p, err := s.cfg.RLN.Prepare(topic, m)
		var oop *OutOfRLNProofError
		switch {
		case errors.As(err, &oop):
			return StatusOutOfRLNProof, err.Error(), 0
		case err != nil:
			return StatusInvalidMessage, err.Error(), 0
		}
		reencode = reencode || out != m
		m, proof = out, p
	}
	if reencode {
		shared, enc := m.EncodeShared(s.cfg.Counters)
		if len(enc) > message.MaxSize {
			return StatusInvalidMessage, fmt.Sprintf("Message size exceeded maximum of %d bytes", message.MaxSize), 0
		}
		m, wire = shared, enc
		s.c.reencoded.Add(1)
	} else {
		s.c.asArrived.Add(1)
	}
	env := message.NewEnvelopeWithProof(m, topic, wire, s.cfg.Counters, proof)
	env.HashWithID() // from message.PairMin bytes, the relay's gossipsub takes the message id from the same pass
	peers, err := s.cfg.Relay.PublishEnvelope(ctx, env)
	if err != nil {
		return StatusInternalServerError, err.Error(), 0
	}
	if peers == 0 {
		if legacy {
			return StatusNoPeersToRelay, "not_published_to_any_peer", 0
		}
		return StatusNoPeersToRelay, "No peers for topic, skipping publish", 0
	}
	return StatusOK, "", peers
}

// maxStaticShardTopic is the length of the longest static-shard pubsub
// topic.
var maxStaticShardTopic = len(shard.RelayShard{ClusterID: shard.MaxClusterID, ShardID: shard.MaxShardID}.PubsubTopic())

// checkTopic accepts the static-shard pubsub topics of Config.ClusterID
// only, as the node's filter service follows only those: every topic
// pushed on is joined by the relay, so any other name would let a client
// make the node join topics without end. The answer never echoes the
// topic, which may be some 200 kB long.
func (s *Service) checkTopic(topic string) (uint32, string) {
	rs, err := shard.ParsePubsubTopic(topic)
	var pe *shard.ParseError
	switch {
	case err != nil && len(topic) > maxStaticShardTopic:
		// The reason may quote a part of the topic.
		return StatusBadRequest, fmt.Sprintf("Invalid pubsub topic: %d bytes, want /waku/2/rs/<cluster>/<shard>", len(topic))
	case errors.As(err, &pe):
		return StatusBadRequest, "Invalid pubsub topic: " + pe.Reason
	case err != nil:
		return StatusBadRequest, "Invalid pubsub topic"
	case rs.ClusterID != s.cfg.ClusterID:
		return StatusUnsupportedPubsubTopic, fmt.Sprintf("Unsupported pubsub topic: cluster %d, this node serves cluster %d", rs.ClusterID, s.cfg.ClusterID)
	}
	return StatusOK, ""
}

// Stats counts the work of a Service.
type Stats struct {
	// Answers counts answers by protocol version ("v3", "v2") and status
	// code (v2 answers are counted under the code v3 would have given).
	Answers map[string]map[uint32]uint64
	// PublishedAsArrived counts messages published with the bytes the
	// request carried; Reencoded those whose zero timestamp was filled.
	PublishedAsArrived, Reencoded uint64
	// Unreadable counts streams whose request could not be read.
	Unreadable uint64
	// BytesIn counts, by protocol version ("v3", "v2"), the bytes of the
	// requests read within the rate limit, without their length prefix, as
	// nwaku's waku_service_network_bytes "in" (waku_lightpush/protocol.nim,
	// waku_lightpush_legacy/protocol.nim); nwaku counts no "out" for
	// lightpush.
	BytesIn map[string]uint64
	// LegacyFailures counts the legacy (v2) requests that failed, rate
	// limited ones aside, by the info text of the answer: nwaku's
	// waku_lightpush_errors label (waku_lightpush_legacy/protocol.nim
	// handleRequest). At most MaxLegacyFailureTexts texts are kept apart;
	// the others count under "other".
	LegacyFailures map[string]uint64
}

// MaxLegacyFailureTexts bounds the distinct texts Stats.LegacyFailures
// keeps, and so the labels of the metric they feed.
const MaxLegacyFailureTexts = 64

type counters struct {
	mu                               sync.Mutex
	answers                          map[string]map[uint32]uint64
	legacyFailures                   map[string]uint64
	asArrived, reencoded, unreadable atomic.Uint64
	bytesInV3, bytesInV2             atomic.Uint64
}

func (c *counters) count(version int, code uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == nil {
		c.answers = map[string]map[uint32]uint64{}
	}
	v := fmt.Sprintf("v%d", version)
	if c.answers[v] == nil {
		c.answers[v] = map[uint32]uint64{}
	}
	c.answers[v][code]++
}

// legacyFailure counts one failed legacy request answered with info.
func (c *counters) legacyFailure(info string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.legacyFailures == nil {
		c.legacyFailures = map[string]uint64{}
	}
	if _, ok := c.legacyFailures[info]; !ok && len(c.legacyFailures) >= MaxLegacyFailureTexts {
		info = "other"
	}
	c.legacyFailures[info]++
}

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	st := Stats{Answers: map[string]map[uint32]uint64{}, LegacyFailures: map[string]uint64{},
		PublishedAsArrived: s.c.asArrived.Load(), Reencoded: s.c.reencoded.Load(), Unreadable: s.c.unreadable.Load(),
		BytesIn: map[string]uint64{"v3": s.c.bytesInV3.Load(), "v2": s.c.bytesInV2.Load()}}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for v, codes := range s.c.answers {
		st.Answers[v] = map[uint32]uint64{}
		for code, n := range codes {
			st.Answers[v][code] = n
		}
	}
	for info, n := range s.c.legacyFailures {
		st.LegacyFailures[info] = n
	}
	return st
}
