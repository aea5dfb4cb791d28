package node

import (
	"context"
	"errors"
	"testing"
)

// TestStopTwice: Stop runs once; a second Stop returns nil (it returned
// "file already closed" from the data directory's lock), with or without
// a Start before it.
func TestStopTwice(t *testing.T) {
	for _, start := range []bool{true, false} {
		n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if start {
			if err := n.Start(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := n.Stop(ctx); err != nil {
			t.Fatalf("first Stop (started %v): %v", start, err)
		}
		if err := n.Stop(ctx); err != nil {
			t.Fatalf("second Stop (started %v): %v", start, err)
		}
	}
}

// TestStartOnce: a second Start, and a Start after Stop, return ErrStarted.
func TestStartOnce(t *testing.T) {
	ctx := context.Background()
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{ListenAddress: "127.0.0.1", Relay: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); !errors.Is(err, ErrStarted) {
		t.Fatalf("Start after Stop = %v, want ErrStarted", err)
	}
}

// TestStartHonoursContext: Start with a context that has ended returns its
// error and subscribes nothing; Stop still releases the node.
func TestStartHonoursContext(t *testing.T) {
	n, err := New(Config{ListenAddress: "127.0.0.1", Relay: true, REST: true, RESTAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Start(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context = %v, want context.Canceled", err)
	}
	if got := n.Relay().Topics(); len(got) != 0 {
		t.Fatalf("Start with a cancelled context subscribed %v", got)
	}
	if got := n.HTTPAddrs(); len(got) != 0 {
		t.Fatalf("Start with a cancelled context serves HTTP on %v", got)
	}
	if err := n.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
