package node

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/couriernet/courier/archive/dburl"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/rest"
	"github.com/couriernet/courier/store"
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
	loc, err := n.cfg.locateArchive()
	if err != nil {
		return err
	}
	cfg := n.cfg.ArchiveConfig
	n.nwaku.observeArchive(&cfg.Config)
	n.indexCommits(&cfg.Config)
	n.archiveHealth = newArchiveHealth(n.cfg.Logger.With("component", "archive"))
	n.archiveHealth.observe(&cfg.Config)
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
// (the REST API's and courier query's) asks by default.
type storeParts struct {
	server *store.Server
	peer   peer.ID // --storenode, "" when not set
}

// buildStore mounts the store server over the archive when Store is on,
// with the --rate-limit setting for store, and keeps --storenode's address.
func (n *Node) buildStore() error {
	if n.archive != nil {
		limits, err := ratelimit.Parse(n.cfg.RateLimit)
		if err != nil {
			return fmt.Errorf("%w: --rate-limit: %w", ErrConfig, err)
		}
		n.store.server, err = store.NewServer(n.host, n.archive, store.Config{
			RateLimit: limits.Get(ratelimit.StoreV3), Logger: n.cfg.Logger.With("protocol", "store"),
		})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		n.MarkMounted(HealthStore, store.ProtocolID)
	}
	// The store client is always mounted, as in nwaku
	// (waku/factory/node_factory.nim mountStoreClient).
	n.MarkMounted(HealthStoreClient, store.ProtocolID)
	if n.cfg.StoreNode != "" {
		var err error
		if n.store.peer, err = n.addServicePeer("storenode", n.cfg.StoreNode); err != nil {
			return err
		}
	}
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

// StoreLocal implements rest.StoreBackend: the node's own archive.
func (b restBackend) StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error) {
	if b.n.store.server == nil {
		return nil, rest.ErrNoLocalStore
	}
	return store.Answer(ctx, b.n.archive, req)
}

// StoreRemote implements rest.StoreBackend: peerAddr, else StorePeer.
func (b restBackend) StoreRemote(ctx context.Context, peerAddr string, req *store.Request) (*store.Response, error) {
	n := b.n
	p := n.StorePeer()
	if peerAddr != "" {
		addr, err := ma.NewMultiaddr(peerAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", rest.ErrPeerAddr, err)
		}
		pi, err := peer.AddrInfoFromP2pAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", rest.ErrPeerAddr, err)
		}
		if n.host.Network().Connectedness(pi.ID) != network.Connected {
			n.host.Peerstore().AddAddrs(pi.ID, pi.Addrs, peerstore.TempAddrTTL)
		}
		p = pi.ID
	}
	if p == "" {
		return nil, rest.ErrNoStorePeer
	}
	return store.Query(ctx, n.host, p, req, n.cfg.Counters)
}
