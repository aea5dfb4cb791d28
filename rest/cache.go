package rest

import (
	"sync"
	"sync/atomic"

	"github.com/couriernet/courier/message"
)

// DropCacheFull names the only reason the cache drops a message: a
// subscribed topic's cache was full and its oldest message gave way.
const DropCacheFull = "rest_cache_full"

// Stats counts the work of the message cache.
type Stats struct {
	Cached        uint64 // messages put into a topic's cache (a message cached for both its pubsub and content topic counts twice)
	DroppedOldest uint64 // messages dropped, reason DropCacheFull
	Drained       uint64 // messages returned by GET requests
}

// ring keeps the newest len(buf) envelopes of one topic, oldest first.
type ring struct {
	buf  []*message.Envelope
	head int // index of the oldest
	n    int
}

// push appends e and reports whether the oldest envelope was dropped.
func (r *ring) push(e *message.Envelope) bool {
	if r.n < len(r.buf) {
		r.buf[(r.head+r.n)%len(r.buf)] = e
		r.n++
		return false
	}
	r.buf[r.head] = e
	r.head = (r.head + 1) % len(r.buf)
	return true
}

// drain returns the envelopes oldest first and empties the ring.
func (r *ring) drain() []*message.Envelope {
	out := make([]*message.Envelope, r.n)
	for i := range out {
		j := (r.head + i) % len(r.buf)
		out[i], r.buf[j] = r.buf[j], nil
	}
	r.head, r.n = 0, 0
	return out
}

// contentSub is the cache of one content topic and the pubsub topic
// (shard) it was subscribed on.
type contentSub struct {
	ring
	pubsubTopic string
}

// cache holds the rings of the topics subscribed through the API.
type cache struct {
	size int

	mu      sync.Mutex
	pubsub  map[string]*ring
	content map[string]*contentSub

	cached, dropped, drained atomic.Uint64
}

func newCache(size int) cache {
	return cache{size: size, pubsub: make(map[string]*ring), content: make(map[string]*contentSub)}
}

func (c *cache) deliver(env *message.Envelope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.pubsub[env.PubsubTopic()]; r != nil {
		c.push(r, env)
	}
	if cs := c.content[env.Message().ContentTopic]; cs != nil {
		c.push(&cs.ring, env)
	}
}

func (c *cache) push(r *ring, env *message.Envelope) {
	c.cached.Add(1)
	if r.push(env) {
		c.dropped.Add(1)
	}
}

func (c *cache) stats() Stats {
	return Stats{Cached: c.cached.Load(), DroppedOldest: c.dropped.Load(), Drained: c.drained.Load()}
}

// drainPubsub empties the cache of a subscribed pubsub topic; ok is false
// if the topic is not subscribed.
func (c *cache) drainPubsub(topic string) (envs []*message.Envelope, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.pubsub[topic]
	if r == nil {
		return nil, false
	}
	envs = r.drain()
	c.drained.Add(uint64(len(envs)))
	return envs, true
}

// drainContent empties the cache of a subscribed content topic.
func (c *cache) drainContent(topic string) (envs []*message.Envelope, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.content[topic]
	if cs == nil {
		return nil, false
	}
	envs = cs.drain()
	c.drained.Add(uint64(len(envs)))
	return envs, true
}

func (c *cache) newRing() ring { return ring{buf: make([]*message.Envelope, c.size)} }

// reset stops caching every topic.
func (c *cache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.pubsub)
	clear(c.content)
}

// addPubsub starts caching the topics not cached yet.
func (c *cache) addPubsub(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		if c.pubsub[t] == nil {
			r := c.newRing()
			c.pubsub[t] = &r
		}
	}
}

// addContent starts caching content topics; shards[i] is the pubsub topic
// of contentTopics[i].
func (c *cache) addContent(contentTopics, shards []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range contentTopics {
		if c.content[t] == nil {
			c.content[t] = &contentSub{ring: c.newRing(), pubsubTopic: shards[i]}
		}
	}
}

// removePubsub stops caching topics and returns those no content topic
// subscription still needs, which the relay may leave.
func (c *cache) removePubsub(topics []string) (unneeded []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		delete(c.pubsub, t)
	}
	return c.unneededLocked(topics)
}

// removeContent stops caching content topics; shards[i] is the pubsub topic
// of contentTopics[i]. It returns the shards that neither a pubsub topic
// subscription nor another content topic still needs.
func (c *cache) removeContent(contentTopics, shards []string) (unneeded []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range contentTopics {
		delete(c.content, t)
	}
	return c.unneededLocked(shards)
}

func (c *cache) unneededLocked(topics []string) []string {
	var out []string
	for _, t := range dedupe(topics) {
		if c.pubsub[t] == nil && !c.contentNeedsLocked(t) {
			out = append(out, t)
		}
	}
	return out
}

func (c *cache) contentNeedsLocked(pubsubTopic string) bool {
	for _, cs := range c.content {
		if cs.pubsubTopic == pubsubTopic {
			return true
		}
	}
	return false
}

// dedupe returns the distinct strings of s in first-seen order.
func dedupe(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
