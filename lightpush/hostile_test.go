package lightpush_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// TestHostilePushesJoinNoTopic pushes over the wire, from one client to a
// service whose relay has no peers, 200 messages on distinct 200 kB pubsub
// topic names (refused 400), 200 on another cluster's shards (421) and
// one on each shard of the service's own cluster (505, no relay peer).
// None may leave a joined topic behind in the relay.
func TestHostilePushesJoinNoTopic(t *testing.T) {
	ha, hc := newHost(t), newHost(t)
	ra, err := relay.New(ha, relay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	svc, err := lightpush.New(ha, lightpush.Config{Relay: ra})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	client := lightpush.NewClient(hc, lightpush.ClientConfig{})
	connect(t, hc, ha)
	msg := &message.Message{Payload: []byte("x"), ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano()}
	heapBefore := heapInUse()
	pad := strings.Repeat("x", 200_000)
	push := func(topic string, want uint32) {
		t.Helper()
		resp, err := client.Push(ctx(t), ha.ID(), topic, msg)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("push on a %d-byte topic: %d %q %v, want %d", len(topic), resp.StatusCode, resp.StatusDesc, err, want)
		}
	}
	for i := range 200 {
		push(fmt.Sprintf("/hostile/%d/%s", i, pad), lightpush.StatusBadRequest)
	}
	for i := range 200 {
		push(fmt.Sprintf("/waku/2/rs/%d/0", i+1), lightpush.StatusUnsupportedPubsubTopic)
	}
	for s := range 1024 {
		push(fmt.Sprintf("/waku/2/rs/0/%d", s), lightpush.StatusNoPeersToRelay)
	}
	joined := len(ra.Stats().Topics)
	t.Logf("after 1424 refused pushes: %d topics joined, heap in use %+d bytes", joined, int64(heapInUse())-int64(heapBefore))
	if joined != 0 {
		t.Fatalf("%d topics joined by refused pushes", joined)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
