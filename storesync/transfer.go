package storesync

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/storesync/internal/rbsr"
)

// maxTransferFrame bounds a WakuMessageAndTopic frame: the largest message
// plus its topic and tags.
const maxTransferFrame = message.MaxSize + maxTopicLen + 16

// maxIdleExpectations bounds the expectations kept for peers with no
// session in progress; past it the one closest to its end is dropped.
const maxIdleExpectations = 64

// expectation is what sessions with one peer found missing here: the
// hashes named, and ranges this side said it holds nothing in (the peer
// then sends what it has there without naming it). Both are kept sorted,
// so that a transferred message is checked in O(log entries).
type expectation struct {
	hashes   []message.Hash // increasing, distinct
	empty    []rbsr.Bounds  // increasing, disjoint
	sessions int            // sessions in progress
	until    time.Time      // accepted until then once sessions is 0
}

// size is the entries e holds, what the bounds on expectations count.
func (e *expectation) size() int { return len(e.hashes) + len(e.empty) }

func (e *expectation) expired(now time.Time) bool { return e.sessions == 0 && now.After(e.until) }

// add merges d's findings into e. It sorts d.ToRecv in place.
func (e *expectation) add(d rbsr.Diff) {
	if len(d.ToRecv) > 0 {
		e.hashes = mergeHashes(e.hashes, d.ToRecv)
	}
	if len(d.Empty) > 0 {
		e.empty = mergeBounds(e.empty, d.Empty)
	}
}

// accepts reports whether a message with id and topics was found missing:
// named, or within a range said empty here with topics this side syncs.
func (e *expectation) accepts(id rbsr.SyncID, inScope bool) bool {
	if _, ok := slices.BinarySearchFunc(e.hashes, id.Hash, compareHashes); ok {
		return true
	}
	if !inScope {
		return false
	}
	i := sort.Search(len(e.empty), func(i int) bool { return e.empty[i].Upper.Compare(id) >= 0 })
	return i < len(e.empty) && e.empty[i].Lower.Compare(id) <= 0
}

func compareHashes(a, b message.Hash) int { return bytes.Compare(a[:], b[:]) }

// mergeHashes adds b's hashes to a (increasing, distinct) and returns it,
// merging in place from the end: O(len(b) log len(a) + len(a)) time, and
// no allocation beyond a's growth (doubling). It sorts b in place and may
// return it (see own) when a is empty.
func mergeHashes(a, b []message.Hash) []message.Hash {
	slices.SortFunc(b, compareHashes)
	b = slices.Compact(b)
	if len(a) == 0 {
		return own(b)
	}
	fresh := b[:0]
	for _, h := range b {
		if _, ok := slices.BinarySearchFunc(a, h, compareHashes); !ok {
			fresh = append(fresh, h)
		}
	}
	n := len(a)
	a = rbsr.Grow(a, len(fresh))[:n+len(fresh)]
	i, j := n-1, len(fresh)-1
	for k := len(a) - 1; j >= 0; k-- {
		if i >= 0 && compareHashes(a[i], fresh[j]) > 0 {
			a[k], i = a[i], i-1
		} else {
			a[k], j = fresh[j], j-1
		}
	}
	return a
}

// mergeBounds returns the union of a (increasing, disjoint) and b
// (increasing by lower bound, as process lists them) as increasing
// disjoint ranges, in O(len(a) + len(b)) time and no allocation beyond
// a's growth (doubling); it may return b (see own) when a is empty. Ranges
// that overlap or share a bound become one.
func mergeBounds(a, b []rbsr.Bounds) []rbsr.Bounds {
	if len(a) == 0 {
		return own(coalesce(b))
	}
	// Merge from the end into a's tail, then join overlaps from the front.
	n := len(a)
	a = rbsr.Grow(a, len(b))[:n+len(b)]
	i, j := n-1, len(b)-1
	for k := len(a) - 1; j >= 0; k-- {
		if i >= 0 && a[i].Lower.Compare(b[j].Lower) > 0 {
			a[k], i = a[i], i-1
		} else {
			a[k], j = b[j], j-1
		}
	}
	return coalesce(a)
}

