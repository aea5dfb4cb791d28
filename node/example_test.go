package node_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
	"github.com/couriernet/courier/store"
)

// quiet keeps the examples' nodes from logging.
var quiet = slog.New(slog.DiscardHandler)

// A node that relays, embedded in an application: the zero Config with
// relay on, listening on a free port of the loopback interface. It relays
// shard 0 of cluster 0, the default of static sharding.
func Example() {
	n, err := node.New(node.Config{Relay: true, ListenAddress: "127.0.0.1", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Stop(context.Background()) // Stop releases what New took, whether Start ran or not
	if err := n.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("relaying", n.Relay().Topics())
	fmt.Println("reachable at", len(n.ListenAddresses()), "address")
	// Output:
	// relaying [/waku/2/rs/0/0]
	// reachable at 1 address
}

// Two nodes on loopback: b receives with a relay handler, a dials b as a
// static node and publishes once b follows the topic.
func ExampleNode_Publish() {
	const topic, contentTopic = "/waku/2/rs/0/0", "/example/1/chat/proto"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	b, err := node.New(node.Config{Relay: true, ListenAddress: "127.0.0.1", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Stop(context.Background())
	if err := b.Start(ctx); err != nil {
		log.Fatal(err)
	}
	// The handler gets every envelope relayed on b's topics, b's own
	// publishes included, on a goroutine of its own behind a bounded queue.
	received := make(chan *message.Envelope, 1)
	b.Relay().AddHandler("example", func(env *message.Envelope) {
		if env.Message().ContentTopic == contentTopic {
			received <- env
		}
	})

	a, err := node.New(node.Config{Relay: true, ListenAddress: "127.0.0.1", StaticNodes: b.ListenAddresses(), Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Stop(context.Background())
	if err := a.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := a.Relay().WaitTopicPeers(ctx, topic, 1); err != nil {
		log.Fatal(err)
	}
	sent, err := a.Publish(ctx, topic, &message.Message{Payload: []byte("hello"), ContentTopic: contentTopic})
	if err != nil {
		log.Fatal(err)
	}
	select {
	case env := <-received:
		fmt.Printf("b received %q on %s\n", env.Message().Payload, env.PubsubTopic())
		fmt.Println("same message hash:", env.Hash() == sent.Hash())
	case <-ctx.Done():
		log.Fatal("nothing received")
	}
	// Output:
	// b received "hello" on /waku/2/rs/0/0
	// same message hash: true
}

// A store node archives what it relays; an application node publishes
// three messages and, once the store node has committed them (OnArchived),
// reads them back with store v3 queries, two per page, oldest first.
func Example_store() {
	const topic, contentTopic = "/waku/2/rs/0/0", "/example/1/history/proto"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "node-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	archived := make(chan error, 3)
	storeNode, err := node.New(node.Config{
		Relay: true, Store: true, DataDir: dir, // the embedded archive in dir/archive
		OnArchived:    func(_ *message.Envelope, err error) { archived <- err },
		ListenAddress: "127.0.0.1", Logger: quiet,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer storeNode.Stop(context.Background())
	if err := storeNode.Start(ctx); err != nil {
		log.Fatal(err)
	}

	// StoreNode names the store peer that StorePeer returns.
	addr := storeNode.ListenAddresses()[0]
	app, err := node.New(node.Config{Relay: true, StaticNodes: []string{addr}, StoreNode: addr, ListenAddress: "127.0.0.1", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer app.Stop(context.Background())
	if err := app.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := app.Relay().WaitTopicPeers(ctx, topic, 1); err != nil {
		log.Fatal(err)
	}
	texts := []string{"one", "two", "three"}
	for _, text := range texts {
		// Publish sets the timestamp; the archive keeps a relayed message
		// only with one within 20 s of its clock.
		if _, err := app.Publish(ctx, topic, &message.Message{Payload: []byte(text), ContentTopic: contentTopic}); err != nil {
			log.Fatal(err)
		}
	}
	for range texts {
		select {
		case err := <-archived:
			if err != nil {
				log.Fatal(err)
			}
		case <-ctx.Done():
			log.Fatal("not archived")
		}
	}

	req := &store.Request{PubsubTopic: topic, ContentTopics: []string{contentTopic}, IncludeData: true, Forward: true, Limit: 2}
	for page := 1; ; page++ {
		resp, err := store.Query(ctx, app.Host(), app.StorePeer(), req, app.Counters())
		if err != nil {
			log.Fatal(err)
		}
		for _, kv := range resp.Messages {
			fmt.Printf("page %d: %s\n", page, kv.Message.Payload)
		}
		if resp.Cursor == nil {
			break
		}
		req.Cursor = resp.Cursor
	}
	// Output:
	// page 1: one
	// page 1: two
	// page 2: three
}

// A light client relays nothing: it subscribes with filter at a service
// node and publishes there with lightpush. The service node relays the
// pushed message to its relay peer and pushes it back to the light
// client's filter subscription.
func Example_lightClient() {
	const topic, contentTopic = "/waku/2/rs/0/0", "/example/1/light/proto"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := func(cfg node.Config) *node.Node {
		cfg.ListenAddress, cfg.Logger = "127.0.0.1", quiet
		n, err := node.New(cfg)
		if err != nil {
			log.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			log.Fatal(err)
		}
		return n
	}

	service := start(node.Config{Relay: true, Filter: true, Lightpush: true})
	defer service.Stop(context.Background())
	relayPeer := start(node.Config{Relay: true, StaticNodes: service.ListenAddresses()})
	defer relayPeer.Stop(context.Background())
	relayed := make(chan *message.Envelope, 1)
	relayPeer.Relay().AddHandler("example", func(env *message.Envelope) { relayed <- env })
	if err := service.Relay().WaitTopicPeers(ctx, topic, 1); err != nil {
		log.Fatal(err) // a lightpush with no relay peer is refused
	}

	// The light client dials out only; FilterNode and LightpushNode name
	// its service node.
	pushed := make(chan *message.Envelope, 1)
	addr := service.ListenAddresses()[0]
	light := start(node.Config{
		NoListen: true, FilterNode: addr, LightpushNode: addr,
		OnFilterPush: func(env *message.Envelope, from peer.ID) { pushed <- env },
	})
	defer light.Stop(context.Background())

	fc, p := light.FilterClient()
	if err := fc.Subscribe(ctx, p, topic, contentTopic); err != nil {
		log.Fatal(err)
	}
	lc, p := light.LightpushClient()
	resp, err := lc.Push(ctx, p, topic, &message.Message{Payload: []byte("hi from a light client"), ContentTopic: contentTopic})
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("lightpush relayed to", resp.RelayPeerCount, "peer")
	for _, ch := range []chan *message.Envelope{relayed, pushed} {
		select {
		case env := <-ch:
			fmt.Printf("%q\n", env.Message().Payload)
		case <-ctx.Done():
			log.Fatal("not delivered")
		}
	}
	fmt.Println("the light client relays:", light.Relay() != nil)
	// Output:
	// lightpush relayed to 1 peer
	// "hi from a light client"
	// "hi from a light client"
	// the light client relays: false
}
