package discovery

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"

	gcrypto "github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/p2p/enode"
	"github.com/ethereum/go-ethereum/p2p/enr"
	"github.com/ethereum/go-ethereum/rlp"
	ma "github.com/multiformats/go-multiaddr"
)

// statusFleetENR is a record of a Status fleet node published with go-waku's
// enr tests (waku/v2/protocol/enr/enr_test.go): waku2 0x0f, rs cluster 1
// shards 0..7, two dns4 multiaddrs.
const statusFleetENR = "enr:-QESuEC1p_s3xJzAC_XlOuuNrhVUETmfhbm1wxRGis0f7DlqGSw2FM-p2Ugl_r25UHQJ3f1rIRrpzxJXSMaJe4yk1XFSAYJpZIJ2NIJpcISygI2rim11bHRpYWRkcnO4XAArNiZub2RlLTAxLmRvLWFtczMud2FrdS50ZXN0LnN0YXR1c2ltLm5ldAZ2XwAtNiZub2RlLTAxLmRvLWFtczMud2FrdS50ZXN0LnN0YXR1c2ltLm5ldAYfQN4DgnJzkwABCAAAAAEAAgADAAQABQAGAAeJc2VjcDI1NmsxoQJATXRSRSUyTw_QLB6H_U3oziVQgNRgrXpK7wp2AMyNxYN0Y3CCdl-DdWRwgiMohXdha3UyDw"

