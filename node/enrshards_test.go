package node

import (
	"slices"
	"testing"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/relay"
)

// TestENRFollowsRelayShards: when the relay's shards change (a REST
// subscription to another shard, then its removal), the node's ENR is
// re-signed with the sequence number raised and the shards it relays, as
// nwaku's discv5 updates its record (waku/discovery/waku_discv5.nim
// subscriptionsListener); a subscription that adds no shard leaves the
// record alone.
func TestENRFollowsRelayShards(t *testing.T) {
	n := startTestNode(t, Config{Relay: true, ClusterID: 16, Shards: []uint16{0}})
	record := func() ([]uint16, uint64) {
		t.Helper()
		en, err := discovery.ParseENR(n.ENR())
		if err != nil {
			t.Fatal(err)
		}
		p, err := discovery.DecodePeer(en)
		if err != nil {
			t.Fatal(err)
		}
		if p.Shards.ClusterID != 16 {
			t.Fatalf("record's cluster %d", p.Shards.ClusterID)
		}
		return p.Shards.Shards, en.Seq()
	}
	shards0, seq0 := record()
	if !slices.Equal(shards0, []uint16{0}) {
		t.Fatalf("record at start: shards %v", shards0)
	}
	if err := n.subscribeREST([]string{"/waku/2/rs/16/5"}); err != nil {
		t.Fatal(err)
	}
	if shards, seq := record(); !slices.Equal(shards, []uint16{0, 5}) || seq != seq0+1 {
		t.Fatalf("after subscribing to shard 5: shards %v seq %d, want [0 5] seq %d", shards, seq, seq0+1)
	}
	if err := n.subscribeREST([]string{"/waku/2/rs/16/0"}); err != nil {
		t.Fatal(err)
	}
	if shards, seq := record(); !slices.Equal(shards, []uint16{0, 5}) || seq != seq0+1 {
		t.Fatalf("a subscription adding no shard: shards %v seq %d, want [0 5] seq %d", shards, seq, seq0+1)
	}
	if err := n.relay.Unsubscribe("/waku/2/rs/16/5", relay.OwnerREST); err != nil {
		t.Fatal(err)
	}
	if shards, seq := record(); !slices.Equal(shards, []uint16{0}) || seq != seq0+2 {
		t.Fatalf("after unsubscribing from shard 5: shards %v seq %d, want [0] seq %d", shards, seq, seq0+2)
	}
}
