package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/node"
)

// filterSubscribers are libp2p hosts in the process subscribed at a node's
// filter service. Each healthy one reads its push stream into a buffer it
// reuses and counts every push as one event of its message, so that the
// process's allocations are the service node's, not F receive buffers. A
// stalled one subscribes and never reads its push stream.
type filterSubscribers struct {
	hosts []host.Host
	hold  chan struct{} // closed to release the stalled subscriber
	wg    sync.WaitGroup
}

// startFilterSubscribers connects f healthy subscribers (and one stalled
// one when stalled is set) to n and subscribes them to the workload's
// topics. t is read on every push.
func startFilterSubscribers(ctx context.Context, n *node.Node, cfg Config, f int, stalled bool, t **tracker) (*filterSubscribers, error) {
	s := &filterSubscribers{hold: make(chan struct{})}
	total := f
	if stalled {
		total++
	}
	for i := range total {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("bench: filter subscriber host: %w", err)
		}
		s.hosts = append(s.hosts, h)
		// The node drops peers that do not answer metadata, as nwaku does.
		if _, err := metadata.New(h, metadata.Config{Logger: quietLogger}); err != nil {
			s.close()
			return nil, err
		}
		client := filter.NewClient(h, filter.ClientConfig{Logger: quietLogger})
		// Replace the client's push handler by the harness's own.
		if i < f {
			h.SetStreamHandler(filter.PushProtocolID, func(st network.Stream) { s.read(st, t) })
		} else {
			h.SetStreamHandler(filter.PushProtocolID, func(st network.Stream) { <-s.hold; st.Reset() })
		}
		if err := h.Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
			s.close()
			return nil, fmt.Errorf("bench: connect filter subscriber: %w", err)
		}
		if err := client.Subscribe(ctx, n.Host().ID(), cfg.PubsubTopic, cfg.ContentTopic); err != nil {
			s.close()
			return nil, fmt.Errorf("bench: filter subscribe: %w", err)
		}
	}
	return s, nil
}

// read counts the pushes on one push stream.
func (s *filterSubscribers) read(st network.Stream, t **tracker) {
	s.wg.Add(1)
	defer s.wg.Done()
	r := bufio.NewReaderSize(st, 4096)
	var buf []byte
	var ctr message.Counters // not the node's: the subscriber is another party
	for {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > filter.MaxPushSize {
			st.Reset()
			return
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			st.Reset()
			return
		}
		p, err := filter.DecodePush(buf)
		if err != nil {
			st.Reset()
			return
		}
		m, err := message.Decode(p.Wire, &ctr)
		if err != nil {
			st.Reset()
			return
		}
		(*t).event(indexOf(m.Payload))
	}
}

func (s *filterSubscribers) close() {
	close(s.hold)
	for _, h := range s.hosts {
		h.Close()
	}
	s.wg.Wait()
}

// checkFilter fails the run if the filter service lost a push to a healthy
// subscriber. With a stalled subscriber its drops are expected and only
// reported.
func checkFilter(name string, n *node.Node, stalled bool) error {
	svc := n.Filter()
	if svc == nil {
		return nil
	}
	st := svc.Stats()
	if !stalled && (st.Dropped != 0 || st.Failed != 0) {
		return fmt.Errorf("bench: %s lost filter pushes: %d dropped on full queues, %d failed writes", name, st.Dropped, st.Failed)
	}
	return nil
}
