package shard_test

import (
	"errors"
	"testing"

	"github.com/couriernet/courier/shard"
)

func TestParsePubsubTopic(t *testing.T) {
	good := []struct {
		topic string
		want  shard.RelayShard
	}{
		{"/waku/2/rs/0/0", shard.RelayShard{ClusterID: 0, ShardID: 0}},
		{"/waku/2/rs/0/1", shard.RelayShard{ClusterID: 0, ShardID: 1}},
		{"/waku/2/rs/1/3", shard.RelayShard{ClusterID: 1, ShardID: 3}},
		{"/waku/2/rs/65535/1023", shard.RelayShard{ClusterID: 65535, ShardID: 1023}},
	}
	for _, c := range good {
		got, err := shard.ParsePubsubTopic(c.topic)
		if err != nil {
			t.Fatalf("ParsePubsubTopic(%q): %v", c.topic, err)
		}
		if got != c.want {
			t.Fatalf("ParsePubsubTopic(%q) = %+v, want %+v", c.topic, got, c.want)
		}
		if s := got.PubsubTopic(); s != c.topic {
			t.Fatalf("PubsubTopic() = %q, want %q", s, c.topic)
		}
	}
	bad := []struct {
		topic string
		want  error
	}{
		{"", shard.ErrInvalidPubsubTopic},
		{"invalid", shard.ErrInvalidPubsubTopic},
		{"/waku/2/default-waku/proto", shard.ErrInvalidPubsubTopic},
		{"/test/2/this/is/a/content/topic/1", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/1", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/1/", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs//1", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/1/2/3", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/1/03", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/+1/3", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/-1/3", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/1/x", shard.ErrInvalidPubsubTopic},
		{"/waku/2/rs/65536/0", shard.ErrClusterRange},
		{"/waku/2/rs/99999999999999999999999/0", shard.ErrClusterRange},
		{"/waku/2/rs/1/1024", shard.ErrShardRange},
	}
	for _, c := range bad {
		_, err := shard.ParsePubsubTopic(c.topic)
		if !errors.Is(err, c.want) {
			t.Fatalf("ParsePubsubTopic(%q) error = %v, want %v", c.topic, err, c.want)
		}
		var pe *shard.ParseError
		if !errors.As(err, &pe) || pe.Topic != c.topic {
			t.Fatalf("ParsePubsubTopic(%q) error %v is not a *ParseError for the input", c.topic, err)
		}
	}
}

func TestNewRelayShard(t *testing.T) {
	s, err := shard.NewRelayShard(16, 1023)
	if err != nil || s.String() != "/waku/2/rs/16/1023" {
		t.Fatalf("NewRelayShard(16, 1023) = %v, %v", s, err)
	}
	if _, err := shard.NewRelayShard(16, 1024); !errors.Is(err, shard.ErrShardRange) {
		t.Fatalf("NewRelayShard(16, 1024) error = %v, want ErrShardRange", err)
	}
}

func TestParseContentTopic(t *testing.T) {
	ct, err := shard.ParseContentTopic("/0/toychat/2/huilong/proto")
	if err != nil {
		t.Fatal(err)
	}
	want := shard.ContentTopic{Generation: 0, HasGeneration: true, Application: "toychat", Version: "2", Name: "huilong", Encoding: "proto"}
	if ct != want {
		t.Fatalf("got %+v, want %+v", ct, want)
	}
	for _, s := range []string{"/toychat/2/huilong/proto", "/0/toychat/2/huilong/proto", "/7/a/b/c/d"} {
		ct, err := shard.ParseContentTopic(s)
		if err != nil || ct.String() != s {
			t.Fatalf("round trip %q: %q, %v", s, ct.String(), err)
		}
	}
	for _, s := range []string{
		"", "invalid", "/", "/a/b/c", "/a/b/c/d/e/f", "//b/c/d", "/a//c/d", "/a/b//d",
		"/toychat/2/huilong/proto/", "/x/a/b/c/d", "//a/b/c/d", "/-1/a/b/c/d",
		"/99999999999999999999999/a/b/c/d",
	} {
		if _, err := shard.ParseContentTopic(s); !errors.Is(err, shard.ErrInvalidContentTopic) {
			t.Fatalf("ParseContentTopic(%q) error = %v, want ErrInvalidContentTopic", s, err)
		}
	}
}

// TestAutoshardingVectors holds the published vectors: the spec example of
// relay-sharding.md (myapp+1, sha256 8e541178…4928, mod 8 = shard 0) and the
// expectations of nwaku tests/waku_core/topics/test_sharding.nim and
// tests/wakunode_rest/test_rest_relay.nim (cluster 1, 8 shards).
func TestAutoshardingVectors(t *testing.T) {
	a, err := shard.NewAutosharding(1, 8)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		contentTopic string
		shard        uint16
	}{
		{"/myapp/1/chat/proto", 0},
		{"/myapp/1/presence/proto", 0},
		{"/toychat/2/huilong/proto", 3},
		{"/0/toychat/2/huilong/proto", 3},
		{"/toychat2/2/huilong/proto", 6},
		{"/0/toychat2/2/huilong/proto", 6},
		{"/toychat/2/huilong/proto2", 3},
		{"/0/toychat/4/huilong/proto2", 7},
		{"/app-1/2/default-content/proto", 7},
		{"/app-2/2/default-content/proto", 5},
		{"/app-3/2/default-content/proto", 2},
	}
	for _, c := range cases {
		got, err := a.Shard(c.contentTopic)
		if err != nil {
			t.Fatalf("Shard(%q): %v", c.contentTopic, err)
		}
		if want := (shard.RelayShard{ClusterID: 1, ShardID: c.shard}); got != want {
			t.Fatalf("Shard(%q) = %v, want %v", c.contentTopic, got, want)
		}
	}
	topic, err := a.PubsubTopic("/toychat/2/huilong/proto")
	if err != nil || topic != "/waku/2/rs/1/3" {
		t.Fatalf("PubsubTopic = %q, %v; want /waku/2/rs/1/3", topic, err)
	}
}

