package libnet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/couriernet/courier/libnet/internal/wire"
)

// RouteOptions configures one route.
type RouteOptions struct {
	// Dedup drops a tell or ask whose route and payload hash were seen
	// among the last Config.DedupSize on Dedup routes, before the handler
	// runs (lib-net leaves this to each handler); drops count as
	// DropDuplicate.
	Dedup bool
}

type route struct {
	name  string
	h     Handler
	dedup bool
}

// Endpoint is one lib-net node: a listener, a pool of outbound
// connections and the pending asks. Its methods are safe for concurrent use.
//
// Lock order: Endpoint.mu, then Endpoint.pmu; neither is held while
// blocking on the network.
type Endpoint struct {
	cfg    Config
	c      *counters
	codecs *codecs
	signer *signer
	limits wire.Limits
	dedup  *lru.Cache[[hashSize]byte, struct{}]

	ln         net.Listener
	listenHost string
	listenPort int

	idPrefix [8]byte
	idSeq    atomic.Uint64

	mu      sync.RWMutex
	closed  bool
	routes  map[string]*route
	lanes   map[string]Lane // per-peer overrides
	oldPeer map[string]bool // legacy peers that decompress (LegacyCompressPeers)
	learned map[string]bool // peers that sent us raw frames
	pool    *simplelru.LRU[string, *peer]
	inbound map[*conn]struct{}

	pmu     sync.Mutex
	pclosed bool
	pending map[pendingKey]*call

	quit chan struct{}
	wg   sync.WaitGroup
}

// New validates cfg, applies its defaults and starts the listener if
// cfg.ListenAddr is set. Errors wrap ErrBadConfig (with ErrNoSigningKey
// for a legacy lane without keys) or the listen error.
func New(cfg Config) (*Endpoint, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Endpoint{cfg: cfg, c: newCounters(), codecs: &codecs{limit: 2*cfg.PayloadLimit + 64<<10},
		limits: wire.Limits{Header: cfg.HeaderLimit, Payload: cfg.PayloadLimit},
		routes: map[string]*route{}, lanes: map[string]Lane{}, learned: map[string]bool{}, oldPeer: map[string]bool{},
		inbound: map[*conn]struct{}{}, pending: map[pendingKey]*call{}, quit: make(chan struct{})}
	for p, l := range cfg.PeerLanes {
		e.lanes[p] = l
	}
	for p, on := range cfg.LegacyCompressPeers {
		e.oldPeer[p] = on
	}
	if cfg.HashKey != nil {
		e.signer = newSigner(cfg.HashKey, cfg.SigningKey)
	}
	e.dedup, _ = lru.New[[hashSize]byte, struct{}](cfg.DedupSize)
	e.pool, _ = simplelru.NewLRU[string, *peer](cfg.MaxPeers, func(_ string, p *peer) { p.stop() })
	_, _ = rand.Read(e.idPrefix[:])
	if cfg.ListenAddr != "" {
		if err := e.listen(cfg.ListenAddr); err != nil {
			return nil, err
		}
	}
	if cfg.IdleTimeout > 0 {
		e.wg.Add(1)
		go e.janitor()
	}
	return e, nil
}

func (e *Endpoint) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("libnet: listen: %w", err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	e.ln, e.listenHost = ln, host
	e.listenPort, _ = strconv.Atoi(port)
	e.wg.Add(1)
	go e.acceptLoop(ln)
	return nil
}

// Addr returns the listen address ("ip:port"), or "" for a send-only endpoint.
func (e *Endpoint) Addr() string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.ln == nil {
		return ""
	}
	return e.ln.Addr().String()
}

// listening reports whether the endpoint has a listener.
func (e *Endpoint) listening() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.ln != nil
}

// Handle registers h for route, replacing any previous handler.
func (e *Endpoint) Handle(name string, h Handler, opts RouteOptions) {
	e.mu.Lock()
	e.routes[name] = &route{name: name, h: h, dedup: opts.Dedup}
	e.mu.Unlock()
}

