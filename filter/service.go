package filter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
)

// Status codes of FilterSubscribeResponse (nwaku waku_filter_v2/common.nim).
const (
	StatusOK                 = 200
	StatusBadResponse        = 300
	StatusBadRequest         = 400
	StatusNotFound           = 404
	StatusTooManyRequests    = 429
	StatusServiceUnavailable = 503
	StatusPeerDialFailure    = 504
)

// Criterion is one (pubsub topic, content topic) pair a peer subscribed to.
type Criterion struct {
	PubsubTopic  string
	ContentTopic string
}

// subscriber is one subscribed peer: its criteria, when it was last heard
// from, and the bounded queue of push frames its writer goroutine drains.
// criteria and lastSeen are guarded by Service.mu.
type subscriber struct {
	id       peer.ID
	lastSeen time.Time
	// criteria maps each criterion of the peer to its place in the
	// criterion's Service.index slice.
	criteria map[Criterion]int
	bytes    int // criteriaBytes of criteria
	queue    chan []byte
	// ctx ends when the subscriber leaves or the service closes; its end
	// resets the push stream, so a writer blocked on a stalled peer
	// returns at once rather than after PushTimeout.
	ctx     context.Context
	leave   context.CancelFunc
	dropped atomic.Uint64

	mu     sync.Mutex
	stream network.Stream // the push stream being written, nil when none
}

// setStream records st as the push stream being written; when the
// subscriber has already left, st is reset at once.
func (sub *subscriber) setStream(st network.Stream) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.stream = st
	if st != nil && sub.ctx.Err() != nil {
		st.Reset()
	}
}

// resetStream resets the push stream being written, if any.
func (sub *subscriber) resetStream() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.stream != nil {
		sub.stream.Reset()
	}
}

// Service serves /vac/waku/filter-subscribe/2.0.0-beta1 and pushes matching
// messages to subscribers over /vac/waku/filter-push/2.0.0-beta1.
//
// Each subscribed peer has one writer goroutine, one push stream (opened on
// the first push, reopened after a failure) and a queue of
// Config.PushQueueSize frames. Push never blocks: a full queue drops the
// frame for that peer and counts it, so a slow or dead subscriber delays
// nobody else. A peer's subscriptions expire SubscriptionTimeout after its
// last request; expired peers get no pushes and are removed by a sweep.
//
// Locking: mu guards peers, index, topics, bytes and each subscriber's
// criteria; seen has its own lock and is never taken while holding mu.
// life's lock may be taken while holding mu (Closed, Go), never the other
// way round: Close runs its stop step, which takes mu, after releasing it.
type Service struct {
	h     host.Host
	cfg   Config
	life  *lifecycle.Group
	seen  *seenHashes
	limit *ratelimit.PerPeer
	c     counters
	now   func() time.Time

	mu    sync.RWMutex
	peers map[peer.ID]*subscriber
	// index holds the subscribers of each criterion, in no order, each
	// knowing its place (subscriber.criteria): a slice, not a map, because
	// one map per criterion would cost some 200 bytes more per criterion,
	// most of them having one subscriber.
	index  map[Criterion][]*subscriber
	topics map[string]int // criteria per pubsub topic, for OnTopic
	bytes  int            // criteriaBytes of every subscriber's criteria
}

// New mounts the filter service on h and starts its expiry sweep.
// Errors wrap ErrConfig.
func New(h host.Host, cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := newService(h, cfg)
	h.SetStreamHandler(SubscribeProtocolID, s.handle)
	s.life.Go(s.sweepLoop)
	return s, nil
}

func newService(h host.Host, cfg Config) *Service {
	return &Service{
		h: h, cfg: cfg, life: lifecycle.New(), now: time.Now,
		seen:   newSeenHashes(cfg.DedupSize, cfg.DedupTTL),
		limit:  ratelimit.NewPerPeer(cfg.RateLimit, nil),
		peers:  map[peer.ID]*subscriber{},
		index:  map[Criterion][]*subscriber{},
		topics: map[string]int{},
	}
}