// coalesce joins, in place, the ranges of rs (increasing by lower bound)
// that overlap or share a bound.
func coalesce(rs []rbsr.Bounds) []rbsr.Bounds {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Lower.Compare(out[n-1].Upper) <= 0 {
			if r.Upper.Compare(out[n-1].Upper) > 0 {
				out[n-1].Upper = r.Upper
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// own returns s to be kept: s itself, or a copy when s holds less than
// half its array, so that what is kept never pins a larger array.
func own[T any](s []T) []T {
	if cap(s) > 2*len(s) {
		return slices.Clone(s)
	}
	return slices.Clip(s)
}

// topicSet is a pair of topic lists as sets; an empty list allows all.
type topicSet struct {
	pubsub, content map[string]struct{}
}

func newTopicSet(pubsubTopics, contentTopics []string) topicSet {
	set := func(list []string) map[string]struct{} {
		if len(list) == 0 {
			return nil
		}
		m := make(map[string]struct{}, len(list))
		for _, t := range list {
			m[t] = struct{}{}
		}
		return m
	}
	return topicSet{pubsub: set(pubsubTopics), content: set(contentTopics)}
}

func (t topicSet) has(pubsubTopic, contentTopic string) bool {
	in := func(m map[string]struct{}, x string) bool {
		_, ok := m[x]
		return m == nil || ok
	}
	return in(t.pubsub, pubsubTopic) && in(t.content, contentTopic)
}

func (s *Service) beginExpect(p peer.ID) *expectation {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.expect[p]
	if e == nil {
		e = &expectation{}
		s.expect[p] = e
	}
	e.sessions++
	return e
}

// endExpect ends a session's use of e: an empty expectation is dropped,
// and the idle ones kept are at most maxIdleExpectations.
func (s *Service) endExpect(p peer.ID, e *expectation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.sessions--
	e.until = time.Now().Add(s.cfg.ExpectTTL)
	if e.sessions == 0 && e.size() == 0 {
		s.dropExpect(p, e)
	}
	idle := 0
	for _, e := range s.expect {
		if e.sessions == 0 {
			idle++
		}
	}
	for ; idle > maxIdleExpectations && s.evictIdle(); idle-- {
	}
}

// expectMore adds what one payload found missing here to e, within the
// bounds: Config.MaxMissing entries for e, (MaxInboundSessions+1) times
// that for all peers, idle expectations dropped first to make room. Past
// them it fails with ErrTooManyDifferences and adds nothing.
func (s *Service) expectMore(e *expectation, d rbsr.Diff) error {
	n := len(d.ToRecv) + len(d.Empty)
	if n == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.size()+n > s.cfg.MaxMissing {
		return fmt.Errorf("%w: over %d messages found missing from one peer", ErrTooManyDifferences, s.cfg.MaxMissing)
	}
	limit := (s.cfg.MaxInboundSessions + 1) * s.cfg.MaxMissing
	for s.expected+n > limit && s.evictIdle() {
	}
	if s.expected+n > limit {
		return fmt.Errorf("%w: over %d messages found missing from all peers", ErrTooManyDifferences, limit)
	}
	before := e.size()
	e.add(d)
	s.expected += e.size() - before
	return nil
}

// evictIdle drops the idle expectation closest to its end, false when
// none is idle. s.mu is held.
func (s *Service) evictIdle() bool {
	var victim peer.ID
	var ve *expectation
	for p, e := range s.expect {
		if e.sessions == 0 && (ve == nil || e.until.Before(ve.until)) {
			victim, ve = p, e
		}
	}
	if ve == nil {
		return false
	}
	s.dropExpect(victim, ve)
	return true
}

// dropExpect forgets p's expectation e. s.mu is held.
func (s *Service) dropExpect(p peer.ID, e *expectation) {
	s.expected -= e.size()
	delete(s.expect, p)
}

// check reports whether a transferred message from p is expected, and
// keeps p's expectation alive while messages arrive.
func (s *Service) check(p peer.ID, id rbsr.SyncID, pubsubTopic, contentTopic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.expect[p]
	if e == nil {
		return false
	}
	if now := time.Now(); e.expired(now) {
		s.dropExpect(p, e)
		return false
	}
	if !e.accepts(id, s.ours.has(pubsubTopic, contentTopic)) {
		return false
	}
	if e.sessions == 0 {
		e.until = time.Now().Add(s.cfg.ExpectTTL)
	}
	return true
}

// push sends p the messages of hashes, read from the archive in pages.
// It returns how many it sent.
func (s *Service) push(ctx context.Context, p peer.ID, hashes []message.Hash) (int, error) {
	if len(hashes) == 0 || s.archive == nil {
		return 0, nil
	}
	str, err := s.host.NewStream(ctx, p, TransferID)
	if err != nil {
		return 0, fmt.Errorf("storesync: open transfer stream to %s: %w", p, err)
	}
	sent := 0
	for len(hashes) > 0 {
		n := min(len(hashes), archive.MaxPageSize)
		res, err := s.archive.Query(ctx, archive.Query{Hashes: hashes[:n], IncludeData: true, Limit: archive.MaxPageSize})
		hashes = hashes[n:]
		if err != nil {
			_ = str.Reset()
			return sent, fmt.Errorf("storesync: read messages to send: %w", err)
		}
		for _, m := range res.Messages {
			if err := s.writeFrame(str, appendMessageAndTopic(nil, m.PubsubTopic, m.Wire), &s.st.transferBytesSent); err != nil {
				_ = str.Reset()
				return sent, err
			}
			sent++
			s.st.messagesSent.Add(1)
		}
	}
	return sent, str.Close()
}

// handleTransfer reads pushed messages until the peer closes the stream.
// Each is decoded once and hashed once; one whose hash the reconciliation
// with that peer did not find missing here is rejected, counted, and the
// stream goes on.
func (s *Service) handleTransfer(str network.Stream) {
	if !s.life.Enter() {
		_ = str.Reset()
		return
	}
	defer s.life.Leave()
	defer str.Close()
	p := str.Conn().RemotePeer()
	r := bufio.NewReader(str)
	for {
		_ = str.SetReadDeadline(time.Now().Add(s.cfg.IOTimeout))
		b, err := lpframe.Read(r, maxTransferFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.cfg.Logger.Debug("store-sync transfer ended", "peer", p, "err", err)
				_ = str.Reset()
			}
			return
		}
		s.st.transferBytesReceived.Add(uint64(len(b)))
		if err := s.accept(p, b); err != nil {
			s.st.rejected.Add(1)
			s.cfg.Logger.Debug("store-sync transfer rejected", "peer", p, "err", err)
		}
	}
}

// errUnexpected marks a transferred message no reconciliation asked for:
// it is rejected and counted.
var errUnexpected = errors.New("storesync: message not found missing by reconciliation")

// accept decodes a transfer frame and archives its message when expected.
// b is a fresh buffer: the envelope keeps it.
func (s *Service) accept(p peer.ID, b []byte) error {
	topic, wire, err := decodeMessageAndTopic(b)
	if err != nil {
		return err
	}
	m, err := message.Decode(wire, s.cfg.Counters)
	if err != nil {
		return fmt.Errorf("storesync: transferred message: %w", err)
	}
	env := message.NewEnvelope(m, topic, wire, s.cfg.Counters)
	id := rbsr.SyncID{Time: syncTime(m), Hash: env.Hash()}
	if m.Ephemeral || !s.check(p, id, topic, m.ContentTopic) {
		return fmt.Errorf("%w: %s", errUnexpected, id.Hash)
	}
	s.st.messagesReceived.Add(1)
	if s.storage.Contains(id) || s.archive == nil {
		return nil
	}
	done := func(err error) {
		if err == nil {
			s.storage.Insert(id, topic, m.ContentTopic)
		}
	}
	return s.archive.Append(s.life.Context(), env, done)
}
