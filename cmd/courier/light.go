package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/lightpush"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/rest"
)

// lightHost is a libp2p host of the command's own, connected to a service
// node, for the light-client protocols.
type lightHost struct {
	h    host.Host
	md   *metadata.Service
	peer peer.ID
}

// dialService starts a host that does not listen (pushes come back on the
// connection it opens), answers metadata with clusterID, as Waku nodes
// drop peers that do not, and connects to the service node at addr.
func dialService(ctx context.Context, flagName, addr string, clusterID int, timeout time.Duration) (*lightHost, error) {
	a, err := ma.NewMultiaddr(addr)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--%s: %w", flagName, err)}
	}
	pi, err := peer.AddrInfoFromP2pAddr(a)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--%s needs /p2p/<peer id>: %w", flagName, err)}
	}
	if clusterID < 0 || clusterID > 65535 {
		return nil, &usageError{errors.New("--cluster-id must be 0..65535")}
	}
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		return nil, err
	}
	md, err := metadata.New(h, metadata.Config{ClusterID: uint16(clusterID), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		h.Close()
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	err = h.Connect(dctx, *pi)
	cancel()
	if err != nil {
		md.Close()
		h.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &lightHost{h: h, md: md, peer: pi.ID}, nil
}

func (l *lightHost) close() {
	l.md.Close()
	l.h.Close()
}

// publishLightpush sends msg with lightpush v3 through the node at addr and
// prints the message hash (with a pubsub topic; hashText) or OK, and the relay peers
// the node reached on stderr.
func publishLightpush(addr, pubsubTopic string, clusterID int, msg *message.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := dialService(ctx, "lightpush", addr, clusterID, 15*time.Second)
	if err != nil {
		return err
	}
	defer l.close()
	resp, err := lightpush.NewClient(l.h, lightpush.ClientConfig{}).Push(ctx, l.peer, pubsubTopic, msg)
	if err != nil {
		return err
	}
	if err := resp.Err(); err != nil {
		return err
	}
	if resp.RelayPeerCount == 0 { // nwaku's client reads this as NO_PEERS_TO_RELAY
		return &lightpush.StatusError{Code: lightpush.StatusNoPeersToRelay, Desc: "the node relayed to no peer"}
	}
	if pubsubTopic != "" {
		fmt.Println(hashText(msg.Hash(pubsubTopic, nil)))
	} else {
		fmt.Println("OK")
	}
	fmt.Fprintf(os.Stderr, "relay peers reached by the lightpush node: %d\n", resp.RelayPeerCount)
	return nil
}

// subscribeFilter subscribes at the filter node at addr and prints every
// pushed message as one JSON line (the REST API's message shape), pinging
// every minute so that the subscription does not expire (a failed ping,
// as after the filter node restarts, subscribes again), until count
// messages are printed or ctx ends; it unsubscribes on the way out.
func subscribeFilter(ctx context.Context, addr, pubsubTopic, contentTopic string, clusterID, count int) error {
	l, err := dialService(ctx, "filter", addr, clusterID, 15*time.Second)
	if err != nil {
		return err
	}
	defer l.close()
	got := make(chan *message.Envelope, 64)
	c := filter.NewClient(l.h, filter.ClientConfig{Logger: slog.New(slog.DiscardHandler), Handler: func(env *message.Envelope, _ peer.ID) {
		select {
		case got <- env:
		case <-ctx.Done():
		}
	}})
	defer c.Close()
	if err := c.Subscribe(ctx, l.peer, pubsubTopic, contentTopic); err != nil {
		return err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.UnsubscribeAll(uctx, l.peer)
	}()
	ping := time.NewTicker(time.Minute)
	defer ping.Stop()
	seen := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if err := c.Ping(ctx, l.peer); err != nil {
				// The filter node restarted or dropped the subscription:
				// subscribe again, and say that pushes may have been missed.
				fmt.Fprintf(os.Stderr, "filter ping: %v; subscribing again (messages pushed meanwhile are missed)\n", err)
				if serr := c.Subscribe(ctx, l.peer, pubsubTopic, contentTopic); serr != nil {
					return fmt.Errorf("filter ping: %w; subscribing again: %w", err, serr)
				}
			}
		case env := <-got:
			line, err := json.Marshal(rest.NewMessage(env.Message()))
			if err != nil {
				return err
			}
			fmt.Println(string(line))
			if seen++; count > 0 && seen >= count {
				return nil
			}
		}
	}
}
