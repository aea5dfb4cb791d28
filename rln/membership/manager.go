package membership

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"
)

// errRootMoving: the root changed during each attempt to read the path.
var errRootMoving = errors.New("the root kept changing while reading the Merkle path")

// maxCatchUpBlocks bounds the block range of one catch-up's event query
// (RPC providers refuse larger eth_getLogs ranges).
const maxCatchUpBlocks = 10_000

// MerklePath is the node's own path in the membership tree, as the prover
// needs it: the siblings from the leaf level up, each 32 bytes
// little-endian (getMerkleProof's order, nwaku's path_elements), and the
// root they lead to. Index's bits, least significant first, are the path's
// directions (nwaku's identity_path_index).
type MerklePath struct {
	// Index is the membership's leaf index.
	Index uint32
	// Root is the root the path leads to, little-endian.
	Root [32]byte
	// Siblings are the path elements from the leaf level up.
	Siblings [MerkleTreeDepth][32]byte
}

// State is the membership view's health, in nwaku's health vocabulary
// (waku/node/health_monitor: READY, SYNCHRONIZING, NOT_READY).
type State string

// Values of State.
const (
	// StateSynchronizing: Start has not read the first root yet.
	StateSynchronizing State = "SYNCHRONIZING"
	// StateReady: the last poll read the contract.
	StateReady State = "READY"
	// StateNotReady: two or more polls in a row failed; the node validates
	// with the roots it has and says so in Health.Desc.
	StateNotReady State = "NOT_READY"
)

// Health is a snapshot of a Manager's view of the chain, for /health, the
// log and metrics.
type Health struct {
	// State is READY, SYNCHRONIZING or NOT_READY.
	State State
	// Desc says why the state is not READY, or what is degraded (a missing
	// Merkle path); empty when all is well.
	Desc string
	// Endpoint is the endpoint in use, redacted to scheme and host.
	Endpoint string
	// ChainID is the chain the endpoints serve.
	ChainID *big.Int
	// Roots is the number of acceptable roots held.
	Roots int
	// Members is the contract's nextFreeIndex when last read.
	Members uint32
	// Block is the chain head at the last successful poll.
	Block uint64
	// LastPoll is the time of the last successful poll (zero before the
	// first).
	LastPoll time.Time
	// Failures counts the polls failed in a row.
	Failures int
	// LastError is the error of the last failed poll in the current run
	// of failures, empty when the last poll succeeded.
	LastError string
	// HavePath reports whether the node's own Merkle path is known for the
	// current root (always false without Config.MembershipIndex).
	HavePath bool
}

// Manager follows the membership contract as nwaku's OnchainGroupManager
// does, stateless: it polls root() every Config.PollInterval into a Window
// of acceptable roots (AcceptableRootWindowSize), refetches the node's own
// Merkle path (getMerkleProof) and nextFreeIndex when the root changes,
// and reads maxMembershipRateLimit at start. Beyond nwaku, it fills in the
// roots it missed (after an RPC outage, or several changes within one
// poll) from the blocks of the contract's membership events, and seeds the
// window at start from recent blocks (Config.HistoryBlocks). When the RPC
// fails it keeps its roots, reports the outage through Health and the log,
// and catches up when an endpoint answers again.
//
// AcceptableRoot and Window are meant for the relay validator's hot path:
// one atomic load, no lock, no allocation. A Manager is safe for
// concurrent use; Close stops its goroutine.
type Manager struct {
	client *Client
	cfg    Config

	window   atomic.Pointer[Window]
	path     atomic.Pointer[MerklePath]
	maxLimit uint32 // set before the loop starts, then read only
	members  atomic.Uint32
	counted  atomic.Bool // members was read at least once

	mu       sync.Mutex // guards the poll state below
	head     uint64
	lastOK   time.Time
	failures int
	since    time.Time // first failure of the current run of failures
	lastErr  error
	pathErr  error

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Start dials the endpoints (see Dial), reads maxMembershipRateLimit, the
// current root (with the recent roots before it) and, with
// Config.MembershipIndex, the node's Merkle path, retrying as Dial does;
// then it polls in the background until Close. A membership index with no
// leaf does not fail Start: Health reports it. Errors wrap those of Dial.
func Start(ctx context.Context, cfg Config) (*Manager, error) {
	c, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m := &Manager{client: c, cfg: c.cfg, done: make(chan struct{})}
	err = c.retry(ctx, "read the membership contract", m.begin)
	if err != nil {
		c.Close()
		return nil, err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(loopCtx)
	return m, nil
}

// begin reads the contract's state before the first poll.
func (m *Manager) begin(ctx context.Context) error {
	limit, err := m.client.MaxMembershipRateLimit(ctx)
	if err != nil {
		return err
	}
	m.maxLimit = limit
	head, root, err := m.snapshot(ctx)
	if err != nil {
		return err
	}
	if n := uint64(m.cfg.HistoryBlocks); m.cfg.HistoryBlocks > 0 && head > 0 {
		from := uint64(1)
		if head > n {
			from = head - n
		}
		m.catchUp(ctx, from, head)
	}
	m.advance(ctx, head, root, true)
	return nil
}

func (m *Manager) loop(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(m.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.poll(ctx)
		}
	}
}

// poll reads the chain once and advances the window.
func (m *Manager) poll(ctx context.Context) {
	head, root, err := m.snapshot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.failed(err)
		}
		return
	}
	m.mu.Lock()
	prev := m.head
	m.mu.Unlock()
	latest, _ := m.window.Load().Latest()
	changed := latest != root
	if changed && prev > 0 && head > prev {
		from := prev + 1
		if head-prev > maxCatchUpBlocks {
			from = head - maxCatchUpBlocks
		}
		m.catchUp(ctx, from, head)
	}
	m.advance(ctx, head, root, changed)
}

