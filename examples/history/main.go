// Command history is a store-backed history: it starts a store node and
// an application node on 127.0.0.1, publishes a few messages from the
// application node, then reads them back from the store node with store
// v3 queries, two per page. See examples/README.md.
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/shard"
	"github.com/couriernet/courier/store"
)

const contentTopic = "/courier-example/1/history/plain"

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "courier-history")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The store node relays and archives what it relays.
	var archived atomic.Int64
	storeCfg := config()
	storeCfg.Store, storeCfg.DataDir = true, dir
	storeCfg.OnArchived = func(_ *message.Envelope, err error) {
		if err == nil {
			archived.Add(1)
		}
	}
	storeNode, err := start(ctx, storeCfg)
	if err != nil {
		return err
	}
	defer storeNode.Stop(context.Background())

	// The application node relays only, with the store node as a static peer.
	appCfg := config()
	appCfg.StaticNodes = storeNode.ListenAddresses()[:1]
	app, err := start(ctx, appCfg)
	if err != nil {
		return err
	}
	defer app.Stop(context.Background())

	s, _ := shard.NewRelayShard(appCfg.ClusterID, 0)
	topic := s.PubsubTopic()
	if err := waitFor(ctx, func() bool { return len(app.Relay().TopicPeers(topic)) > 0 }); err != nil {
		return fmt.Errorf("the store node never joined %s: %w", topic, err)
	}
	texts := []string{"one", "two", "three", "four", "five"}
	for _, text := range texts {
		// The archive keeps a relayed message only with a timestamp near its clock.
		msg := &message.Message{Payload: []byte(text), ContentTopic: contentTopic, Timestamp: time.Now().UnixNano()}
		if _, err := app.Publish(ctx, topic, msg); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, func() bool { return archived.Load() == int64(len(texts)) }); err != nil {
		return fmt.Errorf("%d of %d messages archived: %w", archived.Load(), len(texts), err)
	}

	// Read the history back from the store node, oldest first.
	req := &store.Request{PubsubTopic: topic, ContentTopics: []string{contentTopic}, IncludeData: true, Forward: true, Limit: 2}
	for page := 1; ; page++ {
		resp, err := store.Query(ctx, app.Host(), storeNode.Host().ID(), req, nil)
		if err != nil {
			return err
		}
		for _, kv := range resp.Messages {
			fmt.Printf("page %d: %s (hash %s)\n", page, kv.Message.Payload, kv.Hash)
		}
		if resp.Cursor == nil {
			return nil
		}
		req.Cursor = resp.Cursor
	}
}

// config is nwaku's defaults on 127.0.0.1 with free ports and without the
// REST API and metrics, which two nodes in one process would share ports
// for.
func config() node.Config {
	cfg := node.DefaultConfig()
	cfg.ListenAddress, cfg.TCPPort = "127.0.0.1", 0
	cfg.REST, cfg.MetricsServer = false, false
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

func start(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		n.Stop(context.Background())
		return nil, err
	}
	return n, nil
}

// waitFor polls cond every 50 ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