// SetPeerLane makes peer ("ip:port") receive lane l, overriding
// Config.Lane and what was learned. A lane that cannot be sent (LaneJSON or
// a value that is not a Lane constant) is refused with ErrBadConfig
// (wrapped) and changes nothing.
func (e *Endpoint) SetPeerLane(peer string, l Lane) error {
	if l != LaneLegacy && l != LaneRaw {
		return fmt.Errorf("%w: lane %d cannot be sent", ErrBadConfig, l)
	}
	if l == LaneLegacy {
		if err := e.cfg.legacyReady(); err != nil {
			return err
		}
	}
	e.mu.Lock()
	e.lanes[peer] = l
	e.mu.Unlock()
	return nil
}

// SetLegacyCompress adds peer ("ip:port") to Config.LegacyCompressPeers
// (on) or removes it: legacy frames to it are then compressed as the
// header says (lib-net 1.3.10 or older) or not at all (1.3.11 and later).
func (e *Endpoint) SetLegacyCompress(peer string, on bool) {
	e.mu.Lock()
	e.oldPeer[peer] = on
	e.mu.Unlock()
}

// modeFor returns how a message to peer is framed.
func (e *Endpoint) modeFor(peer string) mode {
	if l := e.LaneFor(peer); l != LaneLegacy {
		return mode{lane: l}
	}
	return e.legacyMode(peer)
}

// legacyMode returns how a legacy frame to peer is framed.
func (e *Endpoint) legacyMode(peer string) mode {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return mode{lane: LaneLegacy, compress: e.oldPeer[peer]}
}

// LaneFor returns the lane a message to peer is sent on.
func (e *Endpoint) LaneFor(peer string) Lane {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if l, ok := e.lanes[peer]; ok {
		return l
	}
	if !e.cfg.NoLearn && e.learned[peer] {
		return LaneRaw
	}
	return e.cfg.Lane
}

func (e *Endpoint) learnRaw(peer string) {
	if e.cfg.NoLearn {
		return
	}
	e.mu.RLock()
	known := e.learned[peer]
	e.mu.RUnlock()
	if !known {
		e.mu.Lock()
		e.learned[peer] = true
		e.mu.Unlock()
	}
}

func (e *Endpoint) route(name string) *route {
	e.mu.RLock()
	r := e.routes[name]
	e.mu.RUnlock()
	if r == nil && e.cfg.Handler != nil {
		return &route{name: name, h: e.cfg.Handler, dedup: e.cfg.HandlerDedup}
	}
	return r
}

// Close stops the endpoint: new calls fail with ErrClosed, each peer's
// queued messages are written (each write bounded by WriteTimeout) or
// failed, pending asks fail with ErrClosed, and every connection and
// goroutine the endpoint started is gone when Close returns.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.quit)
	e.pool.Purge() // stops every peer
	for c := range e.inbound {
		_ = c.nc.Close()
	}
	ln := e.ln
	e.ln = nil
	e.mu.Unlock()
	var err error
	if ln != nil {
		err = ln.Close()
	}
	e.failPending(ErrClosed)
	e.wg.Wait()
	e.codecs.close()
	return err
}

func (e *Endpoint) janitor() {
	defer e.wg.Done()
	t := time.NewTicker(max(e.cfg.IdleTimeout/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case now := <-t.C:
			e.evictIdle(now)
		}
	}
}

func (e *Endpoint) evictIdle(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, addr := range e.pool.Keys() {
		p, _ := e.pool.Peek(addr)
		if p.idle(now, e.cfg.IdleTimeout) {
			e.pool.Remove(addr)
		}
	}
}

// peer returns the pooled peer for addr, creating it.
func (e *Endpoint) peer(addr string) (*peer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if p, ok := e.pool.Get(addr); ok {
		return p, nil
	}
	p := newPeer(e, addr)
	e.pool.Add(addr, p)
	e.c.peers.Add(1)
	e.wg.Add(1)
	go p.run()
	return p, nil
}