// Close removes the stream handler, stops every writer and the sweep, and
// waits for them. Queued pushes are abandoned. Calling it again returns
// nil.
func (s *Service) Close() error {
	return s.life.Close(func() error {
		s.mu.Lock()
		for id := range s.peers {
			s.removeLocked(id)
		}
		s.mu.Unlock()
		if s.h != nil {
			s.h.RemoveStreamHandler(SubscribeProtocolID)
		}
		return nil
	})
}

// handle answers one subscribe-protocol stream: one request, one response.
// A request that cannot be read or decoded gets no response and the stream
// is reset, as nwaku closes it.
func (s *Service) handle(st network.Stream) {
	defer st.Close()
	st.SetDeadline(time.Now().Add(s.cfg.RequestTimeout))
	if !s.limit.Allow(string(st.Conn().RemotePeer())) {
		// nwaku answers without reading the request (checkUsageLimit).
		s.c.limited.Add(1)
		resp := SubscribeResponse{RequestID: "N/A", StatusCode: StatusTooManyRequests, StatusDesc: "filter request rejected due rate limit exceeded"}
		if err := lpframe.Write(st, resp.append(nil)); err != nil {
			st.Reset()
		}
		return
	}
	b, err := lpframe.Read(st, MaxRequestSize)
	if err != nil {
		s.c.badRequests.Add(1)
		st.Reset()
		return
	}
	s.c.bytesIn.Add(uint64(len(b)))
	req, err := decodeSubscribeRequest(b)
	if err != nil {
		s.c.badRequests.Add(1)
		s.cfg.Logger.Debug("filter: undecodable subscribe request", "peer", st.Conn().RemotePeer(), "err", err)
		st.Reset()
		return
	}
	resp := s.Answer(st.Conn().RemotePeer(), req)
	if err := lpframe.Write(st, resp.append(nil)); err != nil {
		st.Reset()
	}
}

// Answer applies one request from peer p and returns the response, with
// nwaku's status codes and descriptions (waku_filter_v2/protocol.nim). The
// stream handler calls it; it is exported for in-process clients.
func (s *Service) Answer(p peer.ID, req SubscribeRequest) SubscribeResponse {
	known := int(req.Type) < len(s.c.requests)
	if known {
		s.c.requests[req.Type].Add(1)
	}
	start := time.Now()
	code, desc := s.apply(p, req)
	if known && s.cfg.OnRequest != nil {
		s.cfg.OnRequest(req.Type, time.Since(start))
	}
	if code != StatusOK {
		s.c.refused.Add(1)
	}
	return SubscribeResponse{RequestID: req.RequestID, StatusCode: code, StatusDesc: desc}
}

func (s *Service) apply(p peer.ID, req SubscribeRequest) (uint32, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Closed() {
		return StatusServiceUnavailable, "SERVICE_UNAVAILABLE: service closed"
	}
	now := s.now()
	if sub, ok := s.peers[p]; ok && s.expired(sub, now) {
		s.removeLocked(p)
	}
	switch req.Type {
	case SubscriberPing:
		return s.ping(p, now)
	case Subscribe, Unsubscribe:
		if code, desc := checkCriteria(req); code != StatusOK {
			return code, desc
		}
		if req.Type == Subscribe {
			return s.subscribe(p, req, now)
		}
		return s.unsubscribe(p, req, now)
	case UnsubscribeAll:
		if _, ok := s.peers[p]; !ok {
			return StatusNotFound, notFound
		}
		s.removeLocked(p)
		return StatusOK, "OK"
	}
	return StatusBadRequest, fmt.Sprintf("BAD_REQUEST: unknown request type %d", uint32(req.Type))
}

// notFound is nwaku's description of a 404.
const notFound = "NOT_FOUND: peer has no subscriptions"

