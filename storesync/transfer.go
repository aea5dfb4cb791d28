package storesync

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/message"
)

// maxTransferFrame bounds a WakuMessageAndTopic frame: the largest message
// plus its topic and tags.
const maxTransferFrame = message.MaxSize + maxTopicLen + 16

// expectation is what sessions with one peer found missing here: the
// hashes named, and ranges this side said it holds nothing in (the peer
// then sends what it has there without naming it).
type expectation struct {
	hashes   map[message.Hash]struct{}
	empty    []scopedBounds
	sessions int       // sessions in progress
	until    time.Time // accepted until then once sessions is 0
}

type scopedBounds struct {
	Bounds
	pubsub, content []string
}

func (e *expectation) add(d Diff, pubsubTopics, contentTopics []string) {
	for _, h := range d.ToRecv {
		e.hashes[h] = struct{}{}
	}
	for _, b := range d.Empty {
		e.empty = append(e.empty, scopedBounds{Bounds: b, pubsub: pubsubTopics, content: contentTopics})
	}
}

// accepts reports whether a message with id and topics was found missing.
func (e *expectation) accepts(id SyncID, pubsubTopic, contentTopic string) bool {
	if _, ok := e.hashes[id.Hash]; ok {
		return true
	}
	for _, b := range e.empty {
		if id.Compare(b.Lower) >= 0 && id.Compare(b.Upper) <= 0 && listed(b.pubsub, pubsubTopic) && listed(b.content, contentTopic) {
			return true
		}
	}
	return false
}

func listed(list []string, t string) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

func (s *Service) beginExpect(p peer.ID) *expectation {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.expect[p]
	if e == nil {
		e = &expectation{hashes: map[message.Hash]struct{}{}}
		s.expect[p] = e
	}
	e.sessions++
	return e
}

func (s *Service) endExpect(p peer.ID, e *expectation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.sessions--
	e.until = time.Now().Add(s.cfg.ExpectTTL)
}

// check reports whether a transferred message from p is expected, and
// keeps p's expectation alive while messages arrive.
func (s *Service) check(p peer.ID, id SyncID, pubsubTopic, contentTopic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.expect[p]
	if e == nil || (e.sessions == 0 && time.Now().After(e.until)) {
		return false
	}
	if !e.accepts(id, pubsubTopic, contentTopic) {
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
			if err := s.writeFrame(str, AppendMessageAndTopic(nil, m.PubsubTopic, m.Wire), &s.st.transferBytesSent); err != nil {
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
	if !s.enter() {
		_ = str.Reset()
		return
	}
	defer s.wg.Done()
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

// Transfer errors, counted as rejections.
var (
	// ErrUnexpected marks a transferred message no reconciliation asked for.
	ErrUnexpected = errors.New("storesync: message not found missing by reconciliation")
)

// accept decodes a transfer frame and archives its message when expected.
// b is a fresh buffer: the envelope keeps it.
func (s *Service) accept(p peer.ID, b []byte) error {
	topic, wire, err := DecodeMessageAndTopic(b)
	if err != nil {
		return err
	}
	m, err := message.Decode(wire, s.cfg.Counters)
	if err != nil {
		return fmt.Errorf("storesync: transferred message: %w", err)
	}
	env := message.NewEnvelope(m, topic, wire, s.cfg.Counters)
	id := SyncID{Time: syncTime(m), Hash: env.Hash()}
	if m.Ephemeral || !s.check(p, id, topic, m.ContentTopic) {
		return fmt.Errorf("%w: %s", ErrUnexpected, id.Hash)
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
	return s.archive.Append(s.ctx, env, done)
}
