package peers

import (
	"strings"

	ma "github.com/multiformats/go-multiaddr"
)

// sameID warns that a peer learned from origin presents the node's own
// peer id at addresses that are not the node's own: another node runs with
// the same node key, and the peers that know both reach one or the other
// at random. The first such peer is a warning, later ones are logged at
// debug level; the node's own record, found by discovery, is not logged.
func (m *Manager) sameID(addrs []ma.Multiaddr, origin string) {
	own := map[string]bool{}
	for _, a := range append(m.h.Addrs(), m.h.Network().ListenAddresses()...) {
		own[addrKey(a.String())] = true
	}
	for _, a := range m.Announced() {
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
	log := m.log.Debug
	if m.sameIDWarned.CompareAndSwap(false, true) {
		log = m.log.Warn
	}
	log("a peer presents this node's own peer id: another node runs with the same node key (--nodekey); give each node its own key",
		"peer", m.h.ID(), "addrs", strings.Join(other, ","), "origin", origin)
}
