// Package membership follows the RLN membership contract on an Ethereum
// chain, as nwaku v0.38.1's on-chain group manager does
// (waku/waku_rln_relay/group_manager/on_chain/group_manager.nim and
// rpc_wrapper.nim): statelessly, by reading the contract's Merkle root
// rather than rebuilding the tree.
//
// A Client calls the contract over the endpoints of
// --rln-relay-eth-client-address (HTTP or WebSocket JSON-RPC through
// go-ethereum's ethclient, repeatable: the first that answers is used and
// the others take over in order when it fails), checks the chain id
// (--rln-relay-chain-id, or the first endpoint's), and registers
// memberships: register(idCommitment, userMessageLimit, []) with the
// membership index read from the MembershipRegistered event, after an
// approval of the token deposit when asked for (RegisterOptions.Approve,
// courier's addition: nwaku's register sends none).
//
// A Manager polls root() every 5 s into a Window of acceptable roots (the
// current one and AcceptableRootWindowSize before it), refetches the
// node's own Merkle path (getMerkleProof) and nextFreeIndex when the root
// changes, and reports its state through Health. Its AcceptableRoot is the
// relay validator's root check: lock-free and allocation-free.
//
// Field elements (roots, path elements, id commitments) are 32 bytes
// little-endian, as the RateLimitProof and nwaku's keystore carry them;
// the contract's uint256 values are converted at the boundary.
package membership
