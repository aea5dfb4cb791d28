package node

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// A REST client that asks for a page of large messages and never reads
// the answer held Stop for ever (Stop with context.Background(); 30 s and
// "context deadline exceeded", exit code 1, from `courier node`). Stop
// now gives requests in flight StopGrace, then closes their connections,
// and returns nil.
func TestStopWithRESTClientNotReading(t *testing.T) {
	if testing.Short() {
		t.Skip("archives 14 MB and holds a REST response")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := shard.RelayShard{}.PubsubTopic()
	n := startTestNode(t, Config{Relay: true, Store: true, REST: true, RESTAddress: "127.0.0.1",
		DBURL: "sqlite://" + filepath.Join(t.TempDir(), "s.sqlite3")})
	for i := range 100 {
		m := &message.Message{Payload: fmt.Appendf(bytes.Repeat([]byte{'x'}, 140_000), "%d", i), ContentTopic: "/app/1/big/proto"}
		if _, err := n.Publish(ctx, topic, m); err != nil {
			t.Fatal(err)
		}
	}
	for {
		res, err := n.Archive().Query(ctx, archive.Query{Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 100 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("archive holds %d of 100", len(res.Messages))
		case <-time.After(20 * time.Millisecond):
		}
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.DialContext(ctx, "tcp", n.HTTPAddrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /store/v3/messages?includeData=true&pageSize=100 HTTP/1.1\r\nHost: x\r\n\r\n") // never read
	time.Sleep(time.Second)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- n.Stop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Stop: %v, want nil", err)
		}
		t.Logf("Stop returned in %v", time.Since(start))
	case <-time.After(stopBound):
		t.Fatalf("Stop still running after %v with a REST client that does not read", stopBound)
	}
}
