package main

import (
	"slices"
	"testing"
)

// statusFleetENR is a Status fleet record from go-waku's enr tests
// (waku/v2/protocol/enr/enr_test.go): peer 16Uiu2HAkykgaECHswi3YKJ5dMLbq2kPVCo89fcyTd38UcQD6ej5W,
// an ip4 address and two dns4 multiaddrs.
const statusFleetENR = "enr:-QESuEC1p_s3xJzAC_XlOuuNrhVUETmfhbm1wxRGis0f7DlqGSw2FM-p2Ugl_r25UHQJ3f1rIRrpzxJXSMaJe4yk1XFSAYJpZIJ2NIJpcISygI2rim11bHRpYWRkcnO4XAArNiZub2RlLTAxLmRvLWFtczMud2FrdS50ZXN0LnN0YXR1c2ltLm5ldAZ2XwAtNiZub2RlLTAxLmRvLWFtczMud2FrdS50ZXN0LnN0YXR1c2ltLm5ldAYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQJATXRSRSUyTw_QLB6H_U3oziVQgNRgrXpK7wp2AMyNxYN0Y3CCdl-DdWRwgiMohXdha3UyDw"

// TestEntryNodes sorts --entry-node values as nwaku v0.38.1 does
// (tools/confutils/entry_nodes.nim processEntryNodes and its use in
// cli_args.nim).
func TestEntryNodes(t *testing.T) {
	clearNodeEnv(t)
	const peerID = "16Uiu2HAkykgaECHswi3YKJ5dMLbq2kPVCo89fcyTd38UcQD6ej5W"
	const tree = "enrtree://AOGYWMBYOUIMOENHXCHILPKY3ZRFEULMFI4DOM442QSZ73TT2A7VI@test.waku.nodes.status.im"
	o, err := parseNodeFlags([]string{
		"--staticnode=/ip4/10.0.0.1/tcp/1/p2p/" + peerID,
		"--entry-node=/ip4/10.0.0.2/tcp/2/p2p/" + peerID,
		"--entry-node=" + statusFleetENR,
		"--entry-node=ENRTREE://first@example.org",
		"--entry-node=" + tree,
		"--discv5-bootstrap-node=" + statusFleetENR,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	wantStatic := []string{
		"/ip4/10.0.0.1/tcp/1/p2p/" + peerID,
		"/ip4/10.0.0.2/tcp/2/p2p/" + peerID,
		"/ip4/178.128.141.171/tcp/30303/p2p/" + peerID,
		"/dns4/node-01.do-ams3.waku.test.statusim.net/tcp/30303/p2p/" + peerID,
		"/dns4/node-01.do-ams3.waku.test.statusim.net/tcp/8000/wss/p2p/" + peerID,
	}
	if !slices.Equal(c.StaticNodes, wantStatic) {
		t.Errorf("static nodes\n%q\nwant\n%q", c.StaticNodes, wantStatic)
	}
	if want := []string{statusFleetENR, statusFleetENR}; !slices.Equal(c.Discovery.Discv5BootstrapNodes, want) {
		t.Errorf("bootstrap nodes %d, want the entry's and the flag's", len(c.Discovery.Discv5BootstrapNodes))
	}
	// The last enrtree: entry is the one DNS discovery fetches.
	if !c.Discovery.DNSDiscovery || c.Discovery.DNSDiscoveryURL != tree {
		t.Errorf("dns discovery %v %q", c.Discovery.DNSDiscovery, c.Discovery.DNSDiscoveryURL)
	}

	// --dns-discovery-url wins over an entry, and alone turns DNS discovery on.
	o, err = parseNodeFlags([]string{"--entry-node=" + tree, "--dns-discovery-url=enrtree://KEY@other.example"})
	if err != nil || !o.cfg.Discovery.DNSDiscovery || o.cfg.Discovery.DNSDiscoveryURL != "enrtree://KEY@other.example" {
		t.Errorf("url given: %v %+v", err, o.cfg.Discovery)
	}
	// An unreadable record stays a bootstrap node only; node.Config's check reports it.
	o, err = parseNodeFlags([]string{"--entry-node=enr:-notarecord"})
	if err != nil || len(o.cfg.StaticNodes) != 0 || !slices.Equal(o.cfg.Discovery.Discv5BootstrapNodes, []string{"enr:-notarecord"}) {
		t.Errorf("bad record: %v %q %q", err, o.cfg.StaticNodes, o.cfg.Discovery.Discv5BootstrapNodes)
	}

	for arg, want := range map[string]string{
		"--entry-node=16Uiu2HAkykga":   "--entry-node=16Uiu2HAkykga: Entry node error: Unrecognized entry node format. Must start with 'enrtree:', 'enr:', or '/'",
		"--entry-node=":                "--entry-node=: Entry node error: Empty entry node address",
		"--entry-node=http://x.org/ab": "--entry-node=http://x.org/ab: Entry node error: Unrecognized entry node format. Must start with 'enrtree:', 'enr:', or '/'",
	} {
		if _, err := parseNodeFlags([]string{arg}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", arg, err, want)
		}
	}
}