// snapshot reads the chain head and the current root from one endpoint.
func (m *Manager) snapshot(ctx context.Context) (uint64, [32]byte, error) {
	var head uint64
	var root [32]byte
	err := m.client.pool.do(ctx, func(ctx context.Context, b Backend) error {
		var err error
		if head, err = b.BlockNumber(ctx); err != nil {
			return err
		}
		root, err = m.client.rootAt(ctx, b, nil)
		return err
	})
	return head, root, err
}

// catchUp appends to the window the roots after each membership event in
// blocks [from, to], oldest first: the roots a poller may have missed. It
// is best effort: a block whose state the endpoint no longer has (or an
// endpoint without an event index) is skipped.
func (m *Manager) catchUp(ctx context.Context, from, to uint64) {
	var blocks []uint64
	err := m.client.pool.do(ctx, func(ctx context.Context, b Backend) error {
		var err error
		blocks, err = m.client.changeBlocks(ctx, b, from, to)
		return err
	})
	if err != nil {
		m.cfg.Logger.Debug("rln: could not read past membership events", "from", from, "to", to, "err", err)
		return
	}
	if len(blocks) > windowCap {
		blocks = blocks[len(blocks)-windowCap:]
	}
	for _, n := range blocks {
		var root [32]byte
		err := m.client.pool.do(ctx, func(ctx context.Context, b Backend) error {
			var err error
			root, err = m.client.rootAt(ctx, b, new(big.Int).SetUint64(n))
			return err
		})
		if err != nil {
			m.cfg.Logger.Debug("rln: could not read the root of a past block", "block", n, "err", err)
			continue
		}
		m.push(root)
	}
}

// advance records a successful read of root at head: the window, and the
// member count and the own path when the root changed (changed: root is
// not the newest root the window had before this poll).
func (m *Manager) advance(ctx context.Context, head uint64, root [32]byte, changed bool) {
	m.push(root)
	if changed || !m.counted.Load() {
		if n, err := m.client.NextFreeIndex(ctx); err == nil {
			m.members.Store(n)
			m.counted.Store(true)
		}
	}
	if m.cfg.MembershipIndex != nil {
		if p := m.path.Load(); p == nil || p.Root != root {
			m.refreshPath(ctx, root)
		}
	}
	m.succeeded(head)
}

// push appends root to the window unless it is already the newest.
func (m *Manager) push(root [32]byte) bool {
	w, changed := m.window.Load().with(root)
	if changed {
		m.window.Store(w)
		m.cfg.Logger.Debug("rln: new membership root", "root", fmt.Sprintf("%x", root), "roots", w.Len())
	}
	return changed
}

// refreshPath fetches the node's Merkle path for root. Each attempt reads
// the path and then the root from one endpoint: if the root moved in
// between, the newer root joins the window and the path is read again (up
// to three times), so that a stored path always leads to its root.
func (m *Manager) refreshPath(ctx context.Context, root [32]byte) {
	index := *m.cfg.MembershipIndex
	var err error
	for range 3 {
		var siblings [MerkleTreeDepth][32]byte
		var now [32]byte
		err = m.client.pool.do(ctx, func(ctx context.Context, b Backend) error {
			var err error
			if siblings, err = m.client.merkleProof(ctx, b, index); err != nil {
				return err
			}
			now, err = m.client.rootAt(ctx, b, nil)
			return err
		})
		if err != nil {
			break
		}
		if now == root {
			m.path.Store(&MerklePath{Index: index, Root: root, Siblings: siblings})
			break
		}
		m.push(now)
		root, err = now, errRootMoving
	}
	m.mu.Lock()
	m.pathErr = err
	m.mu.Unlock()
	if err != nil {
		m.cfg.Logger.Warn("rln: could not read the membership's Merkle path", "index", index, "err", err)
	}
}

