package peers

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/metadata"
)

// keepConnected dials pi now and again whenever it is not connected. Each
// dial, failed or not, doubles the wait before the next check, from
// Config.RedialMin up to RedialMax; the wait starts over only when the
// peer was found connected at two checks in a row, so a peer that drops
// us soon after each dial is not re-dialled at the shortest wait. The
// first failure of a run of failures is logged as a warning, the others at
// debug level. A peer the metadata check disconnected for its cluster is
// not dialled again: nwaku disconnects such a peer and deletes it from its
// peer store (waku/node/peer_manager/peer_manager.nim
// refreshPeerMetadata), so never dials it again either; that is logged
// once, as a warning.
func (m *Manager) keepConnected(ctx context.Context, pi peer.AddrInfo) {
	backoff := m.cfg.RedialMin
	failing, wasConnected := false, false
	for {
		if err := m.staticRefused(pi.ID); err != nil {
			m.log.Warn("static node refused by the metadata check; not dialling it again", "peer", pi.ID, "reason", err)
			return
		}
		connected := m.h.Network().Connectedness(pi.ID) == network.Connected
		switch {
		case connected && wasConnected:
			backoff = m.cfg.RedialMin
		case !connected:
			dctx, cancel := context.WithTimeout(ctx, dialTimeout)
			err := m.Connect(dctx, pi)
			cancel()
			switch {
			case err != nil && !failing:
				m.log.Warn("static node unreachable; retrying", "peer", pi.ID, "err", err, "retry_in", backoff)
			case err != nil:
				m.log.Debug("static node dial failed", "peer", pi.ID, "err", err, "retry_in", backoff)
			default:
				m.log.Info("connected to static node", "peer", pi.ID)
			}
			failing = err != nil
			backoff = min(backoff*2, m.cfg.RedialMax)
		}
		wasConnected = connected
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refuseStatic records that the metadata check disconnected the static
// node id because of its cluster (metadata.ErrClusterMismatch or
// ErrNoClusterID); other failures, a timeout say, leave it to the backoff.
func (m *Manager) refuseStatic(id peer.ID, err error) {
	if !m.static[id] || !errors.Is(err, metadata.ErrClusterMismatch) && !errors.Is(err, metadata.ErrNoClusterID) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused[id] = err
}

// staticRefused returns why the metadata check refused id, or nil.
func (m *Manager) staticRefused(id peer.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused[id]
}

// isStatic reports whether id is a static node.
func (m *Manager) isStatic(id peer.ID) bool { return m.static[id] }
