package storesync

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/lifecycle"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/storesync/internal/rbsr"
)

// Service errors.
var (
	// ErrNoPeer is returned by a round when no peer serves store-sync.
	ErrNoPeer = errors.New("storesync: no peer serves store-sync")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("storesync: closed")
	// ErrTooManyRoundTrips ends a session that does not converge.
	ErrTooManyRoundTrips = errors.New("storesync: too many round trips")
	// ErrTooManyDifferences ends a session that would pass one of its
	// bounds on differences: the items listed in its replies, the hashes
	// to push, or what this side expects over transfer (see the package
	// doc, "Bounds").
	ErrTooManyDifferences = rbsr.ErrTooManyDifferences
	// ErrMalformed ends a session whose peer sent a payload that does not
	// decode, and rejects a transfer frame that does not.
	ErrMalformed = rbsr.ErrMalformed
	// ErrUnordered ends a session whose peer sent a payload whose ranges
	// do not follow one another in increasing order, or whose item sets
	// are not in increasing order (see the package doc, "Bounds"). It
	// wraps ErrMalformed.
	ErrUnordered = rbsr.ErrUnordered
)

// Archive is what the service needs of an archive: archive.Archive
// satisfies it.
type Archive interface {
	Append(ctx context.Context, env *message.Envelope, done func(error)) error
	Query(ctx context.Context, q archive.Query) (*archive.Result, error)
}

// Service runs store-sync for one node: it keeps the reconciliation index, serves
// both protocols, and syncs with a peer once right after Start and then
// every Config.Interval, the peer it synced with least recently first.
// With a positive Interval it also syncs with each peer it dials,
// RelayJitter after the connection (see Config.Interval).
type Service struct {
	cfg     Config
	host    host.Host
	archive Archive
	storage *rbsr.Storage
	st      counters
	sem     chan struct{} // inbound sessions in progress

	life *lifecycle.Group

	// ours holds the topics synced, for transferred messages in ranges
	// this side said it holds nothing in.
	ours topicSet

	mu       sync.Mutex
	expect   map[peer.ID]*expectation
	expected int // entries of all expectations
	// lastRound is when each peer of the last Round's list was last
	// synced with from this side (SyncWith): at most that many entries.
	lastRound map[peer.ID]time.Time
	// dialRounds are the rounds due toward peers this side dialled, one
	// per peer, at most maxDialRounds.
	dialRounds map[peer.ID]*dialRound
}

// maxDialRounds bounds the rounds due toward dialled peers at once: with
// a long RelayJitter and many peers dialled meanwhile, those past it are
// left to the periodic rounds.
const maxDialRounds = 256

// dialRound is a round due at at toward a peer this side dialled.
type dialRound struct {
	at    time.Time
	timer *time.Timer
}

// New returns a service over h and a; Start mounts it.
func New(h host.Host, a Archive, cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Service{
		cfg: cfg, host: h, archive: a,
		storage: rbsr.NewStorage(cfg.StorageCapacity, cfg.ItemSetThreshold, cfg.Partitions),
		sem:     make(chan struct{}, cfg.MaxInboundSessions),
		life:    lifecycle.New(),
		ours:    newTopicSet(cfg.PubsubTopics, cfg.ContentTopics),
		expect:  map[peer.ID]*expectation{},

		lastRound:  map[peer.ID]time.Time{},
		dialRounds: map[peer.ID]*dialRound{},
	}, nil
}

// Start fills the index with what the archive holds in the sync window,
// mounts both protocols and starts the rounds. ctx bounds the fill only.
func (s *Service) Start(ctx context.Context) error {
	n, err := s.fill(ctx)
	if err != nil {
		return fmt.Errorf("storesync: load index from archive: %w", err)
	}
	var dials event.Subscription
	if s.cfg.Interval > 0 {
		if dials, err = s.host.EventBus().Subscribe(new(event.EvtPeerIdentificationCompleted), eventbus.Name("storesync")); err != nil {
			return fmt.Errorf("storesync: watch connections: %w", err)
		}
	}
	s.cfg.Logger.Info("store-sync started", "items", n, "interval", s.cfg.Interval, "range", s.cfg.Range, "relay_jitter", s.cfg.RelayJitter)
	s.host.SetStreamHandler(ReconciliationID, s.handleReconciliation)
	s.host.SetStreamHandler(TransferID, s.handleTransfer)
	s.life.Go(s.loop)
	if dials != nil && !s.life.Go(func() { s.watchDials(dials) }) {
		dials.Close()
	}
	return nil
}

