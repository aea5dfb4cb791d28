package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/couriernet/courier/metadata"
	"github.com/couriernet/courier/shard"
)

// ErrTooManyShards: relaying the shard set would make the node's metadata
// RPC larger than every peer reads (metadata.CheckShards), so no peer could
// keep a connection to it. It is wrapped, with the metadata error that says
// how large, by New (the configured shards, then also wrapping ErrConfig)
// and by the relay subscriptions of the REST API and of filter
// subscribers, which are refused whole.
var ErrTooManyShards = errors.New("node: too many shards for the metadata protocol")

// clusterShards returns the shard ids of the node's cluster among the pubsub
// topics, sorted, each once; other topics are left out.
func (c *Config) clusterShards(topics []string) []uint16 {
	var out []uint16
	for _, t := range topics {
		if rs, err := shard.ParsePubsubTopic(t); err == nil && rs.ClusterID == c.ClusterID {
			out = append(out, rs.ShardID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isClusterTopic reports whether pubsubTopic is a static-shard topic of
// the node's cluster: the topics whose peers the relay keeps track of
// without having joined them (relay.Config.PeerTopics), those a lightpush
// may be published on.
func (c *Config) isClusterTopic(pubsubTopic string) bool {
	rs, err := shard.ParsePubsubTopic(pubsubTopic)
	return err == nil && rs.ClusterID == c.ClusterID
}

// checkShardCount returns an error wrapping ErrTooManyShards when the
// shards are more than the metadata protocol carries.
func (c *Config) checkShardCount(shards []uint16) error {
	if err := metadata.CheckShards(c.ClusterID, shards); err != nil {
		return fmt.Errorf("%w: relaying %d shards of cluster %d: %w", ErrTooManyShards, len(shards), c.ClusterID, err)
	}
	return nil
}

// checkMoreShards checks the shards relayed now plus those of topics. The
// caller holds n.shardMu until it has subscribed, so that two subscriptions
// cannot pass the check together.
func (n *Node) checkMoreShards(topics []string) error {
	return n.cfg.checkShardCount(n.cfg.clusterShards(append(n.relay.Topics(), topics...)))
}
