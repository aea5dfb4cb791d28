package rln

import (
	"errors"
	"fmt"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
)

// TreeDepth is the depth of the membership Merkle tree the circuit proves
// against (nwaku MerkleTreeDepth, constants.nim; zerokit
// resources/tree_depth_20): 2^20 leaves.
const TreeDepth = 20

// ErrPath is wrapped by the errors about Merkle paths.
var ErrPath = errors.New("rln: invalid Merkle path")

// MerklePath is a membership's authentication path in the Poseidon Merkle
// tree (Poseidon(left, right) per level, empty leaves 0; zerokit
// compute_tree_root, rln/src/protocol.rs): Index is the leaf index, the
// membership index the contract assigns (below 2^TreeDepth; its bit i,
// least significant first, says whether the node at level i is a right
// child, nwaku uint64ToIndex), and Siblings the sibling hashes from the
// leaf's level up. The contract's getMerkleProof returns the siblings as
// big-endian uint256s: convert each with FieldFromBigEndian.
type MerklePath struct {
	Index    uint64
	Siblings [TreeDepth]Field
}

// Root returns the root of the tree that has leaf (a RateCommitment) at
// p.Index with p.Siblings. Errors wrap ErrPath: an index of 2^TreeDepth or
// more, or a non-canonical leaf or sibling.
func (p *MerklePath) Root(leaf Field) (Field, error) {
	if p.Index >= 1<<TreeDepth {
		return Field{}, fmt.Errorf("%w: index %d not below 2^%d", ErrPath, p.Index, TreeDepth)
	}
	node, ok := leaf.element()
	if !ok {
		return Field{}, fmt.Errorf("%w: leaf not below the field modulus", ErrPath)
	}
	for i := range p.Siblings {
		s, ok := p.Siblings[i].element()
		if !ok {
			return Field{}, fmt.Errorf("%w: sibling %d not below the field modulus", ErrPath, i)
		}
		if p.Index>>i&1 == 0 {
			node = poseidonHash(node, s)
		} else {
			node = poseidonHash(s, node)
		}
	}
	return fieldOf(&node), nil
}

// indexBits returns the path's direction bits as circuit inputs
// (identityPathIndex), least significant first.
func (p *MerklePath) indexBits() []fr.Element {
	bits := make([]fr.Element, TreeDepth)
	for i := range bits {
		bits[i].SetUint64(p.Index >> i & 1)
	}
	return bits
}