func TestDecodePeer_StatusFleetRecord(t *testing.T) {
	n, err := ParseENR(statusFleetENR)
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodePeer(n)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ID.String(), "16Uiu2HAkykgaECHswi3YKJ5dMLbq2kPVCo89fcyTd38UcQD6ej5W"; got != want {
		t.Errorf("peer id %s, want %s", got, want)
	}
	want := []string{
		"/ip4/178.128.141.171/tcp/30303",
		"/dns4/node-01.do-ams3.waku.test.statusim.net/tcp/30303",
		"/dns4/node-01.do-ams3.waku.test.statusim.net/tcp/8000/wss",
	}
	if got := addrStrings(p.Addrs); !slices.Equal(got, want) {
		t.Errorf("addrs %q, want %q", got, want)
	}
	if !p.HasCaps || p.Caps != Relay|Store|Filter|Lightpush || p.Caps.String() != "relay,store,filter,lightpush" {
		t.Errorf("caps %v (%v)", p.Caps, p.HasCaps)
	}
	if !p.HasShards || p.Shards.ClusterID != 1 || !slices.Equal(p.Shards.Shards, []uint16{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("shards %+v (%v)", p.Shards, p.HasShards)
	}
}

func addrStrings(as []ma.Multiaddr) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

func TestRelayShards_EncodeSmaller(t *testing.T) {
	for _, tc := range []struct {
		n    int
		key  string
		size int
	}{{1, ShardListKey, 5}, {63, ShardListKey, 129}, {64, ShardVectorKey, 130}, {1024, ShardVectorKey, 130}} {
		rs := RelayShards{ClusterID: 16}
		for i := range tc.n {
			rs.Shards = append(rs.Shards, uint16(i))
		}
		k, v, err := rs.Encode()
		if err != nil || k != tc.key || len(v) != tc.size {
			t.Errorf("%d shards: %s of %d bytes, %v; want %s of %d", tc.n, k, len(v), err, tc.key, tc.size)
			continue
		}
		decode := DecodeShardList
		if k == ShardVectorKey {
			decode = DecodeShardVector
		}
		got, err := decode(v)
		if err != nil || got.ClusterID != 16 || !slices.Equal(got.Shards, rs.Shards) {
			t.Errorf("%d shards: round trip %+v, %v", tc.n, got, err)
		}
	}
	// nwaku toBitVector: shard 0 is bit 0 of byte 2, shard 1023 bit 7 of byte 129.
	_, v, _ := RelayShards{ClusterID: 1, Shards: make([]uint16, 64)}.Encode()
	if v[0] != 0 || v[1] != 1 || v[2] != 1 {
		t.Errorf("rsv head % x", v[:3])
	}
	if _, _, err := (RelayShards{Shards: []uint16{1024}}).Encode(); !errors.Is(err, ErrMalformed) {
		t.Errorf("shard 1024: %v", err)
	}
}

func TestDecodeShardFields_Malformed(t *testing.T) {
	for _, b := range [][]byte{nil, {0, 1}, {0, 1, 2, 0, 1}, {0, 1, 1, 0x04, 0x00}, {0, 1, 0, 9}} {
		if _, err := DecodeShardList(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("rs % x: %v", b, err)
		}
	}
	for _, n := range []int{0, 2, 129, 131} {
		if _, err := DecodeShardVector(make([]byte, n)); !errors.Is(err, ErrMalformed) {
			t.Errorf("rsv of %d bytes: %v", n, err)
		}
	}
}

func TestMultiaddrs_RoundTripAndMalformed(t *testing.T) {
	in := []ma.Multiaddr{
		ma.StringCast("/dns4/example.org/tcp/443/wss/p2p/16Uiu2HAkykgaECHswi3YKJ5dMLbq2kPVCo89fcyTd38UcQD6ej5W"),
		ma.StringCast("/ip4/10.0.0.1/tcp/8000/ws"),
	}
	b := EncodeMultiaddrs(in)
	got, err := DecodeMultiaddrs(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/dns4/example.org/tcp/443/wss", "/ip4/10.0.0.1/tcp/8000/ws"}; !slices.Equal(addrStrings(got), want) {
		t.Errorf("got %q, want %q", addrStrings(got), want)
	}
	// An entry that is not a multiaddr is skipped, as nwaku does.
	skip := append([]byte{0, 2, 0xff, 0xff}, b...)
	if got, err := DecodeMultiaddrs(skip); err != nil || len(got) != 2 {
		t.Errorf("garbage entry: %d addrs, %v", len(got), err)
	}
	for _, bad := range [][]byte{{0}, {0, 0}, {0, 9, 1, 2}, append(slices.Clone(b), 0)} {
		if _, err := DecodeMultiaddrs(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

func testKey(t testing.TB, hexKey string) []byte {
	t.Helper()
	k, err := gcrypto.HexToECDSA(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return gcrypto.FromECDSA(k)
}

func TestLocalRecord_RoundTrip(t *testing.T) {
	key, _ := gcrypto.ToECDSA(testKey(t, "1122334455667788990011223344556677889900112233445566778899001122"))
	ws := ma.StringCast("/ip4/127.0.0.1/tcp/8000/ws")
	rec, err := NewLocalRecord(key, RecordConfig{
		IP: net.IPv4(127, 0, 0, 1), TCPPort: 60000, UDPPort: 9000, Caps: Relay | Store,
		Shards: RelayShards{ClusterID: 16, Shards: []uint16{32, 64}}, Multiaddrs: []ma.Multiaddr{ws},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	text := rec.Text()
	if !strings.HasPrefix(text, "enr:") || len(rec.Dropped) != 0 {
		t.Fatalf("text %q, dropped %v", text, rec.Dropped)
	}
	n, err := ParseENR(text)
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodePeer(n)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/ip4/127.0.0.1/tcp/60000", "/ip4/127.0.0.1/tcp/8000/ws"}; !slices.Equal(addrStrings(p.Addrs), want) {
		t.Errorf("addrs %q", addrStrings(p.Addrs))
	}
	if p.Caps != Relay|Store || !p.Shards.Contains(16, 64) || n.UDP() != 9000 {
		t.Errorf("caps %v shards %+v udp %d", p.Caps, p.Shards, n.UDP())
	}
	// nwaku writes waku2 as a one-byte string.
	var raw []byte
	if err := n.Record().Load(enr.WithEntry(CapabilitiesKey, &raw)); err != nil || !bytes.Equal(raw, []byte{3}) {
		t.Errorf("waku2 % x, %v", raw, err)
	}
	if want, _ := PeerID(&key.PublicKey); p.ID != want {
		t.Errorf("peer id %s, want %s", p.ID, want)
	}
}

func TestLocalRecord_DropsMultiaddrsToFit(t *testing.T) {
	key, _ := gcrypto.GenerateKey()
	var addrs []ma.Multiaddr
	for _, host := range []string{"a", "b", "c", "d"} {
		addrs = append(addrs, ma.StringCast("/dns4/"+strings.Repeat(host, 40)+".example.org/tcp/443/wss"))
	}
	rec, err := NewLocalRecord(key, RecordConfig{IP: net.IPv4(10, 1, 2, 3), TCPPort: 60000, UDPPort: 9000, Caps: Relay, Multiaddrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if len(rec.Dropped) == 0 || len(rec.Dropped) == len(addrs) {
		t.Fatalf("dropped %d of %d", len(rec.Dropped), len(addrs))
	}
	if !slices.Equal(addrStrings(rec.Dropped), addrStrings(addrs[len(addrs)-len(rec.Dropped):])) {
		t.Errorf("dropped %q, want the last ones", addrStrings(rec.Dropped))
	}
	if size := rec.Node().Record().Size(); size > MaxRecordSize {
		t.Errorf("record of %d bytes", size)
	}
}

func TestParseENR_Rejects(t *testing.T) {
	// A record signed by one key that names another: the signature check fails.
	signer, _ := gcrypto.GenerateKey()
	named, _ := gcrypto.GenerateKey()
	var r enr.Record
	r.Set(enr.IPv4(net.IPv4(1, 2, 3, 4)))
	if err := enode.SignV4(&r, signer); err != nil {
		t.Fatal(err)
	}
	raw, err := rlp.EncodeToBytes(&r)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, gcrypto.CompressPubkey(&signer.PublicKey), gcrypto.CompressPubkey(&named.PublicKey), 1)
	wrongKey := "enr:" + base64.RawURLEncoding.EncodeToString(raw)
	for name, tc := range map[string]struct {
		text string
		want error
	}{
		"no prefix":  {"-QESuEC1", ErrMalformed},
		"not base64": {"enr:!!!", ErrMalformed},
		"truncated":  {statusFleetENR[:100], ErrMalformed},
		"oversize":   {"enr:" + strings.Repeat("A", 410), ErrTooLarge},
		"wrong key":  {wrongKey, ErrMalformed},
		"empty list": {"enr:wA", ErrMalformed},
	} {
		if _, err := ParseENR(tc.text); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

// TestLocalRecord_SetShards: changing the relay shards re-signs the record
// with a higher sequence number and the new rs (or rsv past the list's
// size, rs then removed); the same shards again leave the record as it is;
// a set that would not fit changes nothing.
func TestLocalRecord_SetShards(t *testing.T) {
	key, _ := gcrypto.GenerateKey()
	rec, err := NewLocalRecord(key, RecordConfig{IP: net.IPv4(10, 1, 2, 3), TCPPort: 60000, Caps: Relay,
		Shards: RelayShards{ClusterID: 1, Shards: []uint16{0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	shardsOf := func() (RelayShards, uint64) {
		t.Helper()
		n, err := ParseENR(rec.Text())
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePeer(n)
		if err != nil {
			t.Fatal(err)
		}
		return p.Shards, n.Seq()
	}
	_, seq0 := shardsOf()
	if err := rec.SetShards(RelayShards{ClusterID: 1, Shards: []uint16{0, 5}}); err != nil {
		t.Fatal(err)
	}
	rs, seq1 := shardsOf()
	if seq1 != seq0+1 || !slices.Equal(rs.Shards, []uint16{0, 5}) || rs.ClusterID != 1 {
		t.Fatalf("after adding shard 5: seq %d (was %d), shards %+v", seq1, seq0, rs)
	}
	if err := rec.SetShards(RelayShards{ClusterID: 1, Shards: []uint16{0, 5}}); err != nil {
		t.Fatal(err)
	}
	if _, seq := shardsOf(); seq != seq1 {
		t.Fatalf("the same shards again: seq %d, want %d", seq, seq1)
	}
	many := make([]uint16, 100)
	for i := range many {
		many[i] = uint16(i)
	}
	if err := rec.SetShards(RelayShards{ClusterID: 1, Shards: many}); err != nil {
		t.Fatal(err)
	}
	rs, seq2 := shardsOf()
	var list []byte
	if seq2 != seq1+1 || len(rs.Shards) != 100 || rec.Node().Record().Load(enr.WithEntry(ShardListKey, &list)) == nil {
		t.Fatalf("100 shards: seq %d, %d shards, rs %x", seq2, len(rs.Shards), list)
	}
	if err := rec.SetShards(RelayShards{ClusterID: 1, Shards: []uint16{1024}}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("shard 1024: %v", err)
	}
	if rs, seq := shardsOf(); seq != seq2 || len(rs.Shards) != 100 {
		t.Fatalf("a refused set changed the record: seq %d, %d shards", seq, len(rs.Shards))
	}
}
