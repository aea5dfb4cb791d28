package relay_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/relay"
)

// Two relays on loopback follow one pubsub topic; a publishes a message
// and b's handler receives it, decoded once by b's validator, with the
// same deterministic message hash.
func Example() {
	const topic = "/waku/2/rs/1/0"
	ha, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer ha.Close()
	hb, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer hb.Close()
	a, err := relay.New(ha, relay.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := relay.New(hb, relay.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	received := make(chan *message.Envelope, 1)
	b.AddHandler("example", func(env *message.Envelope) { received <- env })
	for _, r := range []*relay.Relay{a, b} {
		if err := r.Subscribe(topic, "example"); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ha.Connect(ctx, peer.AddrInfo{ID: hb.ID(), Addrs: hb.Addrs()}); err != nil {
		log.Fatal(err)
	}
	if err := a.WaitTopicPeers(ctx, topic, 1); err != nil { // until gossipsub has told a that b follows the topic
		log.Fatal("b never joined the topic: ", err)
	}

	sent, err := a.Publish(ctx, topic, &message.Message{Payload: []byte("hello"), ContentTopic: "/example/1/chat/proto"})
	if err != nil {
		log.Fatal(err)
	}
	select {
	case env := <-received:
		m := env.Message()
		fmt.Printf("b received %q on %s, content topic %s\n", m.Payload, env.PubsubTopic(), m.ContentTopic)
		fmt.Println("same message hash:", env.Hash() == sent.Hash())
	case <-ctx.Done():
		log.Fatal("nothing received")
	}
	// Output:
	// b received "hello" on /waku/2/rs/1/0, content topic /example/1/chat/proto
	// same message hash: true
}
