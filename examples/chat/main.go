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
	"github.com/couriernet/courier/shard"
)

// contentTopic names the application's messages (23/WAKU2-TOPICS:
// /application/version/topic/encoding).
const contentTopic = "/courier-example/1/chat/plain"

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
	cfg := node.DefaultConfig() // relay on, cluster 0, shard 0
	cfg.ListenAddress, cfg.TCPPort = "127.0.0.1", port
	cfg.REST, cfg.MetricsServer = false, false // a chat needs neither, and two would share their ports
	if peer != "" {
		cfg.StaticNodes = []string{peer}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := n.Start(ctx); err != nil {
		return err
	}
	defer n.Stop(context.Background())
	s, _ := shard.NewRelayShard(cfg.ClusterID, 0)
	topic := s.PubsubTopic()

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
				time.Sleep(time.Second) // let the last line leave before stopping
				return nil
			}
			msg := &message.Message{Payload: []byte(mine + line), ContentTopic: contentTopic, Timestamp: time.Now().UnixNano()}
			if _, err := n.Publish(ctx, topic, msg); err != nil {
				fmt.Fprintln(os.Stderr, "publish:", err)
			}
		}
	}
}
