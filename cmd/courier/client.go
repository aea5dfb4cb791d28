package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/rest"
)

var httpClient = &http.Client{Timeout: 15 * time.Second}

// restCall sends body (nil for none) and returns the response body, or an
// error with the status and text the node answered.
func restCall(method, base, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(out)))
	}
	return out, nil
}

func runPublish(args []string) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, "usage: courier publish [flags] PAYLOAD\n\nPublishes one message through a node's REST API or, with --lightpush, as a light client\nwith lightpush v3 through the node at that multiaddr. With --pubsub-topic it prints the\nmessage hash (0x and 64 hex digits, as the REST store API gives it); without, the node picks the shard by autosharding and it prints OK.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	base := fs.String("rest", "http://127.0.0.1:8645", "the node's REST API address")
	topic := fs.String("pubsub-topic", "", "pubsub topic (default: autosharding of the content topic)")
	ct := fs.String("content-topic", "/courier/1/chat/proto", "content topic")
	lp := fs.String("lightpush", "", "publish with lightpush through the node at this multiaddr (with /p2p/<id>) instead of REST")
	cluster := fs.Int("cluster-id", 0, "with --lightpush: the cluster id to answer the node's metadata check with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want exactly one PAYLOAD argument")
	}
	msg := &message.Message{Payload: []byte(fs.Arg(0)), ContentTopic: *ct, Timestamp: time.Now().UnixNano()}
	if *lp != "" {
		return publishLightpush(*lp, *topic, *cluster, msg)
	}
	path := "/relay/v1/auto/messages"
	if *topic != "" {
		path = "/relay/v1/messages/" + url.PathEscape(*topic)
	}
	if _, err := restCall(http.MethodPost, *base, path, rest.NewMessage(msg)); err != nil {
		return err
	}
	if *topic != "" {
		fmt.Println(hashText(msg.Hash(*topic, nil)))
	} else {
		fmt.Println("OK")
	}
	return nil
}

// hashText is a message hash as courier publish prints it: 0x and 64
// lowercase hex digits, as the REST store API answers messageHash (nwaku
// waku/rest_api/endpoint/store/types.nim) and courier query --hash takes it.
func hashText(h message.Hash) string { return "0x" + h.String() }

func runSubscribe(args []string) error {
	fs := flag.NewFlagSet("subscribe", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, "usage: courier subscribe [flags]\n\nSubscribes a node to a pubsub topic (or, with --content-topic, to a content topic by\nautosharding) through its REST API and prints every message received as one JSON line.\nWith --filter it is a light client instead: it subscribes to --pubsub-topic and\n--content-topic with filter v2 at the node at that multiaddr and prints every push.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	base := fs.String("rest", "http://127.0.0.1:8645", "the node's REST API address")
	topic := fs.String("pubsub-topic", "/waku/2/rs/0/0", "pubsub topic")
	ct := fs.String("content-topic", "", "content topic (uses the auto endpoints instead of --pubsub-topic)")
	count := fs.Int("count", 0, "exit once this many messages are printed (0: run until interrupted); every message of the last poll is printed")
	interval := fs.Duration("interval", 500*time.Millisecond, "how often to poll the node")
	filterNode := fs.String("filter", "", "subscribe with filter v2 at the node at this multiaddr (with /p2p/<id>) instead of REST; needs --content-topic")
	cluster := fs.Int("cluster-id", 0, "with --filter: the cluster id to answer the node's metadata check with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *filterNode != "" {
		if *ct == "" {
			return &usageError{errors.New("--filter needs --content-topic")}
		}
		if *count < 0 {
			return &usageError{fmt.Errorf("--count %d must not be negative", *count)}
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return subscribeFilter(ctx, *filterNode, *topic, *ct, *cluster, *count)
	}
	if *interval <= 0 {
		return fmt.Errorf("--interval %v must be positive", *interval)
	}
	if *count < 0 {
		return fmt.Errorf("--count %d must not be negative", *count)
	}
	subPath, getPath, list := "/relay/v1/subscriptions", "/relay/v1/messages/"+url.PathEscape(*topic), []string{*topic}
	if *ct != "" {
		subPath, getPath, list = "/relay/v1/auto/subscriptions", "/relay/v1/auto/messages/"+url.PathEscape(*ct), []string{*ct}
	}
	if _, err := restCall(http.MethodPost, *base, subPath, list); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	seen := 0
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		body, err := restCall(http.MethodGet, *base, getPath, nil)
		if err != nil {
			return err
		}
		var msgs []json.RawMessage
		if err := json.Unmarshal(body, &msgs); err != nil {
			return fmt.Errorf("node answered %q: %w", body, err)
		}
		for _, m := range msgs {
			fmt.Println(string(m)) // all of them: the node's cache is drained
		}
		if seen += len(msgs); *count > 0 && seen >= *count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
