package node

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/archive"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/node/internal/resume"
	"github.com/couriernet/courier/store"
	"github.com/couriernet/courier/storesync"
)

// DefaultDBURL is nwaku's default --store-message-db-url
// (tools/confutils/cli_args.nim), used when Config.DBURL is empty and no
// DataDir is set.
const DefaultDBURL = "sqlite://store.sqlite3"

// segmentsSuffix names the directory of an sqlite://PATH archive's
// segments: PATH + segmentsSuffix, beside the index.
const segmentsSuffix = ".segments"

// archiveLocation is where the embedded archive of a database URL lives.
type archiveLocation struct {
	dir, index string // index "" means dir/index.db
	postgres   bool
}

// locateArchive resolves DBURL as nwaku's archive driver builder does
// (waku_archive/driver/builder.nim, common/databases/dburl.nim): the text
// after "sqlite://" is the SQLite file's path, relative to the working
// directory when it is not absolute. courier keeps its payload segments in
// PATH.segments beside it. "" means DataDir/archive, or DefaultDBURL
// without a DataDir; "embedded" means DataDir/archive.
func (c *Config) locateArchive() (archiveLocation, error) {
	u := c.DBURL
	switch {
	case u == "" && c.DataDir == "":
		u = DefaultDBURL
	case u == "" || u == "embedded":
		return archiveLocation{dir: filepath.Join(c.DataDir, "archive")}, nil
	case archive.IsPostgresURL(u):
		return archiveLocation{postgres: true}, nil
	}
	path, ok := strings.CutPrefix(u, "sqlite://")
	if !ok || path == "" {
		return archiveLocation{}, fmt.Errorf("%w: store-message-db-url %q: want sqlite://PATH or postgres://user:password@host:port/db", ErrConfig, u)
	}
	return archiveLocation{dir: path + segmentsSuffix, index: path}, nil
}

// openArchive opens the archive Config.DBURL names.
func (n *Node) openArchive() error {
	loc := n.cfg.archive
	cfg := n.cfg.ArchiveConfig
	n.metrics.ObserveArchive(&cfg)
	if cfg.Logger == nil {
		cfg.Logger = n.cfg.Logger.With("component", "archive")
	}
	if loc.postgres {
		a, err := archive.OpenURL(context.Background(), n.cfg.DBURL, cfg)
		if err != nil {
			return fmt.Errorf("node: open archive: %w", err)
		}
		n.archive = a
		n.cfg.Logger.Info("archive in Postgres", "retention", cfg.Retention)
		return nil
	}
	cfg.IndexPath = loc.index
	a, err := archive.Open(loc.dir, cfg)
	if err != nil {
		return fmt.Errorf("node: open archive in %s: %w", loc.dir, err)
	}
	n.archive = a
	index := loc.index
	if index == "" {
		index = filepath.Join(loc.dir, "index.db")
	}
	n.cfg.Logger.Info("embedded archive", "index", index, "segments", loc.dir, "retention", cfg.Retention)
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