func TestAutoshardingErrors(t *testing.T) {
	a, err := shard.NewAutosharding(1, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Shard("/1/toychat/2/huilong/proto"); !errors.Is(err, shard.ErrUnsupportedGeneration) {
		t.Fatalf("generation 1: error = %v, want ErrUnsupportedGeneration", err)
	}
	if _, err := a.Shard("invalid"); !errors.Is(err, shard.ErrInvalidContentTopic) {
		t.Fatalf("invalid: error = %v, want ErrInvalidContentTopic", err)
	}
	for _, n := range []int{0, -1, 1025} {
		if _, err := shard.NewAutosharding(1, n); !errors.Is(err, shard.ErrNumShards) {
			t.Fatalf("NewAutosharding(1, %d) error = %v, want ErrNumShards", n, err)
		}
	}
	one, err := shard.NewAutosharding(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := one.Shard("/toychat/2/huilong/proto"); err != nil || s.String() != "/waku/2/rs/0/0" {
		t.Fatalf("one shard: %v, %v", s, err)
	}
	if one.ClusterID() != 0 || one.NumShards() != 1 {
		t.Fatalf("accessors: %d %d", one.ClusterID(), one.NumShards())
	}
}

func FuzzParsePubsubTopic(f *testing.F) {
	for _, s := range []string{"/waku/2/rs/0/0", "/waku/2/rs/65535/1023", "/waku/2/rs/1/03", "/waku/2/rs//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := shard.ParsePubsubTopic(s)
		if err != nil {
			return
		}
		if rs.PubsubTopic() != s || rs.ShardID > shard.MaxShardID {
			t.Fatalf("accepted %q as %+v", s, rs)
		}
	})
}

func FuzzParseContentTopic(f *testing.F) {
	for _, s := range []string{"/toychat/2/huilong/proto", "/0/a/b/c/d", "/1/a/b/c/d", "//a/b/c/d"} {
		f.Add(s)
	}
	a, err := shard.NewAutosharding(1, 8)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ct, err := shard.ParseContentTopic(s)
		if err != nil {
			return
		}
		again, err := shard.ParseContentTopic(ct.String())
		if err != nil || again != ct {
			t.Fatalf("round trip %q -> %q: %+v, %v", s, ct.String(), again, err)
		}
		if rs, err := a.ShardOf(ct); err == nil && rs.ShardID >= 8 {
			t.Fatalf("shard %d out of 8", rs.ShardID)
		}
	})
}
