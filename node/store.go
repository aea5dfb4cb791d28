package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/message"
	"github.com/couriernet/courier/node/internal/archivegate"
	"github.com/couriernet/courier/node/internal/health"
	"github.com/couriernet/courier/node/internal/peers"
	"github.com/couriernet/courier/node/internal/resume"
	"github.com/couriernet/courier/store"
	"github.com/couriernet/courier/storesync"
)

// openArchive opens the archive the plan located.
func (n *Node) openArchive() (err error) {
	cfg := n.cfg.ArchiveConfig
	onInsert, onQuery := cfg.OnInsert, cfg.OnQuery
	n.metrics.ObserveArchive(&cfg.Config)
	cfg.OnInsert, cfg.OnQuery = afterInsert(cfg.OnInsert, onInsert), afterQuery(cfg.OnQuery, onQuery)
	n.metrics.ObservePostgres(&cfg.Postgres)
	n.indexCommits(&cfg.Config)
	n.store.health = health.NewArchive(n.cfg.Logger.With("component", "archive"))
	n.store.health.Observe(&cfg.Config)
	if cfg.Logger == nil {
		cfg.Logger = n.cfg.Logger.With("component", "archive")
	}
	if n.archive, err = n.cfg.archive.Open(context.Background(), cfg); err != nil {
		return fmt.Errorf("node: --store-message-db-url: open archive %s: %w", n.cfg.archive, err)
	}
	n.cfg.Logger.Info("archive "+n.cfg.archive.String(), "retention", cfg.Retention)
	return nil
}

// afterInsert returns an archive.Config.OnInsert that calls first, then
// then; either may be nil.
func afterInsert(first, then func(*message.Envelope, time.Duration)) func(*message.Envelope, time.Duration) {
	switch {
	case then == nil:
		return first
	case first == nil:
		return then
	}
	return func(env *message.Envelope, d time.Duration) { first(env, d); then(env, d) }
}

// afterQuery is afterInsert for archive.Config.OnQuery.
func afterQuery(first, then func(time.Duration)) func(time.Duration) {
	switch {
	case then == nil:
		return first
	case first == nil:
		return then
	}
	return func(d time.Duration) { first(d); then(d) }
}

// storeParts are the node's store server and the store node its client
// (the REST API's and courier query's) asks by default, and what works
// over the archive: the timestamp gate before it, store-sync, the bounds
// of store resume.
type storeParts struct {
	server *store.Server
	peer   peer.ID // --storenode, "" when not set
	// gate checks relayed messages' timestamps before the archive; nil
	// without archive or with the check off.
	gate *archivegate.Gate
	sync *storesync.Service // nil when store-sync is off
	// health follows the archive's failed and successful commits for the
	// log and /health; nil without archive.
	health *health.Archive
	// resumeLimits bound store resume: resume.DefaultLimits.
	resumeLimits resume.Limits
}

// buildStore mounts the store server over the archive when Store is on,
// with the --rate-limit setting for store, and keeps --storenode's address.
func (n *Node) buildStore() error {
	if n.archive != nil {
		var err error
		n.store.server, err = store.NewServer(n.host, n.archive, store.Config{
			RateLimit: n.cfg.limits.Get(ratelimit.StoreV3), Logger: n.cfg.Logger.With("protocol", "store"),
		})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.health.Mount(health.Store, store.ProtocolID)
	}
	// The store client is always mounted, as in nwaku
	// (waku/factory/node_factory.nim mountStoreClient).
	n.health.Mount(health.StoreClient, store.ProtocolID)
	n.store.peer = n.addServicePeer(n.cfg.storeNode)
	return nil
}

// closeStore unmounts the store server; the archive is closed after.
func (n *Node) closeStore() error {
	if n.store.server == nil {
		return nil
	}
	return n.store.server.Close()
}

// StoreServer returns the store server, nil unless Config.Store.
func (n *Node) StoreServer() *store.Server { return n.store.server }

// StorePeer returns the default store node (Config.StoreNode), else a
// connected peer that serves store, else "".
func (n *Node) StorePeer() peer.ID {
	if n.store.peer != "" {
		return n.store.peer
	}
	return n.connectedStorePeer()
}

// connectedStorePeer returns a connected peer that serves store, or "".
func (n *Node) connectedStorePeer() peer.ID {
	if ps := peers.ConnectedWith(n.host, store.ProtocolID); len(ps) > 0 {
		return ps[0]
	}
	return ""
}
