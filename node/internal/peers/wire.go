package peers

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/core/transport"
	ma "github.com/multiformats/go-multiaddr"
)

// Wire counts what nim-libp2p counts of a host's transports, for nwaku's
// dashboards: the transport dials (libp2p/dialer.nim
// libp2p_total_dial_attempts, libp2p_successful_dials,
// libp2p_failed_dials) and the bytes the host's streams carry
// (libp2p_network_bytes). HostConfig.Wire has NewHost count into it. The
// zero value is ready; its methods are safe for concurrent use.
type Wire struct {
	attempts, successes, failures atomic.Uint64
	in, out                       atomic.Uint64
}

// WireStats is a snapshot of a Wire.
type WireStats struct {
	// DialAttempts counts the dials of one address by a transport: one
	// per address the swarm tries, so a peer dialled at two addresses
	// counts two. A dial ends as a success (connection secured and
	// muxed), a failure, or cancelled because another address won or
	// the caller gave up, which nim-libp2p counts as neither.
	DialAttempts, DialSuccesses, DialFailures uint64
	// BytesIn and BytesOut count the bytes read from and written to the
	// host's streams. nim-libp2p counts at the TCP socket, Noise's and
	// the muxer's framing included; go-libp2p reports the bytes of the
	// streams, so these leave that framing out.
	BytesIn, BytesOut uint64
}

// Stats returns the counts so far.
func (w *Wire) Stats() WireStats {
	return WireStats{DialAttempts: w.attempts.Load(), DialSuccesses: w.successes.Load(), DialFailures: w.failures.Load(),
		BytesIn: w.in.Load(), BytesOut: w.out.Load()}
}

// dialed counts one transport dial that ended with err, ctx being the
// dial's context.
func (w *Wire) dialed(ctx context.Context, err error) {
	w.attempts.Add(1)
	switch {
	case err == nil:
		w.successes.Add(1)
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
	default:
		w.failures.Add(1)
	}
}

// reporter is the go-libp2p bandwidth reporter that counts into a Wire: the
// totals only, without the per-peer and per-protocol meters of
// go-libp2p's BandwidthCounter, so that a stream write costs one atomic
// add. Its Get methods report the totals (rates 0) or nothing.
type reporter struct{ w *Wire }

var _ metrics.Reporter = reporter{}

func (r reporter) LogSentMessage(n int64)                              { r.w.out.Add(uint64(max(n, 0))) }
func (r reporter) LogRecvMessage(n int64)                              { r.w.in.Add(uint64(max(n, 0))) }
func (reporter) LogSentMessageStream(int64, protocol.ID, peer.ID)      {}
func (reporter) LogRecvMessageStream(int64, protocol.ID, peer.ID)      {}
func (reporter) GetBandwidthForPeer(peer.ID) metrics.Stats             { return metrics.Stats{} }
func (reporter) GetBandwidthForProtocol(protocol.ID) metrics.Stats     { return metrics.Stats{} }
func (reporter) GetBandwidthByPeer() map[peer.ID]metrics.Stats         { return nil }
func (reporter) GetBandwidthByProtocol() map[protocol.ID]metrics.Stats { return nil }
func (reporter) Reset()                                                {}
func (reporter) TrimIdle(time.Time)                                    {}
func (r reporter) GetBandwidthTotals() metrics.Stats {
	return metrics.Stats{TotalIn: int64(r.w.in.Load()), TotalOut: int64(r.w.out.Load())}
}

// dialCounter wraps a transport so that its dials count into a Wire. It
// keeps the optional interfaces the swarm looks for (transport.DialUpdater,
// transport.Resolver): dials with updates go to the transport's own when it
// has one, and a transport without a resolver resolves nothing.
type dialCounter struct {
	transport.Transport
	w *Wire
}

func (d dialCounter) Dial(ctx context.Context, raddr ma.Multiaddr, p peer.ID) (transport.CapableConn, error) {
	c, err := d.Transport.Dial(ctx, raddr, p)
	d.w.dialed(ctx, err)
	return c, err
}

func (d dialCounter) DialWithUpdates(ctx context.Context, raddr ma.Multiaddr, p peer.ID, updates chan<- transport.DialUpdate) (transport.CapableConn, error) {
	du, ok := d.Transport.(transport.DialUpdater)
	if !ok {
		return d.Dial(ctx, raddr, p)
	}
	c, err := du.DialWithUpdates(ctx, raddr, p, updates)
	d.w.dialed(ctx, err)
	return c, err
}

// resolvingDialCounter is a dialCounter over a transport that resolves
// addresses (WebSocket: /wss with an SNI name).
type resolvingDialCounter struct {
	dialCounter
	r transport.Resolver
}

func (d resolvingDialCounter) Resolve(ctx context.Context, maddr ma.Multiaddr) ([]ma.Multiaddr, error) {
	return d.r.Resolve(ctx, maddr)
}

// countDials returns t with its dials counted into w (t itself when w is
// nil).
func countDials(t transport.Transport, w *Wire) transport.Transport {
	if w == nil {
		return t
	}
	d := dialCounter{Transport: t, w: w}
	if r, ok := t.(transport.Resolver); ok {
		return resolvingDialCounter{dialCounter: d, r: r}
	}
	return d
}
