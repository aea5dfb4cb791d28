package discovery

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/p2p/dnsdisc"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/miekg/dns"

	"github.com/couriernet/courier/internal/testwait"
)

// serveTXT starts a DNS server on 127.0.0.1 (UDP, a free port) that
// answers TXT queries from records (names without the trailing dot) and
// returns its address.
func serveTXT(t *testing.T, records map[string]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		for _, q := range req.Question {
			txt, ok := records[strings.TrimSuffix(q.Name, ".")]
			if q.Qtype != dns.TypeTXT || !ok {
				continue
			}
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: splitTXT(txt)})
		}
		if len(m.Answer) == 0 {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String()
}

// splitTXT splits s into strings of at most 255 bytes, as TXT needs.
func splitTXT(s string) []string {
	var out []string
	for len(s) > 255 {
		out, s = append(out, s[:255]), s[255:]
	}
	return append(out, s)
}

func wakuRecords(t *testing.T, n int) []*enode.Node {
	t.Helper()
	var out []*enode.Node
	for i := range n {
		key, _ := gcrypto.GenerateKey()
		rec, err := NewLocalRecord(key, RecordConfig{IP: net.IPv4(127, 0, 0, 1), TCPPort: 60000 + i, Caps: Relay | Store,
			Shards: RelayShards{ClusterID: 16, Shards: []uint16{0}}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Node())
		rec.Close()
	}
	return out
}

func signedTree(t *testing.T, nodes []*enode.Node, key *ecdsa.PrivateKey, domain string) (*dnsdisc.Tree, string) {
	t.Helper()
	tree, err := dnsdisc.MakeTree(1, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	url, err := tree.Sign(key, domain)
	if err != nil {
		t.Fatal(err)
	}
	return tree, url
}

// TestResolveTree serves a tree signed with go-ethereum's dnsdisc from a
// real DNS server on 127.0.0.1 and reads it back.
func TestResolveTree(t *testing.T) {
	nodes := wakuRecords(t, 5)
	key, _ := gcrypto.GenerateKey()
	tree, url := signedTree(t, nodes, key, "nodes.example.org")
	ns := serveTXT(t, tree.ToTXT("nodes.example.org"))
	// The first name server does not answer; the second does.
	dead, _ := net.ListenPacket("udp", "127.0.0.1:0")
	deadAddr := dead.LocalAddr().String()
	dead.Close()
	peers, malformed, err := ResolveTree(context.Background(), url, DNSConfig{NameServers: []string{deadAddr, ns}, Timeout: 500 * time.Millisecond})
	if err != nil || malformed != 0 {
		t.Fatalf("%v, %d malformed", err, malformed)
	}
	var got, want []string
	for _, p := range peers {
		got = append(got, p.Node.ID().String())
		if p.Caps != Relay|Store || !p.Shards.Contains(16, 0) || len(p.Addrs) != 1 {
			t.Errorf("peer %+v", p)
		}
	}
	for _, n := range nodes {
		want = append(want, n.ID().String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

// TestResolveTreeBadSignature: a tree whose root is signed by another key
// than the URL names is refused.
func TestResolveTreeBadSignature(t *testing.T) {
	nodes := wakuRecords(t, 2)
	named, _ := gcrypto.GenerateKey()
	signer, _ := gcrypto.GenerateKey()
	tree, url := signedTree(t, nodes, named, "nodes.example.org")
	if _, err := tree.Sign(signer, "nodes.example.org"); err != nil {
		t.Fatal(err)
	}
	ns := serveTXT(t, tree.ToTXT("nodes.example.org"))
	_, _, err := ResolveTree(context.Background(), url, DNSConfig{NameServers: []string{ns}, Timeout: 500 * time.Millisecond})
	if !errors.Is(err, ErrDNS) || !strings.Contains(err.Error(), "signature") {
		t.Fatalf("err %v, want a signature failure", err)
	}
	if _, _, err := ResolveTree(context.Background(), url, DNSConfig{NameServers: []string{"localhost:53"}}); !errors.Is(err, ErrDNS) {
		t.Errorf("name server by name: %v", err)
	}
}

// silentNameServer reads DNS queries on 127.0.0.1 and never answers; asked
// receives a value for each query read (dropped when full). It returns its
// address.
func silentNameServer(t *testing.T, asked chan<- struct{}) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			select {
			case asked <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// TestResolveHonoursContext: with a name server that never answers and an
// hour's lookup timeout, ResolveTree and ResolveIPv4 return as soon as
// their context is cancelled, with an error wrapping context.Canceled and
// ErrDNS.
func TestResolveHonoursContext(t *testing.T) {
	_, url := signedTree(t, wakuRecords(t, 1), func() *ecdsa.PrivateKey { k, _ := gcrypto.GenerateKey(); return k }(), "nodes.example.org")
	for _, tt := range []struct {
		name    string
		resolve func(ctx context.Context, cfg DNSConfig) error
	}{
		{"ResolveTree", func(ctx context.Context, cfg DNSConfig) error { _, _, err := ResolveTree(ctx, url, cfg); return err }},
		{"ResolveIPv4", func(ctx context.Context, cfg DNSConfig) error {
			_, err := ResolveIPv4(ctx, "node.example.org", cfg)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			cfg := DNSConfig{NameServers: []string{silentNameServer(t, asked), silentNameServer(t, asked)}, Timeout: time.Hour}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- tt.resolve(ctx, cfg) }()
			testwait.Recv(t, asked, "a query at the name server")
			cancel()
			err := testwait.Recv(t, errc, tt.name+" to return once cancelled")
			if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrDNS) {
				t.Fatalf("error %v, want context.Canceled and ErrDNS", err)
			}
		})
	}
}
