package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/shard"
)

func shardIDs(from, to int) []uint16 {
	var out []uint16
	for s := from; s < to; s++ {
		out = append(out, uint16(s))
	}
	return out
}

// TestManyShardsPeering: a node relaying shards 0..299 (1249 bytes of
// metadata with both shard fields, 477 with field 3 alone) is checked and
// kept by a node that has it as static node, both ways.
func TestManyShardsPeering(t *testing.T) {
	a := startTestNode(t, Config{Relay: true, Shards: shardIDs(0, 300)})
	b := startTestNode(t, Config{Relay: true, StaticNodes: a.ListenAddresses()[:1]})
	testwait.Until(t, "b's metadata check of a to pass", func() bool {
		_, ok := b.Metadata().Peer(a.Host().ID())
		return ok
	})
	testwait.Until(t, "a's metadata check of b to pass", func() bool {
		_, ok := a.Metadata().Peer(b.Host().ID())
		return ok
	})
	info, _ := b.Metadata().Peer(a.Host().ID())
	if len(info.Shards) != 300 || b.Host().Network().Connectedness(a.Host().ID()) != network.Connected {
		t.Fatalf("b sees %d shards of a, connectedness %v; want 300, connected", len(info.Shards), b.Host().Network().Connectedness(a.Host().ID()))
	}
	if st := b.Metadata().Stats(); st.RequestFailed != 0 {
		t.Fatalf("b's metadata stats %+v: a request failed", st)
	}
}

// TestTooManyShardsRefused: New refuses a shard set whose metadata no peer
// reads, whether it comes from --shard, --pubsub-topic or autosharding's
// default (every shard of the network), and accepts the largest that fits.
func TestTooManyShardsRefused(t *testing.T) {
	var topics []string
	for _, s := range shardIDs(0, 600) {
		topics = append(topics, shard.RelayShard{ShardID: s}.PubsubTopic())
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"--shard 0..573", Config{Relay: true, Shards: shardIDs(0, 574)}},
		{"--pubsub-topic 0..599", Config{Relay: true, PubsubTopics: topics}},
		{"--num-shards-in-network 1024", Config{Relay: true, NumShardsInNetwork: 1024}},
		{"no relay, --shard 0..1023", Config{Shards: shardIDs(0, 1024)}},
	} {
		c.cfg.ListenAddress = "127.0.0.1"
		n, err := New(c.cfg)
		if err == nil {
			n.Stop(t.Context())
			t.Errorf("%s: New accepted it", c.name)
			continue
		}
		if !errors.Is(err, ErrConfig) || !errors.Is(err, ErrTooManyShards) || !errors.Is(err, metadata.ErrTooLarge) ||
			!strings.Contains(err.Error(), "peers read at most 1024") {
			t.Errorf("%s: New error %q, want ErrConfig, ErrTooManyShards and the reason", c.name, err)
		}
	}
	n := startTestNode(t, Config{Relay: true, Shards: shardIDs(0, 573)})
	if got := len(n.shards()); got != 573 {
		t.Fatalf("relaying %d shards, want 573", got)
	}
}

// TestRESTSubscriptionTooManyShards: a REST subscription that would make the
// shard set too large is refused whole (400, the client's fault, saying
// why), and the node stays peerable; one that fits is made.
func TestRESTSubscriptionTooManyShards(t *testing.T) {
	n := startTestNode(t, Config{Relay: true, Shards: shardIDs(0, 300), REST: true, RESTAddress: "127.0.0.1"})
	body := func(from, to int) string {
		var ts []string
		for _, s := range shardIDs(from, to) {
			ts = append(ts, fmt.Sprintf("%q", shard.RelayShard{ShardID: s}.PubsubTopic()))
		}
		return "[" + strings.Join(ts, ",") + "]"
	}
	code, text := restCall(t, n, "POST", "/relay/v1/subscriptions", body(300, 700))
	if code != 400 || !strings.HasPrefix(text, "Failed to subscribe: node: too many shards for the metadata protocol: relaying 700 shards") ||
		!strings.Contains(text, "peers read at most 1024") {
		t.Fatalf("subscribing 400 more shards: %d %q", code, text)
	}
	if got := len(n.shards()); got != 300 {
		t.Fatalf("after the refused subscription the node relays %d shards, want 300", got)
	}
	if code, text := restCall(t, n, "POST", "/relay/v1/subscriptions", body(300, 400)); code != 200 {
		t.Fatalf("subscribing 100 more shards: %d %q", code, text)
	}
	if got := len(n.shards()); got != 400 {
		t.Fatalf("relaying %d shards, want 400", got)
	}
	peer := startTestNode(t, Config{Relay: true, StaticNodes: n.ListenAddresses()[:1]})
	testwait.Until(t, "the metadata check of the node with 400 shards to pass", func() bool {
		_, ok := peer.Metadata().Peer(n.Host().ID())
		return ok
	})
}