func (m *Manager) failed(err error) {
	m.mu.Lock()
	m.failures++
	m.lastErr = err
	if m.failures == 1 {
		m.since = time.Now()
	}
	n := m.failures
	m.mu.Unlock()
	if n == 1 {
		m.cfg.Logger.Warn("rln: membership contract unreachable; validating with the roots known",
			"roots", m.window.Load().Len(), "err", err)
		return
	}
	m.cfg.Logger.Debug("rln: membership contract still unreachable", "failures", n, "err", err)
}

func (m *Manager) succeeded(head uint64) {
	m.mu.Lock()
	failures, since := m.failures, m.since
	m.failures, m.lastErr = 0, nil
	m.head, m.lastOK = head, time.Now()
	m.mu.Unlock()
	if failures > 0 {
		m.cfg.Logger.Info("rln: membership contract reachable again", "after", time.Since(since).Round(time.Millisecond),
			"failed_polls", failures, "roots", m.window.Load().Len(), "endpoint", m.client.Endpoint())
	}
}

// AcceptableRoot reports whether root, the 32-byte little-endian
// merkle_root of a RateLimitProof, is in the window of acceptable roots
// (nwaku's validateRoot). It takes no lock and does not allocate; root is
// not kept.
func (m *Manager) AcceptableRoot(root []byte) bool {
	return m.window.Load().Contains(root)
}

// Window returns the current window of acceptable roots: an immutable
// snapshot that later changes do not touch.
func (m *Manager) Window() *Window {
	return m.window.Load()
}

// MerklePath returns the node's own Merkle path for the newest root it
// read, and false without Config.MembershipIndex or while the path is
// unknown (see Health). The path may belong to a root older than the
// contract's, when the last refetch failed; its Root is still in the
// window until AcceptableRootWindowSize newer roots arrive.
func (m *Manager) MerklePath() (MerklePath, bool) {
	p := m.path.Load()
	if p == nil {
		return MerklePath{}, false
	}
	return *p, true
}

// MaxMembershipRateLimit returns the contract's maxMembershipRateLimit as
// read at Start.
func (m *Manager) MaxMembershipRateLimit() uint32 { return m.maxLimit }

// Members returns the contract's nextFreeIndex when last read (nwaku's
// waku_rln_number_registered_memberships).
func (m *Manager) Members() uint32 { return m.members.Load() }

// Client returns the Manager's Client, for calls such as IsMember and
// Register. It is closed with the Manager.
func (m *Manager) Client() *Client { return m.client }

// Health returns a snapshot of the Manager's state.
func (m *Manager) Health() Health {
	endpoint, chainID := m.client.pool.current()
	m.mu.Lock()
	h := Health{
		Endpoint: endpoint,
		ChainID:  chainID,
		Roots:    m.window.Load().Len(),
		Members:  m.members.Load(),
		Block:    m.head,
		LastPoll: m.lastOK,
		Failures: m.failures,
	}
	lastErr, pathErr, since := m.lastErr, m.pathErr, m.since
	m.mu.Unlock()
	if lastErr != nil {
		h.LastError = lastErr.Error()
	}
	p := m.path.Load()
	latest, _ := m.window.Load().Latest()
	h.HavePath = p != nil && p.Root == latest
	switch {
	case h.LastPoll.IsZero():
		h.State, h.Desc = StateSynchronizing, "waiting for the first membership root"
	case h.Failures >= 2:
		h.State = StateNotReady
		h.Desc = fmt.Sprintf("Ethereum RPC failing for %s (%d polls): %s; validating with the %d roots known",
			time.Since(since).Round(time.Second), h.Failures, h.LastError, h.Roots)
	default:
		h.State = StateReady
	}
	if m.cfg.MembershipIndex != nil && !h.HavePath && pathErr != nil {
		d := fmt.Sprintf("no Merkle path for membership index %d: %v", *m.cfg.MembershipIndex, pathErr)
		if h.Desc != "" {
			d = h.Desc + "; " + d
		}
		h.Desc = d
	}
	return h
}

// Close stops polling and closes the endpoint connection. It is
// idempotent and waits for the poll goroutine to end.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		m.cancel()
		<-m.done
		m.client.Close()
	})
}
