package libnet_test

import (
	"context"
	"errors"
	"testing"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/libnet"
)

// TestCloseTwice: the Close rule of every service of the module: a second
// Close, and one made while the first runs, returns nil; calls after it
// fail with ErrClosed.
func TestCloseTwice(t *testing.T) {
	e, err := libnet.New(libnet.Config{ListenAddr: "127.0.0.1:0", SenderID: "a", Lane: libnet.LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- e.Close() }()
	}
	for range 2 {
		if err := testwait.Recv(t, errs, "Close"); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatalf("third Close: %v", err)
	}
	if err := e.Tell(context.Background(), "127.0.0.1:1", libnet.Msg{Route: "r", Payload: []byte("x")}); !errors.Is(err, libnet.ErrClosed) {
		t.Fatalf("Tell after Close: %v, want ErrClosed", err)
	}
}