// checkCriteria applies nwaku's rules to the criteria of a SUBSCRIBE or
// UNSUBSCRIBE, then the topic rules nwaku does not have: each content
// topic as message.CheckContentTopic wants it (not empty, not white space,
// at most MaxTopicSize bytes), the pubsub topic at most MaxTopicSize bytes.
func checkCriteria(req SubscribeRequest) (uint32, string) {
	if !req.HasPubsubTopic || len(req.ContentTopics) == 0 {
		return StatusBadRequest, "BAD_REQUEST: pubsubTopic and contentTopics must be specified"
	}
	if len(req.ContentTopics) > MaxContentTopicsPerRequest {
		return StatusBadRequest, fmt.Sprintf("BAD_REQUEST: exceeds maximum content topics: %d", MaxContentTopicsPerRequest)
	}
	if len(req.PubsubTopic) > MaxTopicSize {
		return StatusBadRequest, fmt.Sprintf("BAD_REQUEST: pubsub topic exceeds maximum size: %d bytes", MaxTopicSize)
	}
	for _, ct := range req.ContentTopics {
		switch err := message.CheckContentTopic(ct); {
		case errors.Is(err, message.ErrContentTopicTooLong):
			return StatusBadRequest, fmt.Sprintf("BAD_REQUEST: content topic exceeds maximum size: %d bytes", MaxTopicSize)
		case err != nil:
			return StatusBadRequest, "BAD_REQUEST: content topic is empty or white space"
		}
	}
	return StatusOK, ""
}

// criteriaBytes is what one criterion is charged against Config.
// MaxCriteriaBytes and MaxTotalCriteriaBytes: its two topics and
// CriterionOverhead.
func criteriaBytes(c Criterion) int {
	return len(c.PubsubTopic) + len(c.ContentTopic) + CriterionOverhead
}

// newCriteria returns the criteria of req that sub (nil for a new peer)
// does not hold yet, without duplicates, and the bytes they would add.
func newCriteria(sub *subscriber, req SubscribeRequest) ([]Criterion, int) {
	add := make([]Criterion, 0, len(req.ContentTopics))
	n := 0
	for _, ct := range req.ContentTopics {
		c := Criterion{req.PubsubTopic, ct}
		if sub != nil {
			if _, held := sub.criteria[c]; held {
				continue
			}
		}
		if slices.Contains(add, c) {
			continue
		}
		add = append(add, c)
		n += criteriaBytes(c)
	}
	return add, n
}

func (s *Service) ping(p peer.ID, now time.Time) (uint32, string) {
	sub, ok := s.peers[p]
	if !ok {
		return StatusNotFound, notFound
	}
	sub.lastSeen = now
	return StatusOK, "OK"
}

// subscribe adds the request's criteria for p. The criteria limit counts the
// request's topics before duplicates are removed, as nwaku does; the byte
// limits count only the criteria the peer does not hold yet. A refused
// request changes nothing.
func (s *Service) subscribe(p peer.ID, req SubscribeRequest, now time.Time) (uint32, string) {
	sub, ok := s.peers[p]
	if ok && len(sub.criteria)+len(req.ContentTopics) > s.cfg.MaxCriteria {
		return StatusServiceUnavailable, "SERVICE_UNAVAILABLE: peer has reached maximum number of filter criteria"
	}
	if !ok {
		if len(s.peers) >= s.cfg.MaxPeers {
			return StatusServiceUnavailable, fmt.Sprintf("SERVICE_UNAVAILABLE: node has reached maximum number of subscriptions: %d", s.cfg.MaxPeers)
		}
		if len(req.ContentTopics) > s.cfg.MaxCriteria {
			return StatusServiceUnavailable, "SERVICE_UNAVAILABLE: peer has reached maximum number of filter criteria"
		}
	}
	add, n := newCriteria(sub, req)
	held := 0
	if ok {
		held = sub.bytes
	}
	if held+n > s.cfg.MaxCriteriaBytes {
		return StatusServiceUnavailable, fmt.Sprintf("SERVICE_UNAVAILABLE: peer has reached maximum size of filter criteria: %d bytes", s.cfg.MaxCriteriaBytes)
	}
	if s.bytes+n > s.cfg.MaxTotalCriteriaBytes {
		return StatusServiceUnavailable, fmt.Sprintf("SERVICE_UNAVAILABLE: node has reached maximum size of filter criteria: %d bytes", s.cfg.MaxTotalCriteriaBytes)
	}
	if !ok {
		sub = s.addPeerLocked(p)
	}
	sub.lastSeen = now
	for _, c := range add {
		sub.criteria[c] = len(s.index[c])
		s.index[c] = append(s.index[c], sub)
		s.topicRefLocked(c.PubsubTopic, +1)
	}
	sub.bytes += n
	s.bytes += n
	return StatusOK, "OK"
}

