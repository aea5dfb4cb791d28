package node

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// refuseOwnStatic returns an error wrapping ErrConfig when a static node
// has the node's own peer id: libp2p never dials itself, so such a node
// (another one started with the same --nodekey) could never be reached.
func (n *Node) refuseOwnStatic(self peer.ID) error {
	peers, err := n.cfg.staticPeers()
	if err != nil {
		return err
	}
	for i, pi := range peers {
		if pi.ID == self {
			return fmt.Errorf("%w: --staticnode %s has this node's own peer id: two nodes with the same node key (--nodekey, or a copied DataDir/nodekey) cannot connect; give each node its own key",
				ErrConfig, n.cfg.StaticNodes[i])
		}
	}
	return nil
}

// sameID warns that a peer learned from origin presents the node's own
// peer id at addresses that are not the node's own: another node runs with
// the same node key, and the peers that know both reach one or the other
// at random. The first such peer is a warning, later ones are logged at
// debug level; the node's own record, found by discovery, is not logged.
func (n *Node) sameID(addrs []ma.Multiaddr, origin string) {
	own := map[string]bool{}
	for _, a := range append(n.host.Addrs(), n.host.Network().ListenAddresses()...) {
		own[addrKey(a.String())] = true
	}
	for _, a := range n.announcedAddresses() {
		own[addrKey(a)] = true
	}
	var other []string
	for _, a := range addrs {
		if !own[addrKey(a.String())] {
			other = append(other, a.String())
		}
	}
	if len(other) == 0 {
		return
	}
	log := n.cfg.Logger.Debug
	if n.sameIDWarned.CompareAndSwap(false, true) {
		log = n.cfg.Logger.Warn
	}
	log("a peer presents this node's own peer id: another node runs with the same node key (--nodekey); give each node its own key",
		"peer", n.host.ID(), "addrs", strings.Join(other, ","), "origin", origin)
}

// addrKey is a multiaddr as text without /p2p/<id>, /tls/ws written /wss.
func addrKey(s string) string {
	s, _, _ = strings.Cut(strings.Replace(s, "/tls/ws", "/wss", 1), "/p2p/")
	return s
}
