package node

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/couriernet/courier/node/state"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/p2p/dnsdisc"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/miekg/dns"

	"github.com/couriernet/courier/discovery"
)

// serveTree serves tree's TXT records for domain from a DNS server on
// 127.0.0.1 and returns its address.
func serveTree(t *testing.T, tree *dnsdisc.Tree, domain string) string {
	t.Helper()
	records := tree.ToTXT(domain)
	return serveDNS(t, func(m *dns.Msg, q dns.Question) {
		if txt, ok := records[strings.TrimSuffix(q.Name, ".")]; ok && q.Qtype == dns.TypeTXT {
			var parts []string
			for len(txt) > 255 {
				parts, txt = append(parts, txt[:255]), txt[255:]
			}
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: append(parts, txt)})
		}
	})
}

// serveDNS runs a DNS server on 127.0.0.1 until the test ends and returns
// its address; answer fills the reply to each question.
func serveDNS(t *testing.T, answer func(m *dns.Msg, q dns.Question)) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		for _, q := range req.Question {
			answer(m, q)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// TestDNSDiscoveryConnects: a node given only an enrtree URL and a name
// server on 127.0.0.1 connects to the tree's nodes, origin Dns; a tree
// with a bad signature is refused, logged and counted.
func TestDNSDiscoveryConnects(t *testing.T) {
	a, b := discv5Node(t, 16), discv5Node(t, 16)
	var nodes []*enode.Node
	for _, n := range []*Node{a, b} {
		en, err := discovery.ParseENR(n.ENR())
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, en)
	}
	tree, err := dnsdisc.MakeTree(1, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := gcrypto.GenerateKey()
	url, err := tree.Sign(key, "nodes.test")
	if err != nil {
		t.Fatal(err)
	}
	ns := serveTree(t, tree, "nodes.test")
	cfg := Config{ListenAddress: "127.0.0.1", Relay: true, ClusterID: 16,
		Discovery: DiscoveryConfig{DNSDiscovery: true, DNSDiscoveryURL: url, DNSNameServers: []string{ns}}}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop(context.Background())
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range []*Node{a, b} {
		for n.Host().Network().Connectedness(o.Host().ID()) != network.Connected || n.peers.Origin(o.Host().ID()) != state.DNS {
			if time.Now().After(deadline) {
				t.Fatalf("not connected to %s (origin %s), stats %+v", o.Host().ID(), n.peers.Origin(o.Host().ID()), n.PeerStats())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	other, _ := gcrypto.GenerateKey()
	if _, err := tree.Sign(other, "nodes.test"); err != nil {
		t.Fatal(err)
	}
	bad := serveTree(t, tree, "nodes.test")
	cfg.Discovery.DNSNameServers = []string{bad}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop(context.Background())
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := m.PeerStats(); st.DNSFailures != 1 || st.Added != 0 {
		t.Errorf("bad signature: stats %+v", st)
	}
}

// serveA answers A queries for the names in addrs from a DNS server on
// 127.0.0.1 (NXDOMAIN for others) and returns its address.
func serveA(t *testing.T, addrs map[string]string) string {
	t.Helper()
	return serveDNS(t, func(m *dns.Msg, q dns.Question) {
		ip, ok := addrs[strings.TrimSuffix(q.Name, ".")]
		if !ok {
			m.Rcode = dns.RcodeNameError
			return
		}
		if q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ip)})
		}
	})
}

// TestDNS4DomainNameResolved: as nwaku (waku/factory/internal_config.nim),
// --dns4-domain-name is resolved at start and its address is the ENR's ip,
// --nat=extip: wins over it, and a name that does not resolve fails the
// start.
func TestDNS4DomainNameResolved(t *testing.T) {
	ns := serveA(t, map[string]string{"node.example.org": "203.0.113.9"})
	for _, tc := range []struct {
		name, domain, nat, wantIP, wantErr string
	}{
		{name: "resolved", domain: "node.example.org", wantIP: "203.0.113.9"},
		{name: "extip wins", domain: "node.example.org", nat: "extip:198.51.100.4", wantIP: "198.51.100.4"},
		{name: "unknown name", domain: "nowhere.example.org", wantErr: "--dns4-domain-name nowhere.example.org: could not resolve the external IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ListenAddress: "127.0.0.1", Relay: true}
			cfg.Discovery = DiscoveryConfig{NAT: tc.nat, DNS4DomainName: tc.domain, DNSNameServers: []string{ns}}
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer n.Stop(context.Background())
			err = n.Start(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, discovery.ErrDNS) {
					t.Fatalf("start: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			en, err := discovery.ParseENR(n.ENR())
			if err != nil {
				t.Fatal(err)
			}
			if got := en.IP(); got == nil || got.String() != tc.wantIP {
				t.Errorf("ENR ip %v, want %s", got, tc.wantIP)
			}
		})
	}
}
