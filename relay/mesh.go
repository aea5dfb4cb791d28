package relay

import (
	"slices"
	"sync"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// meshTracker keeps gossipsub's mesh, the peers each pubsub topic's
// messages are forwarded to in full, as gossipsub's RawTracer events report
// it: Graft adds a peer to a topic's mesh (our GRAFT on join or heartbeat,
// or one we accepted), Prune removes it (its PRUNE, or ours), Leave drops
// the topic's mesh, and OnClosedOutboundStream drops the peer from every
// mesh, as go-libp2p-pubsub v0.19 gossipsub.go does on each. go-libp2p-pubsub
// keeps its mesh private; this copy is what MeshPeers answers from, as
// nwaku's getPubSubPeersInMesh reads nim-libp2p's GossipSub.mesh
// (waku/waku_relay/protocol.nim).
type meshTracker struct {
	noTrace
	mu   sync.Mutex
	mesh map[string]map[peer.ID]struct{}
}

var _ pubsub.RawTracer = (*meshTracker)(nil)

func newMeshTracker() *meshTracker {
	return &meshTracker{mesh: map[string]map[peer.ID]struct{}{}}
}

func (m *meshTracker) Graft(p peer.ID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	peers := m.mesh[topic]
	if peers == nil {
		peers = map[peer.ID]struct{}{}
		m.mesh[topic] = peers
	}
	peers[p] = struct{}{}
}

func (m *meshTracker) Prune(p peer.ID, topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	peers := m.mesh[topic]
	delete(peers, p)
	if len(peers) == 0 {
		delete(m.mesh, topic)
	}
}

func (m *meshTracker) Leave(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mesh, topic)
}

func (m *meshTracker) OnClosedOutboundStream(p peer.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for topic, peers := range m.mesh {
		delete(peers, p)
		if len(peers) == 0 {
			delete(m.mesh, topic)
		}
	}
}

// peers returns the mesh of topic sorted by peer id; nil when empty.
func (m *meshTracker) peers(topic string) []peer.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []peer.ID
	for p := range m.mesh[topic] {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// scoreBoard keeps the latest gossipsub score of each peer, as the score
// inspector hands it over (pubsub.WithPeerScoreInspect, once a heartbeat).
type scoreBoard struct {
	mu     sync.Mutex
	scores map[peer.ID]float64
}

// set replaces the scores with a new snapshot; the map is kept.
func (s *scoreBoard) set(scores map[peer.ID]float64) {
	s.mu.Lock()
	s.scores = scores
	s.mu.Unlock()
}

// inspectScores is the relay's score inspector, called once a heartbeat
// from a goroutine of its own (go-libp2p-pubsub score.go
// inspectScoresSimple). It keeps the scores and closes the connection of
// every connected peer whose score is below the graylist threshold, as
// nwaku does (waku_relay/protocol.nim sets disconnectBadPeers; nim-libp2p
// gossipsub disconnects such peers in its heartbeat): go-libp2p-pubsub
// alone only ignores their RPCs, so a flooding peer would stay connected.
// It closes as well the connection of every peer whose RPCs gossipsub
// refused as graylisted since the last inspection (graylistCounter): its
// score was below the threshold then, and a decay (every 12 s, halving
// its invalid messages) can lift it back above before this inspection
// sees it, where nim-libp2p refuses RPCs and disconnects on the same
// heartbeat's score. The peer may dial again; its score is kept for
// RetainScore, so it is cut again once it is below the threshold.
func (r *Relay) inspectScores(scores map[peer.ID]float64) {
	r.scores.set(scores)
	refused := r.gray.takeRefused()
	for p, score := range scores {
		if score >= graylistThreshold && refused[p] == 0 || r.host.Network().Connectedness(p) != network.Connected {
			continue
		}
		r.c.badPeers.Add(1)
		r.cfg.Logger.Info("disconnecting peer below the gossipsub graylist threshold",
			"peer", p, "score", score, "threshold", graylistThreshold, "graylisted_messages", refused[p])
		if err := r.host.Network().ClosePeer(p); err != nil {
			r.cfg.Logger.Debug("closing bad peer", "peer", p, "err", err)
		}
	}
}

func (s *scoreBoard) get(p peer.ID) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.scores[p]
	return v, ok
}

// MeshPeers returns the peers in gossipsub's mesh for pubsubTopic, sorted
// by peer id; nil when there are none or the relay has not joined the
// topic. They are the peers a relayed message is forwarded to in full
// (nwaku GET /admin/v1/peers/mesh, waku/rest_api/endpoint/admin/handlers.nim),
// a subset of TopicPeers.
func (r *Relay) MeshPeers(pubsubTopic string) []peer.ID { return r.mesh.peers(pubsubTopic) }

// PeerScore returns p's gossipsub peer score (nwaku's scoring, see
// nwakuPeerScore) as computed at the last heartbeat, so at most one
// heartbeat (1 s by default) old; ok is false for a peer gossipsub keeps no
// score for (never seen, or gone longer than RetainScore).
func (r *Relay) PeerScore(p peer.ID) (score float64, ok bool) { return r.scores.get(p) }
