package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/shard"
)

// TestQueryCommand runs courier query against an in-process store node,
// over libp2p (--peer) and through its REST API, in both directions, by
// hashes, and stopping after --pages.
func TestQueryCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.New(node.Config{ListenAddress: "127.0.0.1", Relay: true, Store: true, DataDir: t.TempDir(),
		REST: true, RESTAddress: "127.0.0.1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	topic := shard.RelayShard{}.PubsubTopic()
	const total = 23
	base := time.Now().UnixNano()
	var hashes []message.Hash
	for i := range total {
		env, err := n.Publish(ctx, topic, &message.Message{Payload: []byte(fmt.Sprint("m", i)), ContentTopic: "/app/1/chat/proto",
			Timestamp: base + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, env.Hash())
	}
	for {
		res, err := n.Archive().Query(ctx, archive.Query{Limit: archive.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == total {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	run := func(o queryOptions, libp2p bool) []string {
		t.Helper()
		var out bytes.Buffer
		o.out, o.timeout, o.includeData = &out, 30*time.Second, true
		if o.pageSize == 0 {
			o.pageSize = 5
		}
		var err error
		if libp2p {
			o.peer = n.ListenAddresses()[0]
			err = o.viaLibp2p(ctx)
		} else {
			o.rest = "http://" + n.HTTPAddrs()[0]
			err = o.viaREST(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var kv rest.StoreKeyValue
			if err := json.Unmarshal([]byte(line), &kv); err != nil || kv.Message == nil || kv.PubsubTopic != topic {
				t.Fatalf("line %q: %v", line, err)
			}
			got = append(got, string(kv.Message.Payload))
		}
		return got
	}
	var all []string
	for i := range total {
		all = append(all, fmt.Sprint("m", i))
	}
	for _, libp2p := range []bool{true, false} {
		if got := run(queryOptions{forward: true, pubsubTopic: topic}, libp2p); strings.Join(got, " ") != strings.Join(all, " ") {
			t.Errorf("libp2p=%v forward: %v", libp2p, got)
		}
		// Backward: pages newest first, each in forward order.
		got := run(queryOptions{contentTopics: listFlag{"/app/1/chat/proto"}}, libp2p)
		if len(got) != total || strings.Join(got[:5], " ") != "m18 m19 m20 m21 m22" || strings.Join(got[20:], " ") != "m0 m1 m2" {
			t.Errorf("libp2p=%v backward: %v", libp2p, got)
		}
		if got := run(queryOptions{forward: true, hashes: listFlag{hashes[4].String(), "0x" + hashes[9].String()}}, libp2p); strings.Join(got, " ") != "m4 m9" {
			t.Errorf("libp2p=%v hashes: %v", libp2p, got)
		}
		if got := run(queryOptions{forward: true, pages: 2, startTime: base + 2}, libp2p); strings.Join(got, " ") != strings.Join(all[2:12], " ") {
			t.Errorf("libp2p=%v two pages from m2: %v", libp2p, got)
		}
	}
}