// sendFrame queues f to addr and waits until it is written. A message
// that a peer's writer never took because the peer stopped (evicted while
// the message was queued) goes out through a fresh peer, on a new
// connection; only a closed endpoint returns ErrClosed.
func (e *Endpoint) sendFrame(ctx context.Context, addr string, f *frame) error {
	for {
		p, err := e.peer(addr)
		if err != nil {
			return err
		}
		if err = p.send(ctx, f); !errors.Is(err, errPeerStopped) {
			return err
		}
		e.forget(addr, p)
	}
}

// forget removes p from the pool if it is still addr's peer.
func (e *Endpoint) forget(addr string, p *peer) {
	e.mu.Lock()
	if q, ok := e.pool.Peek(addr); ok && q == p {
		e.pool.Remove(addr)
	}
	e.mu.Unlock()
}

// Tell sends m to peer ("ip:port") one-way on the peer's lane and returns
// once the frame is written to the socket (or fails). ctx bounds the wait
// for queue space and the write. Errors: ErrClosed, ErrRouteTooLong,
// ErrBadMsg and ErrTooLarge (wrapped, nothing written), context errors,
// dial and write errors.
func (e *Endpoint) Tell(ctx context.Context, peer string, m Msg) error {
	f, err := e.encode(e.modeFor(peer), DirTell, e.newID(), &m, 0)
	if err != nil {
		return err
	}
	return e.sendFrame(ctx, peer, &f)
}

// MultiTell frames m once per lane (and legacy compression) and writes the same buffers to every
// peer, concurrently. errs[i] is peers[i]'s result (nil on success); a slow
// or dead peer delays only its own entry, up to ctx. A message that cannot
// be encoded (ErrTooLarge, ErrBadMsg, ErrRouteTooLong) is sent to no peer and every
// entry holds that error.
func (e *Endpoint) MultiTell(ctx context.Context, peers []string, m Msg) []error {
	errs := make([]error, len(peers))
	frames := map[mode]*frame{}
	var wg sync.WaitGroup
	for i, p := range peers {
		md := e.modeFor(p)
		if frames[md] == nil {
			f, err := e.encode(md, DirTell, e.newID(), &m, 0)
			if err != nil {
				for j := range errs {
					errs[j] = err
				}
				return errs
			}
			frames[md] = &f
		}
		wg.Add(1)
		go func(i int, p string, f *frame) {
			defer wg.Done()
			errs[i] = e.sendFrame(ctx, p, f)
		}(i, p, frames[md])
	}
	wg.Wait()
	return errs
}

// Stats returns a snapshot of the counters and gauges.
func (e *Endpoint) Stats() Stats {
	c := e.c
	e.pmu.Lock()
	pending := int64(len(e.pending))
	e.pmu.Unlock()
	s := Stats{
		OutstandingSends: c.outSends.Load(), OutstandingReceives: c.outRecvs.Load(),
		PendingAsks: pending, ArmedTimers: c.armedTimers.Load(),
		Peers: c.peers.Load(), InboundConns: c.inbound.Load(), ReadBuffers: c.readBuffers.Load(),
		Sent: c.sent.snapshot(), Received: c.recv.snapshot(),
		SendErrors: c.sendErrors.Load(), RefusedConns: c.refusedConns.Load(), IdleClosed: c.idleClosed.Load(),
		AcceptErrors: c.acceptErrors.Load(),
		Base64Ops:    c.base64Ops.Load(), JSONOps: c.jsonOps.Load(),
		AskLatency: c.askLat.summary(), WriteLatency: c.writeLat.summary(),
	}
	for i := range s.Drops {
		s.Drops[i] = c.drops[i].Load()
	}
	return s
}

func (e *Endpoint) drop(r DropReason, err error) {
	e.c.drops[r].Add(1)
	if err != nil && e.cfg.OnError != nil {
		e.cfg.OnError(err)
	}
}
