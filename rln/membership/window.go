package membership

import "encoding/binary"

// AcceptableRootWindowSize is nwaku's window of acceptable Merkle roots
// (waku_rln_relay/constants.nim). nwaku's updateRoots
// (group_manager/on_chain/group_manager.nim) drops the oldest root only when
// it already holds more than this many and then appends the new one, so it
// accepts the current root and the AcceptableRootWindowSize roots before it:
// 51 in all. A Window holds exactly those, so that courier accepts every
// root an nwaku neighbour accepts.
const AcceptableRootWindowSize = 50

// windowCap is the number of roots a Window holds (see
// AcceptableRootWindowSize).
const windowCap = AcceptableRootWindowSize + 1

// Window is an immutable snapshot of the acceptable Merkle roots, oldest
// first, each 32 bytes little-endian as a RateLimitProof carries it. A
// Manager publishes a new Window when the contract's root changes; a
// *Window once returned never changes, so it may be kept and read from any
// goroutine without a lock. The nil *Window holds no root.
type Window struct {
	roots [][32]byte
	heads []uint64 // the first 8 bytes of each root, scanned before a full compare
}

// Contains reports whether root (the 32 bytes of a RateLimitProof's
// merkle_root field, little-endian) is one of w's roots. Any other length
// is not contained. It does not allocate and does not keep root.
func (w *Window) Contains(root []byte) bool {
	if w == nil || len(root) != 32 {
		return false
	}
	head := binary.LittleEndian.Uint64(root)
	for i := len(w.heads) - 1; i >= 0; i-- { // newest first: the likeliest
		if w.heads[i] == head && w.roots[i] == [32]byte(root) {
			return true
		}
	}
	return false
}

// Len returns the number of roots in w, at most AcceptableRootWindowSize+1.
func (w *Window) Len() int {
	if w == nil {
		return 0
	}
	return len(w.roots)
}

// Latest returns the newest root, the contract's root when w was made, and
// false when w is empty.
func (w *Window) Latest() ([32]byte, bool) {
	if w.Len() == 0 {
		return [32]byte{}, false
	}
	return w.roots[len(w.roots)-1], true
}

// Roots returns a copy of w's roots, oldest first, each 32 bytes
// little-endian; the caller owns it.
func (w *Window) Roots() [][32]byte {
	if w == nil {
		return nil
	}
	return append([][32]byte(nil), w.roots...)
}

// with returns the window after the contract's root became root, as
// nwaku's updateRoots: unchanged (and false) when root is already the
// newest, otherwise root appended and the oldest dropped beyond windowCap.
func (w *Window) with(root [32]byte) (*Window, bool) {
	if latest, ok := w.Latest(); ok && latest == root {
		return w, false
	}
	var old [][32]byte
	if w != nil {
		old = w.roots
	}
	if len(old) >= windowCap {
		old = old[len(old)-windowCap+1:]
	}
	roots := make([][32]byte, len(old), len(old)+1)
	copy(roots, old)
	roots = append(roots, root)
	heads := make([]uint64, len(roots))
	for i := range roots {
		heads[i] = binary.LittleEndian.Uint64(roots[i][:8])
	}
	return &Window{roots: roots, heads: heads}, true
}
