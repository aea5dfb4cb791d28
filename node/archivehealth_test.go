package node

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/shard"
)

// enospc is the error a segment write on a full disk gives.
var enospc = fmt.Errorf("archive: segment: %w", &os.PathError{Op: "write", Path: "/data/archive/00000001.seg", Err: syscall.ENOSPC})

// TestHealthStoreArchiveFailing: while the archive's writes fail, /health
// reports Store NOT_READY with the error (nwaku's shape, a desc beside the
// state); the next message the archive commits makes it READY again.
func TestHealthStoreArchiveFailing(t *testing.T) {
	n := startTestNode(t, Config{Relay: true, Store: true, DataDir: t.TempDir()})
	storeEntry := regexp.MustCompile(`\{"Store":"[A-Z_]+"(,"desc":"[^"]*")?\}`)
	if got := storeEntry.FindString(getHealth(t, n)); got != `{"Store":"READY"}` {
		t.Fatalf("Store before any failure: %s", got)
	}
	n.store.health.Failed(enospc, 2) // what the archive calls on a failed batch
	want := `{"Store":"NOT_READY","desc":"Archive writes failing since ` + n.store.health.Since().UTC().Format(time.RFC3339) +
		` (2 messages not stored), disk full: archive: segment: write /data/archive/00000001.seg: no space left on device"}`
	if got := storeEntry.FindString(getHealth(t, n)); got != want {
		t.Fatalf("Store while writes fail:\n got %s\nwant %s", got, want)
	}
	ctx := context.Background()
	msg := &message.Message{Payload: []byte("after"), ContentTopic: "/t/1/a/proto", Timestamp: time.Now().UnixNano()}
	env := message.NewEnvelope(msg, shard.RelayShard{}.PubsubTopic(), msg.Encode(nil), nil)
	done := make(chan error, 1)
	if err := n.Archive().Append(ctx, env, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := storeEntry.FindString(getHealth(t, n)); got != `{"Store":"READY"}` {
		t.Fatalf("Store after a commit: %s", got)
	}
}
