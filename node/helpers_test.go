package node

import (
	"context"
	"log/slog"
	"testing"
)

// startTestNode starts a node of cfg on 127.0.0.1, logging nowhere unless
// cfg has a Logger, and stops it when the test ends.
func startTestNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	cfg.ListenAddress = "127.0.0.1"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(context.Background()) })
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n
}
