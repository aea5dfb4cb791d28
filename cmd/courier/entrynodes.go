package main

import (
	"fmt"
	"strings"

	"github.com/couriernet/courier/discovery"
)

// entryNodes is nwaku's --entry-node (tools/confutils/entry_nodes.nim):
// each value is classified by its prefix and given to the mechanism that
// reads it.
type entryNodes struct {
	enrTreeURLs    []string // enrtree: URLs, for DNS discovery
	bootstrapENRs  []string // enr: records, for discv5
	staticFromENRs []string // the addresses of those records, with /p2p/<id>
	staticNodes    []string // multiaddrs
}

// parseEntryNodes classifies values as nwaku does: "enrtree:" and "enr:"
// (any case) and a leading "/" (a multiaddr); anything else, or an empty
// value, is an error. A record's addresses become static nodes when it
// can be read; an unreadable record stays a bootstrap node only, as in
// nwaku, and the discv5 configuration check reports it.
func parseEntryNodes(values []string) (entryNodes, error) {
	var e entryNodes
	for _, v := range values {
		lower := strings.ToLower(v)
		switch {
		case v == "":
			return e, fmt.Errorf("Entry node error: Empty entry node address")
		case strings.HasPrefix(lower, "enrtree:"):
			e.enrTreeURLs = append(e.enrTreeURLs, v)
		case strings.HasPrefix(lower, "enr:"):
			e.bootstrapENRs = append(e.bootstrapENRs, v)
			e.staticFromENRs = append(e.staticFromENRs, enrAddrs(v)...)
		case v[0] == '/':
			e.staticNodes = append(e.staticNodes, v)
		default:
			return e, fmt.Errorf("Entry node error: Unrecognized entry node format. Must start with 'enrtree:', 'enr:', or '/'")
		}
	}
	return e, nil
}

// enrAddrs returns the libp2p addresses of the record text, each with
// /p2p/<peer id>, or none when the record cannot be read.
func enrAddrs(text string) []string {
	n, err := discovery.ParseENR(text)
	if err != nil {
		return nil
	}
	p, err := discovery.DecodePeer(n)
	if err != nil {
		return nil
	}
	out := make([]string, len(p.Addrs))
	for i, a := range p.Addrs {
		out[i] = a.String() + "/p2p/" + p.ID.String()
	}
	return out
}

// apply adds the entry nodes to the options as nwaku's configuration
// builder does (tools/confutils/cli_args.nim): static nodes after
// --staticnode, bootstrap records before --discv5-bootstrap-node, and the
// last enrtree: URL for DNS discovery unless --dns-discovery-url names one.
func (e entryNodes) apply(o *nodeOptions) {
	c := &o.cfg
	c.StaticNodes = append(append(c.StaticNodes, e.staticNodes...), e.staticFromENRs...)
	c.Discovery.Discv5BootstrapNodes = append(e.bootstrapENRs, c.Discovery.Discv5BootstrapNodes...)
	if n := len(e.enrTreeURLs); n > 0 && c.Discovery.DNSDiscoveryURL == "" {
		c.Discovery.DNSDiscoveryURL = e.enrTreeURLs[n-1]
		c.Discovery.DNSDiscovery = true
	}
}
