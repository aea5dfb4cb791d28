package discovery

import (
	"slices"
	"testing"

	ma "github.com/multiformats/go-multiaddr"
)

func FuzzParseENR(f *testing.F) {
	f.Add(statusFleetENR)
	f.Add("enr:wA")
	f.Add(statusFleetENR[:120])
	f.Fuzz(func(t *testing.T, text string) {
		n, err := ParseENR(text)
		if err != nil {
			return
		}
		if p, err := DecodePeer(n); err == nil && p.ID == "" {
			t.Fatal("decoded peer without an id")
		}
	})
}

func FuzzDecodeMultiaddrs(f *testing.F) {
	f.Add(EncodeMultiaddrs([]ma.Multiaddr{ma.StringCast("/dns4/example.org/tcp/443/wss")}))
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 3, 4, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		addrs, err := DecodeMultiaddrs(b)
		if err != nil {
			return
		}
		again, err := DecodeMultiaddrs(EncodeMultiaddrs(addrs))
		if err != nil || len(again) != len(addrs) {
			t.Fatalf("re-encoding %d addrs: %d, %v", len(addrs), len(again), err)
		}
	})
}

func FuzzDecodeShardList(f *testing.F) {
	_, v, _ := RelayShards{ClusterID: 1, Shards: []uint16{0, 7}}.Encode()
	f.Add(v)
	f.Add([]byte{0, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeShardList(b)
		if err != nil {
			return
		}
		k, v, err := rs.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if k == ShardListKey && !slices.Equal(v, b) {
			t.Fatalf("re-encoded % x, was % x", v, b)
		}
	})
}

func FuzzDecodeShardVector(f *testing.F) {
	_, v, _ := RelayShards{ClusterID: 1, Shards: make([]uint16, 64)}.Encode()
	f.Add(v)
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeShardVector(b)
		if err != nil {
			return
		}
		for _, s := range rs.Shards {
			if s > maxShardID {
				t.Fatalf("shard %d", s)
			}
		}
	})
}
