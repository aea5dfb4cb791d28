package node

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/freeport"
	"github.com/couriernet/courier/internal/testwait"
)

// levelsHandler records the level of each record whose message contains
// match.
type levelsHandler struct {
	match  string
	mu     *sync.Mutex
	levels *[]slog.Level
}

func (h levelsHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h levelsHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.mu.Lock()
		*h.levels = append(*h.levels, r.Level)
		h.mu.Unlock()
	}
	return nil
}
func (h levelsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levelsHandler) WithGroup(string) slog.Handler      { return h }

// TestStaticNodeUnreachableWarns: a --staticnode nobody listens at is
// logged at warning level on the first failed dial ("static node
// unreachable; retrying"), so an operator sees it at the default level;
// the dials that keep failing after it are at debug level, so the log is
// not flooded.
func TestStaticNodeUnreachableWarns(t *testing.T) {
	port := freeport.Get(t, 1)[0] // nobody listens there
	key, _, _ := crypto.GenerateSecp256k1Key(nil)
	id, _ := peer.IDFromPrivateKey(key)
	static := "/ip4/127.0.0.1/tcp/" + strconv.Itoa(port) + "/p2p/" + id.String()

	var mu sync.Mutex
	var warned, failed []slog.Level
	logger := slog.New(multiHandler{levelsHandler{"static node unreachable", &mu, &warned}, levelsHandler{"static node dial failed", &mu, &failed}})
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, StaticNodes: []string{static},
		StaticRedialMin: time.Millisecond, StaticRedialMax: 5 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { n.Stop(ctx) })
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "two more failed dials", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(failed) >= 2
	})
	n.Stop(ctx)
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || warned[0] != slog.LevelWarn {
		t.Fatalf("first failure logged at %v, want once at WARN", warned)
	}
	for _, l := range failed {
		if l != slog.LevelDebug {
			t.Fatalf("later failures logged at %v, want DEBUG", failed)
		}
	}
}

// multiHandler hands each record to every handler.
type multiHandler []slog.Handler

func (m multiHandler) Enabled(context.Context, slog.Level) bool { return true }
func (m multiHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range m {
		h.Handle(ctx, r)
	}
	return nil
}
func (m multiHandler) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m multiHandler) WithGroup(string) slog.Handler      { return m }
