package discovery

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/p2p/discover"
	"github.com/ethereum/go-ethereum/p2p/enode"

	"github.com/couriernet/courier/internal/lifecycle"
)

// Discv5Config configures a Discv5 service.
type Discv5Config struct {
	// Bootnodes are records to start the table from
	// (--discv5-bootstrap-node).
	Bootnodes []*enode.Node
	// Filter keeps the records worth handing on; nil keeps every record
	// that decodes. It is called from the search goroutine.
	Filter func(Peer) bool
	// Found receives each kept peer, from the search goroutine; it must not
	// block for long.
	Found func(Peer)
	// SearchPause is the pause between two random lookups (nwaku
	// waku_discv5.nim searchLoop: 5 s). Default 5 s.
	SearchPause time.Duration
	// Logger receives the service's logs; go-ethereum's own go to it at
	// debug level. Nil means slog.Default().
	Logger *slog.Logger
}

// Discv5Stats counts what discv5 found. Take a copy with Stats.
type Discv5Stats struct {
	Seen      uint64 // records returned by lookups
	Malformed uint64 // records whose Waku fields did not decode
	Filtered  uint64 // records the filter dropped
	Found     uint64 // records handed to Found
}

// Discv5 runs go-ethereum's discovery v5 on a UDP socket and searches the
// network for Waku peers until Close.
type Discv5 struct {
	cfg  Discv5Config
	conn *net.UDPConn
	udp  *discover.UDPv5
	life *lifecycle.Group

	seen, malformed, filtered, found atomic.Uint64
}

// StartDiscv5 starts discv5 on conn, which it owns from then on, with rec
// as the node's record (its udp port is set to conn's port), and starts
// searching.
func StartDiscv5(key *ecdsa.PrivateKey, rec *LocalRecord, conn *net.UDPConn, cfg Discv5Config) (*Discv5, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SearchPause == 0 {
		cfg.SearchPause = 5 * time.Second
	}
	port := conn.LocalAddr().(*net.UDPAddr).Port
	rec.SetFallbackUDP(port)
	udp, err := discover.ListenV5(conn, rec.LocalNode, discover.Config{
		PrivateKey: key,
		Bootnodes:  cfg.Bootnodes,
		Log:        log.NewLogger(debugOnly{cfg.Logger.Handler()}),
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("discovery: discv5: %w", err)
	}
	d := &Discv5{cfg: cfg, conn: conn, udp: udp, life: lifecycle.New()}
	d.life.Go(d.search)
	cfg.Logger.Info("discv5 started", "udp", net.JoinHostPort(conn.LocalAddr().(*net.UDPAddr).IP.String(), strconv.Itoa(port)), "bootnodes", len(cfg.Bootnodes))
	return d, nil
}

// Port returns the bound UDP port.
func (d *Discv5) Port() int { return d.conn.LocalAddr().(*net.UDPAddr).Port }

// Stats returns a copy of the counters.
func (d *Discv5) Stats() Discv5Stats {
	return Discv5Stats{Seen: d.seen.Load(), Malformed: d.malformed.Load(), Filtered: d.filtered.Load(), Found: d.found.Load()}
}

// Close closes the socket, stops the search and waits for it. Calling it
// again does nothing.
func (d *Discv5) Close() {
	d.life.Close(func() error {
		d.udp.Close()
		return nil
	})
}

// search runs random lookups one after another, with SearchPause between
// them, and hands on what the filter keeps, as nwaku's searchLoop does.
func (d *Discv5) search() {
	ctx := d.life.Context()
	for {
		for _, n := range d.udp.Lookup(randomID()) {
			d.consider(n)
		}
		t := time.NewTimer(d.cfg.SearchPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (d *Discv5) consider(n *enode.Node) {
	d.seen.Add(1)
	p, err := DecodePeer(n)
	if err != nil {
		d.malformed.Add(1)
		d.cfg.Logger.Info("discv5: record rejected", "id", n.ID().TerminalString(), "err", err)
		return
	}
	// Bootstrap nodes pass whatever they say, as in nwaku.
	if d.cfg.Filter != nil && !d.isBootnode(n.ID()) && !d.cfg.Filter(p) {
		d.filtered.Add(1)
		return
	}
	d.found.Add(1)
	if d.cfg.Found != nil {
		d.cfg.Found(p)
	}
}

func (d *Discv5) isBootnode(id enode.ID) bool {
	for _, b := range d.cfg.Bootnodes {
		if b.ID() == id {
			return true
		}
	}
	return false
}

func randomID() enode.ID {
	var id enode.ID
	rand.Read(id[:])
	return id
}

// WakuFilter returns nwaku's discv5 predicate (waku_discv5.nim
// shardingPredicate): a record with a waku2 field that sets some flag and
// a shard of cluster among shards. With no shards, any record with a waku2
// flag passes (nwaku disables the shard filter then).
func WakuFilter(cluster uint16, shards []uint16) func(Peer) bool {
	return func(p Peer) bool {
		if !p.HasCaps || p.Caps == 0 {
			return false
		}
		if len(shards) == 0 {
			return true
		}
		for _, s := range shards {
			if p.Shards.Contains(cluster, s) {
				return true
			}
		}
		return false
	}
}

// debugOnly passes go-ethereum's records to h at debug level at most:
// a record of go-ethereum's trace level stays below debug, one above debug
// comes down to it. Enabled asks h about the level the record would be
// handled at, so h's level (which POST /admin/v1/log-level may change)
// decides, trace records passing only at TRACE.
type debugOnly struct{ h slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, level slog.Level) bool {
	return d.h.Enabled(ctx, min(level, slog.LevelDebug))
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = min(r.Level, slog.LevelDebug)
	r.Message = "discv5: " + r.Message
	return d.h.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.h.WithAttrs(as)} }
func (d debugOnly) WithGroup(g string) slog.Handler       { return debugOnly{d.h.WithGroup(g)} }
