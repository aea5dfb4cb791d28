package peerexchange

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/couriernet/courier/discovery"
	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/internal/ratelimit"
	"github.com/couriernet/courier/peerexchange/internal/wire"
)

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func connect(t *testing.T, a, b host.Host) {
	t.Helper()
	if err := a.Connect(context.Background(), peer.AddrInfo{ID: b.ID(), Addrs: b.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, port int) *enode.Node {
	t.Helper()
	key, _ := gcrypto.GenerateKey()
	rec, err := discovery.NewLocalRecord(key, discovery.RecordConfig{IP: net.IPv4(127, 0, 0, 1), TCPPort: port, Caps: discovery.Relay,
		Shards: discovery.RelayShards{ClusterID: 16, Shards: []uint16{0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	return rec.Node()
}

func TestServerSamplesAndClientDecodes(t *testing.T) {
	var pool []*enode.Node
	for i := range 70 {
		pool = append(pool, record(t, 1000+i))
	}
	server, client := newHost(t), newHost(t)
	s := NewServer(server, Config{Peers: func() []*enode.Node { return pool }})
	defer s.Close()
	connect(t, client, server)
	c := NewClient(client, nil)
	for _, tc := range []struct{ ask, want int }{{0, DefaultNumPeers}, {3, 3}, {100, MaxPeers}} {
		got, err := c.Request(context.Background(), server.ID(), uint64(tc.ask))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Errorf("asked %d: %d peers, want %d", tc.ask, len(got), tc.want)
		}
		ids := map[peer.ID]bool{}
		for _, p := range got {
			if ids[p.ID] || !p.Shards.Contains(16, 0) || p.Caps != discovery.Relay {
				t.Errorf("peer %+v", p)
			}
			ids[p.ID] = true
		}
	}
	if st := s.Stats(); st.Requests != 3 || st.PeersSent != DefaultNumPeers+3+MaxPeers {
		t.Errorf("server stats %+v", st)
	}
}

// TestClientRejectsGarbageENRs: a server answering with garbage, an
// oversize record and one whose signature is not its key's gets those
// records rejected one by one, counted, and the good one kept.
func TestClientRejectsGarbageENRs(t *testing.T) {
	good := record(t, 1)
	goodRaw, _ := rlp.EncodeToBytes(good.Record())
	forged := slices.Clone(goodRaw)
	forged[len(forged)-1] ^= 1 // inside the signed content: the signature fails
	server, client := newHost(t), newHost(t)
	server.SetStreamHandler(ProtocolID, func(st network.Stream) {
		defer st.Close()
		lpframe.Read(st, MaxRPCSize)
		lpframe.Write(st, wire.EncodeResponse(wire.Response{StatusCode: 200, ENRs: [][]byte{{0xc0}, []byte("garbage"), make([]byte, 400), forged, goodRaw}}))
	})
	connect(t, client, server)
	c := NewClient(client, nil)
	got, err := c.Request(context.Background(), server.ID(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Node.ID() != good.ID() {
		t.Fatalf("kept %d peers", len(got))
	}
	if st := c.Stats(); st.Rejected != 4 || st.Received != 1 {
		t.Errorf("client stats %+v", st)
	}
}

func TestServerBadRequestAndRateLimit(t *testing.T) {
	server, client := newHost(t), newHost(t)
	s := NewServer(server, Config{RateLimit: ratelimit.Setting{Volume: 2, Period: time.Hour}})
	defer s.Close()
	connect(t, client, server)
	ask := func(req []byte) wire.Response {
		st, err := client.NewStream(context.Background(), server.ID(), ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		lpframe.Write(st, req)
		b, err := lpframe.Read(st, MaxRPCSize)
		if err != nil {
			t.Fatal(err)
		}
		rpc, err := wire.DecodeRPC(b)
		if err != nil || !rpc.HasQuery {
			t.Fatalf("%+v %v", rpc, err)
		}
		return rpc.Response
	}
	if r := ask([]byte{0x12, 0x00}); r.StatusCode != wire.StatusBadRequest {
		t.Errorf("no query: %d", r.StatusCode)
	}
	codes := []uint32{}
	for range 4 {
		codes = append(codes, ask(wire.EncodeRequest(1)).StatusCode)
	}
	if codes[len(codes)-1] != wire.StatusTooManyRequests {
		t.Errorf("codes %v, want the last 429", codes)
	}
	if _, err := NewClient(client, nil).Request(context.Background(), server.ID(), 1); !errors.Is(err, ErrStatus) {
		t.Errorf("client over the limit: %v", err)
	}
}

// TestServerClose: Close resets an exchange in progress (a client that
// never sends its request) and waits for its handler; a second Close
// returns nil, and a request after Close gets no answer.
func TestServerClose(t *testing.T) {
	server, client := newHost(t), newHost(t)
	s := NewServer(server, Config{})
	connect(t, client, server)
	st, err := client.NewStream(context.Background(), server.ID(), ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Reset()
	st.Write([]byte{0x05}) // a length prefix, then nothing: the handler waits for the frame
	for s.Stats().Requests == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(DefaultTimeout / 2):
		t.Fatal("Close waited for the stalled request's deadline instead of resetting it")
	}
	if st := s.Stats(); st.BadRequests != 1 {
		t.Fatalf("Close returned before the handler did: %+v", st)
	}
	if _, err := lpframe.Read(st, MaxRPCSize); err == nil {
		t.Fatal("the stalled exchange was answered after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := NewClient(client, nil).Request(context.Background(), server.ID(), 1); err == nil {
		t.Fatal("a request was answered after Close")
	}
}
