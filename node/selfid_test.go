package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/couriernet/courier/node/state"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/discovery"
)

// sameKey is a node key two tests' nodes share (any scalar below the
// curve order).
const sameKey = "4f3edf983ac636a65a842ce7c78d9aa706d3b113bce9c46f30d7d21715b23b1d"

// TestStaticNodeWithOwnID: a static node with the node's own peer id
// (another node started with the same --nodekey) is refused by New with
// a reason, instead of being re-dialled for ever with "dial to self".
func TestStaticNodeWithOwnID(t *testing.T) {
	a := startTestNode(t, Config{Relay: true, NodeKey: sameKey})
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, NodeKey: sameKey, StaticNodes: a.ListenAddresses()[:1],
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		n.Stop(context.Background())
		t.Fatal("New accepted a static node with its own peer id")
	}
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--staticnode "+a.ListenAddresses()[0]+" has this node's own peer id") ||
		!strings.Contains(err.Error(), "same node key") {
		t.Fatalf("New: %v", err)
	}
}

// TestPeerWithOwnIDWarns: a discovered peer with the node's own peer id at
// another address is warned of once (then logged at debug level); the
// node's own addresses, as discovery may hand back its own record, are
// not.
func TestPeerWithOwnIDWarns(t *testing.T) {
	var warnings atomic.Int64
	n := startTestNode(t, Config{Relay: true, NodeKey: sameKey,
		Logger: slog.New(levelCounter{level: slog.LevelWarn, match: "a peer presents this node's own peer id", n: &warnings})})
	own := n.Host().Addrs()
	n.peers.Add(discovery.Peer{ID: n.Host().ID(), Addrs: own}, state.Discv5)
	if got := warnings.Load(); got != 0 {
		t.Fatalf("the node's own record: %d warnings, want none", got)
	}
	other := ma.StringCast("/ip4/192.0.2.7/tcp/60000")
	n.peers.Add(discovery.Peer{ID: n.Host().ID(), Addrs: []ma.Multiaddr{other}}, state.PeerExchange)
	n.peers.Add(discovery.Peer{ID: n.Host().ID(), Addrs: []ma.Multiaddr{other}}, state.PeerExchange)
	if got := warnings.Load(); got != 1 {
		t.Fatalf("a peer with the node's id at %s: %d warnings, want 1", other, got)
	}
	if _, known := n.peers.Learned(n.Host().ID()); known {
		t.Fatal("the node keeps itself as a peer")
	}
}

// levelCounter counts the records at level whose message starts with match.
type levelCounter struct {
	level slog.Level
	match string
	n     *atomic.Int64
}

func (h levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h levelCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level == h.level && strings.HasPrefix(r.Message, h.match) {
		h.n.Add(1)
	}
	return nil
}
func (h levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levelCounter) WithGroup(string) slog.Handler      { return h }
