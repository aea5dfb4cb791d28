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
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/store"
)

// The application's content topic (23/WAKU2-TOPICS) and the pubsub topic
// of DefaultConfig's shard.
const (
	contentTopic = "/courier-example/1/history/plain"
	topic        = "/waku/2/rs/0/0"
)

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
	texts := []string{"one", "two", "three", "four", "five"}

	// The store node relays and archives what it relays; OnArchived
	// reports each commit.
	archived := make(chan error, len(texts))
	storeCfg := config()
	storeCfg.Store, storeCfg.DataDir = true, dir
	storeCfg.OnArchived = func(_ *message.Envelope, err error) {
		select {
		case archived <- err:
		default: // more than ours: not waited for
		}
	}
	storeNode, err := start(ctx, storeCfg)
	if err != nil {
		return err
	}
	defer storeNode.Stop(context.Background())

	// The application node relays only, with the store node as a static
	// peer and as the store node its queries go to (StorePeer).
	addr := storeNode.ListenAddresses()[0]
	appCfg := config()
	appCfg.StaticNodes, appCfg.StoreNode = []string{addr}, addr
	app, err := start(ctx, appCfg)
	if err != nil {
		return err
	}
	defer app.Stop(context.Background())

	if err := app.Relay().WaitTopicPeers(ctx, topic, 1); err != nil {
		return fmt.Errorf("the store node never joined %s: %w", topic, err)
	}
	for _, text := range texts {
		// Publish sets the timestamp: the archive keeps a relayed message
		// only with one near its clock.
		if _, err := app.Publish(ctx, topic, &message.Message{Payload: []byte(text), ContentTopic: contentTopic}); err != nil {
			return err
		}
	}
	for i := range texts {
		select {
		case err := <-archived:
			if err != nil {
				return fmt.Errorf("archive: %w", err)
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages archived: %w", i, len(texts), ctx.Err())
		}
	}

	// Read the history back from the store node, oldest first.
	req := &store.Request{PubsubTopic: topic, ContentTopics: []string{contentTopic}, IncludeData: true, Forward: true, Limit: 2}
	for page := 1; ; page++ {
		resp, err := store.Query(ctx, app.Host(), app.StorePeer(), req, app.Counters())
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

// config is nwaku's defaults (relay on, shard 0 of cluster 0, no REST API
// and no metrics server) on 127.0.0.1 with a free port, logging warnings
// only.
func config() node.Config {
	cfg := node.DefaultConfig()
	cfg.ListenAddress, cfg.TCPPort = "127.0.0.1", 0
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

// start starts a node of cfg; on an error it releases what New took.
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
