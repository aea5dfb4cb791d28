package node

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// refuseOwnStatic returns an error wrapping ErrConfig when a static node
// has the node's own peer id: libp2p never dials itself, so such a node
// (another one started with the same --nodekey) could never be reached.
func (n *Node) refuseOwnStatic(self peer.ID) error {
	for i, pi := range n.cfg.peers.Static {
		if pi.ID == self {
			return fmt.Errorf("%w: --staticnode %s has this node's own peer id: two nodes with the same node key (--nodekey, or a copied DataDir/nodekey) cannot connect; give each node its own key",
				ErrConfig, n.cfg.StaticNodes[i])
		}
	}
	return nil
}