// unsubscribe removes the request's criteria for p; a criterion nobody is
// subscribed to is NOT_FOUND, as nwaku's removeSubscription answers. A peer
// left with no criteria is removed.
func (s *Service) unsubscribe(p peer.ID, req SubscribeRequest, now time.Time) (uint32, string) {
	sub, ok := s.peers[p]
	if !ok {
		return StatusNotFound, notFound
	}
	sub.lastSeen = now
	for _, ct := range req.ContentTopics {
		c := Criterion{req.PubsubTopic, ct}
		if _, known := s.index[c]; !known {
			return StatusNotFound, notFound
		}
		if _, has := sub.criteria[c]; has {
			s.dropCriterionLocked(sub, c)
		}
	}
	if len(sub.criteria) == 0 {
		s.removeLocked(p)
	}
	return StatusOK, "OK"
}

func (s *Service) addPeerLocked(p peer.ID) *subscriber {
	sub := &subscriber{id: p, criteria: map[Criterion]int{}, queue: make(chan []byte, s.cfg.PushQueueSize)}
	sub.ctx, sub.leave = context.WithCancel(s.life.Context())
	s.peers[p] = sub
	if s.h != nil { // without a host (unit tests) frames stay queued
		s.life.Go(func() { s.writeLoop(sub) })
	}
	return sub
}

// dropCriterionLocked removes c, which sub holds, from sub and the index:
// the last subscriber of c takes sub's place, so removal costs the same
// whatever the number of subscribers.
func (s *Service) dropCriterionLocked(sub *subscriber, c Criterion) {
	i := sub.criteria[c]
	delete(sub.criteria, c)
	subs := s.index[c]
	last := len(subs) - 1
	if moved := subs[last]; moved != sub {
		subs[i] = moved
		moved.criteria[c] = i
	}
	subs[last] = nil
	subs = subs[:last]
	if len(subs) == 0 {
		delete(s.index, c)
	} else {
		s.index[c] = subs
	}
	n := criteriaBytes(c)
	sub.bytes -= n
	s.bytes -= n
	s.topicRefLocked(c.PubsubTopic, -1)
}

// removeLocked drops every criterion of p and stops its writer.
func (s *Service) removeLocked(p peer.ID) {
	sub, ok := s.peers[p]
	if !ok {
		return
	}
	for c := range sub.criteria {
		s.dropCriterionLocked(sub, c)
	}
	delete(s.peers, p)
	sub.leave()
}

func (s *Service) topicRefLocked(topic string, d int) {
	n := s.topics[topic] + d
	if n <= 0 {
		delete(s.topics, topic)
	} else {
		s.topics[topic] = n
	}
	if s.cfg.OnTopic != nil && (n == 0 || (n == 1 && d > 0)) {
		s.cfg.OnTopic(topic, n > 0)
	}
}

func (s *Service) expired(sub *subscriber, now time.Time) bool {
	return now.Sub(sub.lastSeen) > s.cfg.SubscriptionTimeout
}

