package shard

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// ContentTopic is a parsed content topic
// "/{application}/{version}/{name}/{encoding}", optionally prefixed by
// "/{generation}" (23/WAKU2-TOPICS; nwaku waku_core/topics/content_topic.nim).
type ContentTopic struct {
	// Generation is the autosharding generation; it is meaningful only when
	// HasGeneration is true. Absent means generation 0.
	Generation    uint64
	HasGeneration bool
	Application   string // non-empty
	Version       string // non-empty
	Name          string // non-empty
	Encoding      string // non-empty
}

// ParseContentTopic splits a content topic into its parts. It accepts 4
// non-empty parts, or 5 whose first is the generation in decimal digits, as
// nwaku's NsContentTopic.parse does. A generation above 0 parses; Shard
// rejects it. Errors are *ParseError wrapping ErrInvalidContentTopic, whose
// Reason is nwaku's text for the same fault (waku/waku_core/topics/
// content_topic.nim parse, parsing.nim).
func ParseContentTopic(topic string) (ContentTopic, error) {
	rest, ok := strings.CutPrefix(topic, "/")
	if !ok {
		return ContentTopic{}, &ParseError{topic, "invalid format: content-topic '" + topic + "' must start with slash", ErrInvalidContentTopic}
	}
	parts := strings.Split(rest, "/")
	var ct ContentTopic
	switch len(parts) {
	case 4:
	case 5:
		gen, err := parseGeneration(topic, parts[0])
		if err != nil {
			return ContentTopic{}, err
		}
		ct.Generation, ct.HasGeneration = gen, true
		parts = parts[1:]
	default:
		return ContentTopic{}, &ParseError{topic,
			"invalid format: Invalid content topic structure. Expected either /<application>/<version>/<topic-name>/<encoding> or /<gen>/<application>/<version>/<topic-name>/<encoding>",
			ErrInvalidContentTopic}
	}
	names := [4]string{"application", "version", "topic-name", "encoding"}
	for i, p := range parts {
		if p == "" {
			return ContentTopic{}, &ParseError{topic, "missing part: " + names[i], ErrInvalidContentTopic}
		}
	}
	ct.Application, ct.Version, ct.Name, ct.Encoding = parts[0], parts[1], parts[2], parts[3]
	return ct, nil
}

func parseGeneration(topic, s string) (uint64, error) {
	if s == "" {
		return 0, &ParseError{topic, "missing part: generation", ErrInvalidContentTopic}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, &ParseError{topic, "invalid format: generation should be a numeric value", ErrInvalidContentTopic}
		}
	}
	g, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, &ParseError{topic, "invalid format: generation should be a numeric value", ErrInvalidContentTopic}
	}
	return g, nil
}

// String returns the content topic in its textual form, with the generation
// prefix if it was given.
func (c ContentTopic) String() string {
	var b strings.Builder
	if c.HasGeneration {
		b.WriteByte('/')
		b.WriteString(strconv.FormatUint(c.Generation, 10))
	}
	for _, p := range [4]string{c.Application, c.Version, c.Name, c.Encoding} {
		b.WriteByte('/')
		b.WriteString(p)
	}
	return b.String()
}

// shardIndex returns the autosharding shard index of an application and
// version in a network of numShards (1..ShardsPerCluster) shards:
//
//	h = sha256(UTF-8 application || UTF-8 version)
//	shard = uint64(big-endian h[24:32]) mod numShards
//
// The last 8 bytes are the rule of nwaku (topics/sharding.nim) and go-waku
// (protocol/shard.go); the spec says only "hash mod N".
func shardIndex(application, version string, numShards uint16) uint16 {
	h := sha256.New()
	h.Write([]byte(application))
	h.Write([]byte(version))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return uint16(binary.BigEndian.Uint64(sum[24:]) % uint64(numShards))
}

// Autosharding maps content topics onto the shards 0..NumShards-1 of one
// cluster. nwaku calls NumShards --num-shards-in-network (default 1); The Waku
// Network uses cluster 1 with 8 shards (nwaku preset twn). Build it with
// NewAutosharding; the zero value is not usable.
type Autosharding struct {
	clusterID uint16
	numShards uint16
}

// NewAutosharding returns the autosharding of cluster over numShards shards.
// numShards must be in 1..ShardsPerCluster, else the error wraps ErrNumShards.
func NewAutosharding(clusterID uint16, numShards int) (Autosharding, error) {
	if numShards < 1 || numShards > ShardsPerCluster {
		return Autosharding{}, fmt.Errorf("%w: %d", ErrNumShards, numShards)
	}
	return Autosharding{clusterID: clusterID, numShards: uint16(numShards)}, nil
}

// ClusterID returns the cluster id.
func (a Autosharding) ClusterID() uint16 { return a.clusterID }

// NumShards returns the number of shards in the network.
func (a Autosharding) NumShards() int { return int(a.numShards) }

// Shard parses contentTopic and returns its shard. Errors wrap
// ErrInvalidContentTopic or ErrUnsupportedGeneration.
func (a Autosharding) Shard(contentTopic string) (RelayShard, error) {
	ct, err := ParseContentTopic(contentTopic)
	if err != nil {
		return RelayShard{}, err
	}
	return a.ShardOf(ct)
}

// ShardOf returns the shard of a parsed content topic. A generation above 0
// gives an error wrapping ErrUnsupportedGeneration (nwaku getShard).
func (a Autosharding) ShardOf(ct ContentTopic) (RelayShard, error) {
	if ct.HasGeneration && ct.Generation != 0 {
		return RelayShard{}, fmt.Errorf("%w: %q has generation %d", ErrUnsupportedGeneration, ct.String(), ct.Generation)
	}
	return RelayShard{ClusterID: a.clusterID, ShardID: shardIndex(ct.Application, ct.Version, a.numShards)}, nil
}

// PubsubTopic returns the pubsub topic of contentTopic's shard; errors as Shard.
func (a Autosharding) PubsubTopic(contentTopic string) (string, error) {
	s, err := a.Shard(contentTopic)
	if err != nil {
		return "", err
	}
	return s.PubsubTopic(), nil
}
