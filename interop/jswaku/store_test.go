//go:build unix

package jswaku

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/shard"
)

type storeResult struct {
	Pages [][]string `json:"pages"`
}

// TestStoreQueries: a @waku/sdk light node queries a courier store node
// for 45 messages relayed earlier on a content topic, in pages of 10,
// forward and backward, and receives all of them in order; a hash query
// returns exactly the requested messages.
func TestStoreQueries(t *testing.T) {
	Require(t)
	// The store node n archives what the relay brings it from pub.
	n := StartNode(t, node.Config{Relay: true, Store: true, DataDir: t.TempDir()})
	pub := StartNode(t, node.Config{Relay: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pub.Host().Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	for len(pub.Relay().TopicPeers(topic)) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no relay mesh between the nodes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	const contentTopic, total = "/courier/1/store-interop/proto", 45
	// Within the 20 s of the clock the archive takes relayed messages in.
	base := time.Now().Add(-5 * time.Second).UnixNano()
	var all []string
	var hashes []message.Hash
	for i := range total {
		payload := fmt.Sprintf("message %02d", i)
		env, err := pub.Publish(ctx, topic, &message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: base + int64(i)*int64(time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		all, hashes = append(all, payload), append(hashes, env.Hash())
	}
	// Another content topic on the same shard, which must not show up.
	if _, err := pub.Publish(ctx, topic, &message.Message{Payload: []byte("other"), ContentTopic: "/courier/1/other/proto", Timestamp: base}); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := n.Archive().Query(ctx, archive.Query{Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == total+1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the store node archived %d of %d relayed messages", len(res.Messages), total+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	args := map[string]any{"addr": WebSocketAddr(t, n), "contentTopic": contentTopic, "shard": 0, "pageSize": 10}

	var fwd storeResult
	args["forward"] = true
	Run(t, "store.js", args, &fwd)
	if got := slices.Concat(fwd.Pages...); !slices.Equal(got, all) || len(fwd.Pages) != 5 || len(fwd.Pages[4]) != 5 {
		t.Errorf("forward pages %q, want %d messages in order in pages of 10", fwd.Pages, total)
	}

	var back storeResult
	args["forward"] = false
	Run(t, "store.js", args, &back)
	var got []string
	for _, p := range back.Pages {
		if !slices.IsSorted(p) {
			t.Errorf("backward page %q not in forward order", p)
		}
		got = append(slices.Clone(p), got...)
	}
	if !slices.Equal(got, all) || len(back.Pages) != 5 || !strings.HasSuffix(back.Pages[0][9], "44") || len(back.Pages[4]) != 5 {
		t.Errorf("backward pages %q, want the newest 10 first", back.Pages)
	}

	var byHash storeResult
	want := []int{3, 17, 40}
	var hex []string
	for _, i := range want {
		hex = append(hex, "0x"+hashes[i].String())
	}
	args["forward"], args["hashes"] = true, hex
	Run(t, "store.js", args, &byHash)
	if got := slices.Concat(byHash.Pages...); !slices.Equal(got, []string{all[3], all[17], all[40]}) {
		t.Errorf("hash query gave %q", byHash.Pages)
	}
}