// Push hands env to every peer subscribed to its pubsub topic and content
// topic, unless the same message hash was pushed within DedupTTL (nwaku
// pushToPeers). The MessagePush frame is built once, around env.Wire()
// (which is copied once into it, never decoded or re-encoded), and the same
// buffer is queued for every subscriber; Push never blocks. It is safe for
// concurrent use and is the relay dispatcher's handler.
func (s *Service) Push(env *message.Envelope) {
	key := Criterion{env.PubsubTopic(), env.Message().ContentTopic}
	s.mu.RLock()
	n := len(s.index[key])
	s.mu.RUnlock()
	if n == 0 {
		return
	}
	now := s.now()
	s.queue(key, env, now)
	if s.cfg.OnMessage != nil {
		s.cfg.OnMessage(s.now().Sub(now))
	}
}

// queue hands env to the subscribers of key, unless it is a duplicate.
func (s *Service) queue(key Criterion, env *message.Envelope, now time.Time) {
	if s.seen.check(env.Hash(), now) {
		s.c.duplicates.Add(1)
		return
	}
	wire := env.Wire()
	frame := AppendPushFrame(make([]byte, 0, pushFrameSize(key.PubsubTopic, wire)), key.PubsubTopic, wire)
	s.c.messages.Add(1)
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sub := range s.index[key] {
		if s.expired(sub, now) {
			continue
		}
		select {
		case sub.queue <- frame:
		default:
			sub.dropped.Add(1)
			s.c.dropped.Add(1)
		}
	}
}

// writeLoop writes sub's queued frames to its push stream until sub leaves
// or the service closes.
func (s *Service) writeLoop(sub *subscriber) {
	stop := context.AfterFunc(sub.ctx, sub.resetStream)
	defer stop()
	var st network.Stream
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	for {
		select {
		case <-sub.ctx.Done():
			return
		case frame := <-sub.queue:
			st = s.write(sub, st, frame)
		}
	}
}

// write sends one frame on st, opening a push stream first when st is nil.
// It returns the stream to use next time, nil after a failure.
func (s *Service) write(sub *subscriber, st network.Stream, frame []byte) network.Stream {
	p := sub.id
	if st == nil {
		ctx, cancel := context.WithTimeout(sub.ctx, s.cfg.PushTimeout)
		var err error
		st, err = s.h.NewStream(ctx, p, PushProtocolID)
		cancel()
		if err != nil {
			s.c.failed.Add(1)
			s.cfg.Logger.Debug("filter: open push stream", "peer", p, "err", err)
			return nil
		}
		sub.setStream(st)
	}
	st.SetWriteDeadline(time.Now().Add(s.cfg.PushTimeout))
	if _, err := st.Write(frame); err != nil {
		s.c.failed.Add(1)
		s.cfg.Logger.Debug("filter: push", "peer", p, "err", err)
		st.Reset()
		sub.setStream(nil)
		return nil
	}
	s.c.pushed.Add(1)
	_, n := protowire.ConsumeVarint(frame)
	s.c.bytesOut.Add(uint64(len(frame) - max(n, 0)))
	return st
}

// sweepLoop removes expired subscribers every minute (nwaku's maintenance
// interval), or every SubscriptionTimeout if that is shorter.
func (s *Service) sweepLoop() {
	every := min(time.Minute, s.cfg.SubscriptionTimeout)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.life.Context().Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep removes every subscriber whose subscriptions have expired.
func (s *Service) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, sub := range s.peers {
		if s.expired(sub, now) {
			s.removeLocked(id)
			s.c.expired.Add(1)
		}
	}
}

// PeerSubscriptions is one subscribed peer and its criteria, sorted.
type PeerSubscriptions struct {
	Peer     peer.ID
	Criteria []Criterion
}

