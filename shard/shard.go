// Package shard implements Waku relay sharding: static-shard pubsub topics
// (/waku/2/rs/<cluster>/<shard>), content topic parsing and autosharding of
// content topics onto shards.
//
// Sources: waku-org/specs standards/core/relay-sharding.md, nwaku
// waku_core/topics/{pubsub_topic,content_topic,sharding}.nim and go-waku
// waku/v2/protocol/shard.go.
//
// # Canonical topics
//
// A pubsub topic is a gossipsub topic name, compared byte for byte: "/waku/2/rs/1/03"
// and "/waku/2/rs/1/3" are different gossip topics. ParsePubsubTopic therefore
// accepts only the canonical decimal form (no sign, no leading zeros), so that
// RelayShard.PubsubTopic(ParsePubsubTopic(t)) == t for every accepted t.
package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits of static sharding (relay-sharding.md).
const (
	// MaxClusterID is the largest cluster id. Clusters 0-15 are reserved;
	// cluster 1 is The Waku Network (64/WAKU2-NETWORK).
	MaxClusterID = 65535
	// ShardsPerCluster is the number of shards in one cluster; shard ids are
	// 0..ShardsPerCluster-1.
	ShardsPerCluster = 1024
	// MaxShardID is the largest shard id.
	MaxShardID = ShardsPerCluster - 1
)

// StaticShardingPrefix starts every static-shard pubsub topic.
const StaticShardingPrefix = "/waku/2/rs/"

// Sentinel errors. Every error of this package wraps exactly one of them.
var (
	// ErrInvalidPubsubTopic: the topic is not /waku/2/rs/<cluster>/<shard>
	// in canonical decimal form.
	ErrInvalidPubsubTopic = errors.New("shard: invalid pubsub topic")
	// ErrClusterRange: a cluster id over MaxClusterID.
	ErrClusterRange = errors.New("shard: cluster id out of range 0..65535")
	// ErrShardRange: a shard id over MaxShardID, or not below the number
	// of shards in the network.
	ErrShardRange = errors.New("shard: shard id out of range")
	// ErrInvalidContentTopic: the content topic is not
	// /{application}/{version}/{name}/{encoding}, optionally prefixed by
	// /{generation}.
	ErrInvalidContentTopic = errors.New("shard: invalid content topic")
	// ErrUnsupportedGeneration: autosharding of a content topic whose
	// generation is above 0 (nwaku: "Generation > 0 are not supported yet").
	ErrUnsupportedGeneration = errors.New("shard: generation > 0 is not supported")
	// ErrNumShards: a number of shards in the network outside 1..1024.
	ErrNumShards = errors.New("shard: number of shards in network out of range 1..1024")
)

// ParseError reports why a topic string was rejected. Err is one of the
// sentinel errors; errors.Is sees through it.
type ParseError struct {
	Topic  string // the input as given
	Reason string // what is wrong, in words
	Err    error  // sentinel: ErrInvalidPubsubTopic, ErrClusterRange, ErrShardRange or ErrInvalidContentTopic
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%v: %q: %s", e.Err, e.Topic, e.Reason)
}

func (e *ParseError) Unwrap() error { return e.Err }

// RelayShard is one static shard: a cluster id and a shard id
// (nwaku RelayShard, go-waku protocol.RelayShards with one shard).
type RelayShard struct {
	ClusterID uint16 // 0..65535
	ShardID   uint16 // 0..MaxShardID
}

// NewRelayShard returns the shard (cluster, shard) or an error wrapping
// ErrShardRange if shard > MaxShardID.
func NewRelayShard(cluster, shard uint16) (RelayShard, error) {
	if shard > MaxShardID {
		return RelayShard{}, fmt.Errorf("%w: %d > %d", ErrShardRange, shard, MaxShardID)
	}
	return RelayShard{ClusterID: cluster, ShardID: shard}, nil
}

// PubsubTopic returns the static-shard pubsub topic "/waku/2/rs/<cluster>/<shard>".
func (s RelayShard) PubsubTopic() string {
	b := make([]byte, 0, len(StaticShardingPrefix)+11)
	b = append(b, StaticShardingPrefix...)
	b = strconv.AppendUint(b, uint64(s.ClusterID), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, uint64(s.ShardID), 10)
	return string(b)
}

// String returns the pubsub topic.
func (s RelayShard) String() string { return s.PubsubTopic() }

// ParsePubsubTopic parses a static-shard pubsub topic
// "/waku/2/rs/<cluster>/<shard>" with cluster 0..65535 and shard 0..1023, both
// in canonical decimal (digits only, no leading zeros). Errors are
// *ParseError wrapping ErrInvalidPubsubTopic, ErrClusterRange or
// ErrShardRange. Named topics such as "/waku/2/default-waku/proto" are not
// static shards and are rejected (named sharding is deprecated,
// relay-sharding.md).
func ParsePubsubTopic(topic string) (RelayShard, error) {
	rest, ok := strings.CutPrefix(topic, StaticShardingPrefix)
	if !ok {
		return RelayShard{}, &ParseError{topic, "must start with " + StaticShardingPrefix, ErrInvalidPubsubTopic}
	}
	clusterPart, shardPart, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(shardPart, "/") {
		return RelayShard{}, &ParseError{topic, "want /waku/2/rs/<cluster>/<shard>", ErrInvalidPubsubTopic}
	}
	cluster, err := parseID(topic, "cluster id", clusterPart, MaxClusterID, ErrClusterRange)
	if err != nil {
		return RelayShard{}, err
	}
	shard, err := parseID(topic, "shard id", shardPart, MaxShardID, ErrShardRange)
	if err != nil {
		return RelayShard{}, err
	}
	return RelayShard{ClusterID: uint16(cluster), ShardID: uint16(shard)}, nil
}

// parseID parses one canonical decimal id no larger than limit.
func parseID(topic, name, s string, limit uint64, rangeErr error) (uint64, error) {
	if s == "" {
		return 0, &ParseError{topic, name + " is missing", ErrInvalidPubsubTopic}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, &ParseError{topic, name + " is not a decimal number", ErrInvalidPubsubTopic}
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, &ParseError{topic, name + " has a leading zero", ErrInvalidPubsubTopic}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > limit {
		return 0, &ParseError{topic, fmt.Sprintf("%s %s over %d", name, s, limit), rangeErr}
	}
	return v, nil
}
