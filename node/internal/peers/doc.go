// Package peers is the node's peer management: the peer manager that
// keeps the node at its target of relay peers (nwaku v0.38.1's
// PeerManager, waku/node/peer_manager/peer_manager.nim), the static
// nodes' re-dials, what the node knows of each peer (origin,
// connectedness, shards), the peers kept across restarts, discovery (the
// node's ENR, discv5, DNS discovery, peer exchange), the libp2p host the
// peers reach the node through (NewHost) with its resource manager
// (ResourceManager) and the addresses it listens on and announces.
//
// A Manager works over a libp2p host and a Config the node resolved from
// its own configuration; it holds no reference to the node. New makes it,
// Start signs the ENR and starts discovery, Run starts the loops, Close
// ends them and releases what Start made.
package peers
