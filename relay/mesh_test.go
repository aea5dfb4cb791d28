package relay

import (
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestMeshTracker replays the RawTracer events gossipsub emits
// (go-libp2p-pubsub v0.19 gossipsub.go: Join grafts, handleGraft and
// heartbeat graft, handlePrune and heartbeat prune, Leave traces Leave then
// a Prune per mesh peer, OnClosedOutboundStream drops a peer everywhere)
// and checks the mesh after each.
func TestMeshTracker(t *testing.T) {
	const a, b = "/waku/2/rs/1/0", "/waku/2/rs/1/5"
	p1, p2, p3 := peer.ID("peer-1"), peer.ID("peer-2"), peer.ID("peer-3")
	m := newMeshTracker()
	steps := []struct {
		name  string
		event func()
		a, b  []peer.ID
	}{
		{"nothing yet", func() {}, nil, nil},
		{"join grafts two", func() { m.Join(a); m.Graft(p2, a); m.Graft(p1, a) }, []peer.ID{p1, p2}, nil},
		{"graft again is one entry", func() { m.Graft(p1, a) }, []peer.ID{p1, p2}, nil},
		{"graft on another topic", func() { m.Graft(p1, b); m.Graft(p3, b) }, []peer.ID{p1, p2}, []peer.ID{p1, p3}},
		{"prune one", func() { m.Prune(p2, a) }, []peer.ID{p1}, []peer.ID{p1, p3}},
		{"prune a peer not in the mesh", func() { m.Prune(p3, a) }, []peer.ID{p1}, []peer.ID{p1, p3}},
		{"peer gone leaves every mesh", func() { m.OnClosedOutboundStream(p1) }, nil, []peer.ID{p3}},
		{"leave, then its prunes", func() { m.Leave(b); m.Prune(p3, b) }, nil, nil},
		{"join again", func() { m.Join(b); m.Graft(p2, b) }, nil, []peer.ID{p2}},
	}
	for _, s := range steps {
		s.event()
		if got := m.peers(a); !slices.Equal(got, s.a) {
			t.Errorf("%s: mesh of %s = %v, want %v", s.name, a, got, s.a)
		}
		if got := m.peers(b); !slices.Equal(got, s.b) {
			t.Errorf("%s: mesh of %s = %v, want %v", s.name, b, got, s.b)
		}
	}
}

func TestScoreBoard(t *testing.T) {
	var s scoreBoard
	if _, ok := s.get("p"); ok {
		t.Fatal("score before any snapshot")
	}
	s.set(map[peer.ID]float64{"p": -12.5})
	if v, ok := s.get("p"); !ok || v != -12.5 {
		t.Fatalf("score %v %v, want -12.5", v, ok)
	}
	s.set(map[peer.ID]float64{})
	if _, ok := s.get("p"); ok {
		t.Fatal("score kept after a snapshot without the peer")
	}
}