// Subscriptions returns the live subscriptions, peers sorted by id.
func (s *Service) Subscriptions() []PeerSubscriptions {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	out := make([]PeerSubscriptions, 0, len(s.peers))
	for id, sub := range s.peers {
		if s.expired(sub, now) {
			continue
		}
		ps := PeerSubscriptions{Peer: id}
		for c := range sub.criteria {
			ps.Criteria = append(ps.Criteria, c)
		}
		sort.Slice(ps.Criteria, func(i, j int) bool {
			a, b := ps.Criteria[i], ps.Criteria[j]
			return a.PubsubTopic < b.PubsubTopic || a.PubsubTopic == b.PubsubTopic && a.ContentTopic < b.ContentTopic
		})
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Stats counts the work of a Service.
type Stats struct {
	Requests    map[string]uint64 // requests by type (nwaku waku_filter_requests)
	Refused     uint64            // responses with a status other than 200
	BadRequests uint64            // streams whose request could not be read or decoded
	Subscribers int               // subscribed peers now
	Criteria    int               // distinct (pubsub topic, content topic) pairs now
	Messages    uint64            // messages that matched at least one subscriber
	Duplicates  uint64            // matching messages not pushed again (same hash)
	Pushed      uint64            // push frames written to a stream
	Dropped     uint64            // push frames dropped on a full subscriber queue
	Failed      uint64            // push stream opens or writes that failed
	Expired     uint64            // subscribers removed because they expired
	RateLimited uint64            // requests answered 429 by the rate limit
	// CriteriaBytes is what the criteria of every subscriber are charged
	// now against Config.MaxTotalCriteriaBytes (see CriterionOverhead).
	CriteriaBytes int
	// BytesIn and BytesOut count protocol bytes as nwaku's
	// waku_service_network_bytes does for filter (waku_filter_v2/protocol.nim):
	// in, each subscribe request read within the rate limit (decodable or
	// not); out, each MessagePush written to a subscriber. Lengths are of
	// the protobuf message, without the length prefix.
	BytesIn, BytesOut uint64
}

type counters struct {
	requests                                      [4]atomic.Uint64
	refused, badRequests                          atomic.Uint64
	messages, duplicates, pushed, dropped, failed atomic.Uint64
	expired, limited                              atomic.Uint64
	bytesIn, bytesOut                             atomic.Uint64
}

// Stats returns a snapshot of the counters.
func (s *Service) Stats() Stats {
	st := Stats{Requests: map[string]uint64{}}
	for i := range s.c.requests {
		st.Requests[RequestType(i).String()] = s.c.requests[i].Load()
	}
	st.Refused, st.BadRequests = s.c.refused.Load(), s.c.badRequests.Load()
	st.Messages, st.Duplicates = s.c.messages.Load(), s.c.duplicates.Load()
	st.Pushed, st.Dropped, st.Failed = s.c.pushed.Load(), s.c.dropped.Load(), s.c.failed.Load()
	st.Expired, st.RateLimited = s.c.expired.Load(), s.c.limited.Load()
	st.BytesIn, st.BytesOut = s.c.bytesIn.Load(), s.c.bytesOut.Load()
	s.mu.RLock()
	st.Subscribers, st.Criteria, st.CriteriaBytes = len(s.peers), len(s.index), s.bytes
	s.mu.RUnlock()
	return st
}

// seenHashes remembers pushed message hashes for a TTL, at most size of
// them: the oldest insert is forgotten first.
type seenHashes struct {
	mu   sync.Mutex
	ttl  time.Duration
	at   map[message.Hash]time.Time // when each hash was last pushed or seen
	ring []message.Hash
	next int
}

func newSeenHashes(size int, ttl time.Duration) *seenHashes {
	return &seenHashes{ttl: ttl, at: make(map[message.Hash]time.Time), ring: make([]message.Hash, 0, size)}
}

// check reports whether h was seen within the TTL and records it as seen
// now either way (nwaku's TimedCache.put refreshes the entry).
func (c *seenHashes) check(h message.Hash, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, ok := c.at[h]
	c.at[h] = now
	if ok {
		return now.Sub(last) <= c.ttl
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, h)
		return false
	}
	delete(c.at, c.ring[c.next])
	c.ring[c.next] = h
	c.next = (c.next + 1) % len(c.ring)
	return false
}

// errClosed is returned by client calls after Close.
var errClosed = errors.New("filter: closed")