// Close stops the rounds, unmounts the protocols and waits for the
// sessions in progress to end. Calling it again returns nil.
func (s *Service) Close() error {
	return s.life.Close(func() error {
		s.host.RemoveStreamHandler(ReconciliationID)
		s.host.RemoveStreamHandler(TransferID)
		s.mu.Lock()
		for p, r := range s.dialRounds {
			r.timer.Stop()
			delete(s.dialRounds, p)
		}
		s.mu.Unlock()
		return nil
	})
}

// watchDials schedules a round toward each store-sync peer this side
// dials, once identify has told its protocols, until Close.
func (s *Service) watchDials(sub event.Subscription) {
	defer sub.Close()
	ctx := s.life.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.Out():
			if !ok {
				return
			}
			if e, _ := ev.(event.EvtPeerIdentificationCompleted); s.dialled(e) {
				s.scheduleDialRound(e.Peer)
			}
		}
	}
}

// dialled reports whether e is an outbound connection to a peer that
// serves store-sync and that Config.Peers, when set, offers.
func (s *Service) dialled(e event.EvtPeerIdentificationCompleted) bool {
	if e.Conn == nil || e.Conn.Stat().Direction != network.DirOutbound || !slices.Contains(e.Protocols, ReconciliationID) {
		return false
	}
	return s.cfg.Peers == nil || slices.Contains(s.cfg.Peers(), e.Peer)
}

// scheduleDialRound has a round run toward p RelayJitter from now, when
// what p held at its connection is all old enough to be reconciled: the
// messages published before the connection, which relay could not bring
// across it. A new connection to p before then moves the round to
// RelayJitter after it.
func (s *Service) scheduleDialRound(p peer.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Closed() {
		return
	}
	if r := s.dialRounds[p]; r != nil {
		r.timer.Stop()
	} else if len(s.dialRounds) >= maxDialRounds {
		return
	}
	r := &dialRound{at: time.Now().Add(s.cfg.RelayJitter)}
	r.timer = time.AfterFunc(s.cfg.RelayJitter, func() { s.dialRoundDue(p, r) })
	s.dialRounds[p] = r
}

// dialRoundDue runs r toward p unless p is gone, or a round this side
// started toward p since r fell due already covered what it would.
func (s *Service) dialRoundDue(p peer.ID, r *dialRound) {
	if !s.life.Enter() {
		return
	}
	defer s.life.Leave()
	s.mu.Lock()
	if s.dialRounds[p] != r {
		s.mu.Unlock()
		return
	}
	delete(s.dialRounds, p)
	covered := !s.lastRound[p].Before(r.at)
	s.mu.Unlock()
	if covered || s.host.Network().Connectedness(p) != network.Connected {
		return
	}
	_, _ = s.SyncWith(s.life.Context(), p)
}

// Ingest indexes an envelope the archive has committed; ephemeral messages
// are not. It reuses the envelope's hash (no second hash). Feed it from the
// archive's commits (archive.Config.OnInsert), not from relay delivery: an
// index item the archive does not hold tells peers this node has a
// message it cannot serve, and no round would ever fetch it.
func (s *Service) Ingest(env *message.Envelope) {
	m := env.Message()
	if m.Ephemeral {
		return
	}
	s.storage.Insert(rbsr.SyncID{Time: syncTime(m), Hash: env.Hash()}, env.PubsubTopic(), m.ContentTopic)
}

// syncTime is the time a message is indexed under: its timestamp, or now
// for a message without one (as archives order it).
func syncTime(m *message.Message) int64 {
	if m.Timestamp > 0 {
		return m.Timestamp
	}
	return time.Now().UnixNano()
}

// window returns the bounds a round reconciles: from now - jitter - range
// to now - jitter (nwaku's calculateTimeRange), neither before the Unix
// epoch: the wire carries timestamps unsigned, and a peer refuses one past
// 2^63-1, which a negative bound would be (a jitter and range of the
// flags' largest values reach back past 1970).
func (s *Service) window(now time.Time) rbsr.Bounds {
	end := max(now.UnixNano()-int64(s.cfg.RelayJitter), 0)
	return rbsr.Window(max(end-int64(s.cfg.Range), 0), end)
}

