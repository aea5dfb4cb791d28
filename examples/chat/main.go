// Command chat is a chat over Waku relay: run it twice, the second time
// with -peer set to the address the first prints, and every line typed in
// one is printed by the other. See examples/README.md.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node"
)

// contentTopic names the application's messages (23/WAKU2-TOPICS:
// /application/version/topic/encoding); topic is the pubsub topic of
// DefaultConfig's shard.
const (
	contentTopic = "/courier-example/1/chat/plain"
	topic        = "/waku/2/rs/0/0"
)

func main() {
	nick := flag.String("nick", "anon", "the name your lines are signed with")
	port := flag.Int("port", 0, "libp2p TCP port on 127.0.0.1 (0: a free one)")
	peer := flag.String("peer", "", "multiaddr with /p2p/<id> of another chat node to connect to")
	flag.Parse()
	if err := run(*nick, *port, *peer); err != nil {
		log.Fatal(err)
	}
}

func run(nick string, port int, peer string) error {
	cfg := node.DefaultConfig() // relay on, shard 0 of cluster 0, no REST API, no metrics server
	cfg.ListenAddress, cfg.TCPPort = "127.0.0.1", port
	if peer != "" {
		cfg.StaticNodes = []string{peer}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	defer n.Stop(context.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := n.Start(ctx); err != nil {
		return err
	}

	// Every relayed message reaches the handler, ours included (a local
	// publish is dispatched too): print the others' lines of this chat.
	mine := nick + ": "
	n.Relay().AddHandler("chat", func(env *message.Envelope) {
		m := env.Message()
		if m.ContentTopic == contentTopic && !strings.HasPrefix(string(m.Payload), mine) {
			fmt.Printf("%s\n", m.Payload)
		}
	})
	fmt.Printf("chatting on %s as %s; others join with -peer %s\n", topic, nick, n.ListenAddresses()[0])
	if peer != "" {
		if err := n.Relay().WaitTopicPeers(ctx, topic, 1); err != nil {
			return fmt.Errorf("waiting for %s: %w", peer, err)
		}
		fmt.Println("connected")
	}

	lines := make(chan string)
	go func() {
		defer close(lines)
		for in := bufio.NewScanner(os.Stdin); in.Scan(); {
			lines <- in.Text()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				// gossipsub sends in the background and has no flush: give
				// the last line a moment to leave before Stop closes the
				// connections.
				time.Sleep(time.Second)
				return nil
			}
			if len(n.Relay().TopicPeers(topic)) == 0 {
				fmt.Fprintln(os.Stderr, "(nobody is listening yet; not sent)")
				continue
			}
			msg := &message.Message{Payload: []byte(mine + line), ContentTopic: contentTopic}
			if _, err := n.Publish(ctx, topic, msg); err != nil {
				fmt.Fprintln(os.Stderr, "publish:", err)
			}
		}
	}
}
