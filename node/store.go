package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/node/internal/resume"
	"github.com/couriernet/courier/store"
	"github.com/couriernet/courier/storesync"
)

// DefaultDBURL is nwaku's default --store-message-db-url
// (tools/confutils/cli_args.nim), used when Config.DBURL is empty and no
// DataDir is set.
const DefaultDBURL = "sqlite://store.sqlite3"

// locateArchive resolves DBURL: "" means DataDir/archive, or DefaultDBURL
// without a DataDir; "embedded" means DataDir/archive; any other value is
// a database URL that archive/dburl resolves as nwaku's archive driver
// builder does (sqlite://PATH, postgres://...).
func (c *Config) locateArchive() (dburl.Location, error) {
	u := c.DBURL
	switch {
	case u == "" && c.DataDir == "":
		u = DefaultDBURL
	case u == "" || u == "embedded":
		return dburl.Location{Dir: filepath.Join(c.DataDir, "archive")}, nil
	}
	loc, err := dburl.Parse(u)
	if err != nil {
		return dburl.Location{}, fmt.Errorf("%w: store-message-db-url %q: want sqlite://PATH or postgres://user:password@host:port/db", ErrConfig, u)
	}
	return loc, nil
}

// openArchive opens the archive Config.DBURL names.
func (n *Node) openArchive() error {
	loc := n.cfg.archive
	cfg := n.cfg.ArchiveConfig
	n.metrics.ObserveArchive(&cfg.Config)
	n.indexCommits(&cfg.Config)
	n.store.health = newArchiveHealth(n.cfg.Logger.With("component", "archive"))
	n.store.health.observe(&cfg.Config)
	if cfg.Logger == nil {
		cfg.Logger = n.cfg.Logger.With("component", "archive")
	}
	if loc.Postgres != "" {
		a, err := loc.Open(context.Background(), cfg)
		if err != nil {
			return fmt.Errorf("node: open archive: %w", err)
		}
		n.archive = a
		n.cfg.Logger.Info("archive in Postgres", "retention", cfg.Retention)
		return nil
	}
	a, err := loc.Open(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("node: open archive in %s: %w", loc.Dir, err)
	}
	n.archive = a
	index := loc.Index
	if index == "" {
		index = filepath.Join(loc.Dir, "index.db")
	}
	n.cfg.Logger.Info("embedded archive", "index", index, "segments", loc.Dir, "retention", cfg.Retention)
	return nil
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
	gate *archiveGate
	sync *storesync.Service // nil when store-sync is off
	// health follows the archive's failed and successful commits for the
	// log and /health; nil without archive.
	health *archiveHealth
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
		n.MarkMounted(HealthStore, store.ProtocolID)
	}
	// The store client is always mounted, as in nwaku
	// (waku/factory/node_factory.nim mountStoreClient).
	n.MarkMounted(HealthStoreClient, store.ProtocolID)
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
	for _, p := range n.host.Network().Peers() {
		if ok, _ := n.host.Peerstore().SupportsProtocols(p, store.ProtocolID); len(ok) > 0 {
			return p
		}
	}
	return ""
}