// fill loads the archive's messages of the sync window into the index, in
// pages of archive.MaxPageSize, as nwaku's initFillStorage does. It reads
// every message's bytes (the content topic is in them).
func (s *Service) fill(ctx context.Context) (int, error) {
	if s.archive == nil {
		return 0, nil
	}
	w := s.window(time.Now())
	start, end := w.Lower.Time, time.Now().UnixNano()
	q := archive.Query{StartTime: &start, EndTime: &end, Forward: true, Limit: archive.MaxPageSize, IncludeData: true}
	n := 0
	for {
		res, err := s.archive.Query(ctx, q)
		if err != nil {
			return n, err
		}
		for _, m := range res.Messages {
			// The content topic is in the stored bytes only: one decode per
			// message, at start.
			msg, err := message.Decode(m.Wire, s.cfg.Counters)
			if err != nil {
				return n, fmt.Errorf("stored message %s: %w", m.Hash, err)
			}
			if s.storage.Insert(rbsr.SyncID{Time: m.Timestamp, Hash: m.Hash}, m.PubsubTopic, msg.ContentTopic) {
				n++
			}
		}
		if res.Cursor == nil {
			return n, nil
		}
		q.Cursor = res.Cursor
	}
}

func (s *Service) loop() {
	ctx := s.life.Context()
	// The first round runs as soon as a peer serves store-sync, so a node
	// that restarts catches up at once: until then it is retried every
	// few seconds.
	retry := time.NewTicker(2 * time.Second)
	defer retry.Stop()
	retryC := retry.C
	var periodic <-chan time.Time
	if s.cfg.Interval > 0 {
		t := time.NewTicker(s.cfg.Interval)
		defer t.Stop()
		periodic = t.C
	}
	for {
		if retryC != nil {
			if _, err := s.Round(ctx); !errors.Is(err, ErrNoPeer) {
				retry.Stop()
				retryC = nil
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-retryC:
		case <-periodic:
			s.prune()
			_, _ = s.Round(ctx)
		}
	}
}

// prune drops index items older than the window and expectations past
// their time.
func (s *Service) prune() {
	n := s.storage.Prune(s.window(time.Now()).Lower.Time)
	s.cfg.Logger.Debug("store-sync pruned", "items", n, "left", s.storage.Len())
	s.mu.Lock()
	for p, e := range s.expect {
		if e.expired(time.Now()) {
			s.dropExpect(p, e)
		}
	}
	s.mu.Unlock()
}

// Round syncs with one peer of Config.Peers and returns what the session
// found: the peer this side synced with least recently, one never synced
// with first, ties broken at random. So every peer of a steady list is
// synced with once every len(list) rounds, where nwaku's random pick
// (waku/waku_store_sync/reconciliation.nim) leaves a peer unpicked for
// any number of rounds and a message that only it holds unrepaired.
// Errors: ErrNoPeer, ErrClosed, stream and codec errors.
func (s *Service) Round(ctx context.Context) (Result, error) {
	peers := s.peers()
	if len(peers) == 0 {
		return Result{}, ErrNoPeer
	}
	return s.SyncWith(ctx, s.nextPeer(peers))
}

// nextPeer picks the peer of peers (not empty) synced with least recently
// and forgets the peers not in peers.
func (s *Service) nextPeer(peers []peer.ID) peer.ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	offered := make(map[peer.ID]bool, len(peers))
	var best peer.ID
	var bestAt time.Time
	ties := 0
	for _, p := range peers {
		offered[p] = true
		at := s.lastRound[p]
		switch {
		case ties == 0 || at.Before(bestAt):
			best, bestAt, ties = p, at, 1
		case at.Equal(bestAt):
			ties++
			if rand.IntN(ties) == 0 { // each of the ties alike
				best = p
			}
		}
	}
	for p := range s.lastRound {
		if !offered[p] {
			delete(s.lastRound, p)
		}
	}
	return best
}

