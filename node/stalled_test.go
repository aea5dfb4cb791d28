package node

import (
	"context"
	"errors"
	"io"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/mplex"
)

// A peer on mplex (as js-waku) sends 100 MB on a stream whose reader on
// the node never reads, while four other streams carry 400 messages of
// 32 KiB each: the stalled stream is reset at its limit, the live heap
// (the whole process: node and peer) stays under 64 MB above its start,
// and every message of the other streams arrives.
func TestMplexStalledReader(t *testing.T) {
	if testing.Short() {
		t.Skip("moves tens of MB over loopback")
	}
	const (
		stallProto = "/courier-test/stall/1"
		flowProto  = "/courier-test/flow/1"
		stallBytes = 100 << 20
		streams    = 4
		perStream  = 100
		msgSize    = 32 << 10
	)
	ctx := context.Background()
	n, err := New(Config{ListenAddress: "127.0.0.1", Muxers: []string{MuxerMplex}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(ctx)
	release := make(chan struct{})
	// handlers counts running handlers; enter refuses new ones once the
	// test's cleanup has begun, so Add never races with Wait.
	var handlers sync.WaitGroup
	var mu sync.Mutex
	stopping := false
	enter := func(s network.Stream) bool {
		mu.Lock()
		defer mu.Unlock()
		if stopping {
			s.Reset()
			return false
		}
		handlers.Add(1)
		return true
	}
	n.Host().SetStreamHandler(stallProto, func(s network.Stream) {
		if !enter(s) {
			return
		}
		defer handlers.Done()
		<-release // never reads
		s.Reset()
	})
	received := make(chan int64, streams)
	n.Host().SetStreamHandler(flowProto, func(s network.Stream) {
		if !enter(s) {
			return
		}
		defer handlers.Done()
		got, _ := io.Copy(io.Discard, s)
		s.Close()
		received <- got
	})
	defer func() {
		mu.Lock()
		stopping = true
		mu.Unlock()
		close(release)
		handlers.Wait()
	}()

	h, _ := newClient(t, libp2p.Muxer(mplex.ID, mplex.DefaultTransport()))
	if err := h.Connect(ctx, peer.AddrInfo{ID: n.Host().ID(), Addrs: n.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	start, _ := heap()
	peak, peakObjects := start, uint64(0)
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				live, objects := heap()
				peak, peakObjects = max(peak, live), max(peakObjects, objects)
			}
		}
	})

	var senders sync.WaitGroup
	var stallSent int64
	var stallErr error
	senders.Go(func() {
		s, err := h.NewStream(ctx, n.Host().ID(), stallProto)
		if err != nil {
			stallErr = err
			return
		}
		buf := make([]byte, 64<<10)
		for stallSent < stallBytes {
			w, err := s.Write(buf)
			stallSent += int64(w)
			if err != nil {
				stallErr = err
				return
			}
		}
	})
	sendErrs := make(chan error, streams)
	for range streams {
		senders.Go(func() {
			s, err := h.NewStream(ctx, n.Host().ID(), flowProto)
			if err != nil {
				sendErrs <- err
				return
			}
			msg := make([]byte, msgSize)
			for range perStream {
				if _, err := s.Write(msg); err != nil {
					sendErrs <- err
					return
				}
			}
			sendErrs <- s.CloseWrite()
		})
	}
	senders.Wait()
	for range streams {
		if err := <-sendErrs; err != nil {
			t.Fatalf("flowing stream: %v", err)
		}
	}
	for range streams {
		select {
		case got := <-received:
			if got != perStream*msgSize {
				t.Fatalf("a flowing stream delivered %d bytes, want %d", got, perStream*msgSize)
			}
		case <-time.After(5 * time.Minute):
			t.Fatal("flowing streams did not finish")
		}
	}
	close(stopSampling)
	sampler.Wait()
	if !errors.Is(stallErr, network.ErrReset) {
		t.Fatalf("stalled stream: sent %d bytes, error %v; want a reset", stallSent, stallErr)
	}
	if stallSent >= stallBytes || stallSent < mplex.DefaultMaxStreamBuffer {
		t.Fatalf("stalled stream reset after %d bytes, want between 4 MiB and 100 MB", stallSent)
	}
	grew := int64(peak) - int64(start)
	if grew >= 64<<20 {
		t.Fatalf("live heap grew by %d bytes, want under 64 MiB", grew)
	}
	t.Logf("stalled stream reset after %.1f MB sent; %d x %d x %d kB delivered; live heap start %.1f MB, peak %.1f MB (+%.1f MB); heap objects with garbage peak %.1f MB",
		float64(stallSent)/1e6, streams, perStream, msgSize>>10, float64(start)/1e6, float64(peak)/1e6, float64(grew)/1e6, float64(peakObjects)/1e6)
}

// heap returns the live heap as of the last GC and the heap's objects
// now, garbage included, in bytes.
func heap() (live, objects uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}