func (s *Service) peers() []peer.ID {
	if s.cfg.Peers != nil {
		return s.cfg.Peers()
	}
	var out []peer.ID
	for _, p := range s.host.Network().Peers() {
		if ps, err := s.host.Peerstore().SupportsProtocols(p, ReconciliationID); err == nil && len(ps) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Result sums up one session.
type Result struct {
	Peer       peer.ID
	RoundTrips int // payloads received
	Sent       int // messages pushed to the peer
	// Missing counts the hashes found held by the peer and not here, by
	// name; what the peer holds in ranges where this side holds nothing
	// arrives without being named, and is not counted.
	Missing int
	// Differences counts the hashes found missing on either side, those
	// to push and those the peer pushes (nwaku's diffs).
	Differences int
	Elapsed     time.Duration // reconciliation and transfer
}

// SyncWith runs one session with p as initiator, over the window ending
// RelayJitter before now, then pushes what p lacks.
func (s *Service) SyncWith(ctx context.Context, p peer.ID) (Result, error) {
	if s.life.Context().Err() != nil {
		return Result{}, ErrClosed
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.life.Context(), cancel)
	defer stop()
	s.st.rounds.Add(1)
	s.mu.Lock()
	s.lastRound[p] = start
	s.mu.Unlock()
	str, err := s.host.NewStream(ctx, p, ReconciliationID)
	if err != nil {
		s.st.roundsFailed.Add(1)
		return Result{Peer: p}, fmt.Errorf("storesync: open stream to %s: %w", p, err)
	}
	w := s.window(time.Now())
	first := &rbsr.Payload{PubsubTopics: s.cfg.PubsubTopics, ContentTopics: s.cfg.ContentTopics,
		Ranges: []rbsr.Range{{Bounds: w, Type: rbsr.FingerprintRange, Fingerprint: s.storage.Fingerprint(w, s.cfg.PubsubTopics, s.cfg.ContentTopics)}}}
	res, err := s.session(ctx, str, first)
	res.Elapsed = time.Since(start)
	if err != nil {
		s.st.roundsFailed.Add(1)
		s.cfg.Logger.Warn("store-sync round failed", "peer", p, "err", err)
		return res, err
	}
	s.cfg.Logger.Info("store-sync round done", "peer", p, "round_trips", res.RoundTrips, "sent", res.Sent, "missing", res.Missing, "elapsed", res.Elapsed)
	return res, nil
}

func (s *Service) handleReconciliation(str network.Stream) {
	select {
	case s.sem <- struct{}{}:
	default:
		s.st.sessionsRefused.Add(1)
		_ = str.Reset()
		return
	}
	defer func() { <-s.sem }()
	if !s.life.Enter() {
		_ = str.Reset()
		return
	}
	defer s.life.Leave()
	s.st.served.Add(1)
	if _, err := s.session(s.life.Context(), str, nil); err != nil {
		s.cfg.Logger.Debug("store-sync session failed", "peer", str.Conn().RemotePeer(), "err", err)
	}
}

// session runs the exchange on str: as initiator when first is not nil
// (it is sent first), else as responder. Then it pushes what the peer
// lacks over the transfer protocol.
func (s *Service) session(ctx context.Context, str network.Stream, first *rbsr.Payload) (Result, error) {
	p := str.Conn().RemotePeer()
	ss := &sessionState{res: Result{Peer: p}, exp: s.beginExpect(p), listed: s.cfg.StorageCapacity}
	defer s.endExpect(p, ss.exp)
	r := bufio.NewReader(str)
	err := func() error {
		defer str.Close()
		if first != nil {
			if err := s.write(str, rbsr.AppendPayload(nil, first)); err != nil {
				return err
			}
		}
		for {
			if ss.res.RoundTrips >= s.cfg.MaxRoundTrips {
				return ErrTooManyRoundTrips
			}
			b, err := s.read(str, r)
			if err != nil {
				return err
			}
			ss.res.RoundTrips++
			s.st.roundTrips.Add(1)
			out, end, err := s.answer(ss, b)
			if err != nil {
				return err
			}
			if out != nil {
				if err := s.write(str, out); err != nil {
					return err
				}
			}
			if end {
				return nil
			}
		}
	}()
	if err != nil {
		_ = str.Reset()
		return ss.res, err
	}
	if s.cfg.OnReconciled != nil {
		s.cfg.OnReconciled(ss.res.RoundTrips, ss.res.Differences)
	}
	ss.res.Sent, err = s.push(ctx, p, ss.toSend)
	return ss.res, err
}

// sessionState is what one session has found and may still spend.
type sessionState struct {
	res    Result
	exp    *expectation
	listed int // items the session's replies may still list
	// toSend are the hashes to push, increasing and distinct, at most
	// StorageCapacity.
	toSend []message.Hash
}

// queue adds hashes to what the session pushes, each hash once. It sorts
// hashes in place.
func (ss *sessionState) queue(hashes []message.Hash, limit int) error {
	if len(hashes) == 0 {
		return nil
	}
	if ss.toSend = mergeHashes(ss.toSend, hashes); len(ss.toSend) > limit {
		return fmt.Errorf("%w: over %d messages to push", ErrTooManyDifferences, limit)
	}
	return nil
}

// answer handles one received payload b: it returns the reply to write
// (nil: none; empty: an empty frame) and whether the exchange ends.
func (s *Service) answer(ss *sessionState, b []byte) (reply []byte, end bool, err error) {
	in, err := rbsr.ParsePayload(b)
	if err != nil {
		return nil, true, err
	}
	s.st.ranges.Add(uint64(in.Ranges()))
	if in.SkipsOnly() {
		return nil, true, nil
	}
	if !s.scope(in) {
		// No topic in common: an empty frame, as nwaku answers.
		return []byte{}, true, nil
	}
	out, d, err := s.storage.Process(in, s.cfg.PubsubTopics, s.cfg.ContentTopics, &ss.listed)
	if err != nil {
		return nil, true, err
	}
	if err := s.expectMore(ss.exp, d); err != nil {
		return nil, true, err
	}
	if err := ss.queue(d.ToSend, s.cfg.StorageCapacity); err != nil {
		return nil, true, err
	}
	ss.res.Missing += len(d.ToRecv)
	ss.res.Differences += len(d.ToSend) + len(d.ToRecv)
	s.st.differences.Add(uint64(len(d.ToSend) + len(d.ToRecv)))
	// A reply of at most one byte is an empty payload: it ends the exchange.
	return out, len(out) <= 1, nil
}

// scope narrows in's topics to those both sides sync, as nwaku's
// preProcessPayload does; false when they share none.
func (s *Service) scope(in *rbsr.Received) bool {
	var ok bool
	if in.PubsubTopics, ok = intersect(in.PubsubTopics, s.cfg.PubsubTopics); !ok {
		return false
	}
	in.ContentTopics, ok = intersect(in.ContentTopics, s.cfg.ContentTopics)
	return ok
}

// intersect returns the topics both lists allow (an empty list allows
// all), and false when two non-empty lists share none.
func intersect(theirs, ours []string) ([]string, bool) {
	switch {
	case len(ours) == 0:
		return theirs, true
	case len(theirs) == 0:
		return ours, true
	}
	var out []string
	for _, t := range theirs {
		for _, o := range ours {
			if t == o {
				out = append(out, t)
				break
			}
		}
	}
	return out, len(out) > 0
}

// write sends one length-prefixed frame on a reconciliation stream.
func (s *Service) write(str network.Stream, b []byte) error {
	return s.writeFrame(str, b, &s.st.reconBytesSent)
}

// writeFrame sends one length-prefixed frame and counts its bytes in sent.
func (s *Service) writeFrame(str network.Stream, b []byte, sent *atomic.Uint64) error {
	_ = str.SetWriteDeadline(time.Now().Add(s.cfg.IOTimeout))
	frame := lpframe.Append(make([]byte, 0, len(b)+binary.MaxVarintLen64), b)
	if _, err := str.Write(frame); err != nil {
		return fmt.Errorf("storesync: write: %w", err)
	}
	sent.Add(uint64(len(frame)))
	return nil
}

// read receives one payload frame of at most MaxPayloadSize bytes.
func (s *Service) read(str network.Stream, r *bufio.Reader) ([]byte, error) {
	_ = str.SetReadDeadline(time.Now().Add(s.cfg.IOTimeout))
	b, err := lpframe.Read(r, s.cfg.MaxPayloadSize)
	if err != nil {
		return nil, fmt.Errorf("storesync: read: %w", err)
	}
	s.st.reconBytesReceived.Add(uint64(len(b)))
	return b, nil
}
