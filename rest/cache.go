package rest

import (
	"container/heap"
	"container/list"
	"sync"
	"sync/atomic"

	"github.com/couriernet/courier/message"
)

// DropCacheFull names the only reason the cache drops a message: the cache
// was full and the message with the oldest timestamp gave way.
const DropCacheFull = "rest_cache_full"

// Stats counts the work of the message cache.
type Stats struct {
	Cached        uint64 // messages put into the cache (each once, however many topics read it)
	DroppedOldest uint64 // messages dropped, reason DropCacheFull
	Drained       uint64 // messages returned by GET requests
}

// entry is one cached message. viaPubsub and viaContent say whether its
// pubsub topic and its content topic still read it; an entry neither reads
// is removed.
type entry struct {
	env                   *message.Envelope
	viaPubsub, viaContent bool
	order                 *list.Element // in cache.order
	heapIndex             int           // in cache.oldest
	seq                   uint64        // arrival number, breaks timestamp ties
}

// byAge orders entries by message timestamp, then arrival: its root is
// the entry a full cache drops (nwaku message_cache.nim addMessage drops
// the message with the smallest timestamp).
type byAge []*entry

func (h byAge) Len() int { return len(h) }
func (h byAge) Less(i, j int) bool {
	ti, tj := h[i].env.Message().Timestamp, h[j].env.Message().Timestamp
	return ti < tj || ti == tj && h[i].seq < h[j].seq
}
func (h byAge) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *byAge) Push(x any) {
	e := x.(*entry)
	e.heapIndex = len(*h)
	*h = append(*h, e)
}
func (h *byAge) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// cache is nwaku's REST message cache (waku/rest_api/message_cache.nim):
// one store of at most capacity messages, shared by every topic, each
// message kept once.
//
// A message is cached when its pubsub topic or its content topic is
// readable, and it is then read through both: a message relayed on a
// subscribed shard is also answered by GET /relay/v1/auto/messages/{its
// content topic}, whose content topic becomes readable from then on, as in
// nwaku (tests/test_message_cache.nim "get messages on pubsub via content
// topics"). A GET drains what it returns from the whole cache. A message is
// de-duplicated by its message hash (nwaku compares whole messages, so a
// message seen on two pubsub topics is kept once there and twice here).
//
// Subscriptions made through the API (subs, contentShard) are tracked
// apart from the readable topics: only they keep the relay on a shard.
type cache struct {
	capacity int

	mu sync.Mutex
	// Readable topics: subscribed through the API, or reached by a cached
	// message's other topic.
	readPubsub, readContent map[string]bool
	// Subscriptions made through the API: pubsub topics, and content
	// topics with the shard each was subscribed on.
	subs         map[string]bool
	contentShard map[string]string

	byHash map[message.Hash]*entry
	order  list.List // of *entry, oldest arrival first
	oldest byAge
	seq    uint64

	cached, dropped, drained atomic.Uint64
}

func newCache(capacity int) *cache {
	c := &cache{capacity: capacity}
	c.resetLocked()
	return c
}

func (c *cache) resetLocked() {
	c.readPubsub, c.readContent = map[string]bool{}, map[string]bool{}
	c.subs, c.contentShard = map[string]bool{}, map[string]string{}
	c.byHash = map[message.Hash]*entry{}
	c.order.Init()
	c.oldest = nil
}

// deliver caches env if one of its topics is readable and it is not cached
// already; a full cache first drops its oldest message.
func (c *cache) deliver(env *message.Envelope) {
	pt, ct := env.PubsubTopic(), env.Message().ContentTopic
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readPubsub[pt] && !c.readContent[ct] {
		return
	}
	h := env.Hash()
	if c.byHash[h] != nil {
		return
	}
	c.readPubsub[pt], c.readContent[ct] = true, true
	if len(c.byHash) >= c.capacity {
		c.removeLocked(c.oldest[0])
		c.dropped.Add(1)
	}
	c.seq++
	e := &entry{env: env, viaPubsub: true, viaContent: true, seq: c.seq}
	e.order = c.order.PushBack(e)
	heap.Push(&c.oldest, e)
	c.byHash[h] = e
	c.cached.Add(1)
}

func (c *cache) removeLocked(e *entry) {
	c.order.Remove(e.order)
	heap.Remove(&c.oldest, e.heapIndex)
	delete(c.byHash, e.env.Hash())
}

func (c *cache) stats() Stats {
	return Stats{Cached: c.cached.Load(), DroppedOldest: c.dropped.Load(), Drained: c.drained.Load()}
}

// answerBytes bounds what answering env in a GET holds, as
// storeAnswerBytes does for a store page: 4 x its encoded bytes (the
// message, held until written, and its JSON with payload and meta in
// base64, in a buffer that may grow to twice its length: writeJSONList
// encodes one message at a time) and 1 KiB for its other fields.
func answerBytes(env *message.Envelope) int64 { return 4*int64(len(env.Wire())) + 1024 }

// pubsubReads and contentReads select the entries a GET reads through a
// pubsub topic and a content topic.
func pubsubReads(topic string) func(*entry) bool {
	return func(e *entry) bool { return e.viaPubsub && e.env.PubsubTopic() == topic }
}

func contentReads(topic string) func(*entry) bool {
	return func(e *entry) bool { return e.viaContent && e.env.Message().ContentTopic == topic }
}

// pendingPubsub returns the answerBytes of the messages read through a
// pubsub topic, summed; ok is false if the topic is not readable.
func (c *cache) pendingPubsub(topic string) (n int64, ok bool) {
	return c.pending(c.readPubsub, topic, pubsubReads(topic))
}

// pendingContent is pendingPubsub for a content topic.
func (c *cache) pendingContent(topic string) (n int64, ok bool) {
	return c.pending(c.readContent, topic, contentReads(topic))
}

// drainPubsub removes and returns the messages read through a pubsub
// topic, in arrival order, as many as fit in limit bytes of answer
// (answerBytes each; the first one whatever its size when limit > 0): the
// others stay for the next GET. ok is false if the topic is not readable.
func (c *cache) drainPubsub(topic string, limit int64) (envs []*message.Envelope, ok bool) {
	return c.drain(c.readPubsub, topic, pubsubReads(topic), limit)
}

// drainContent is drainPubsub for a content topic.
func (c *cache) drainContent(topic string, limit int64) (envs []*message.Envelope, ok bool) {
	return c.drain(c.readContent, topic, contentReads(topic), limit)
}

func (c *cache) pending(readable map[string]bool, topic string, reads func(*entry) bool) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !readable[topic] {
		return 0, false
	}
	var n int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); reads(e) {
			n += answerBytes(e.env)
		}
	}
	return n, true
}

func (c *cache) drain(readable map[string]bool, topic string, reads func(*entry) bool, limit int64) ([]*message.Envelope, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !readable[topic] {
		return nil, false
	}
	envs := []*message.Envelope{}
	var n int64
	for el := c.order.Front(); el != nil && n < limit; {
		e, next := el.Value.(*entry), el.Next()
		if reads(e) {
			a := answerBytes(e.env)
			if len(envs) > 0 && n+a > limit {
				break
			}
			n += a
			envs = append(envs, e.env)
			c.removeLocked(e)
		}
		el = next
	}
	c.drained.Add(uint64(len(envs)))
	return envs, true
}

// reset forgets every topic and message.
func (c *cache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked()
}

// addPubsub makes the pubsub topics subscribed through the API.
func (c *cache) addPubsub(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		c.subs[t], c.readPubsub[t] = true, true
	}
}

// addContent makes content topics subscribed through the API; shards[i]
// is the pubsub topic of contentTopics[i].
func (c *cache) addContent(contentTopics, shards []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range contentTopics {
		if _, ok := c.contentShard[t]; !ok {
			c.contentShard[t] = shards[i]
		}
		c.readContent[t] = true
	}
}

// removePubsub stops reading the pubsub topics, drops the messages no
// content topic still reads, and returns the topics no subscription of
// this API still needs, which the relay may leave.
func (c *cache) removePubsub(topics []string) (unneeded []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range topics {
		delete(c.subs, t)
		delete(c.readPubsub, t)
		c.unreadLocked(func(e *entry) bool {
			if e.env.PubsubTopic() == t {
				e.viaPubsub = false
			}
			return e.viaPubsub || e.viaContent
		})
	}
	return c.unneededLocked(topics)
}

// removeContent stops reading content topics and drops the messages no
// pubsub topic still reads; shards[i] is the pubsub topic of
// contentTopics[i]. It returns the shards that neither a pubsub topic
// subscription nor another content topic subscription still needs.
func (c *cache) removeContent(contentTopics, shards []string) (unneeded []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range contentTopics {
		delete(c.contentShard, t)
		delete(c.readContent, t)
		c.unreadLocked(func(e *entry) bool {
			if e.env.Message().ContentTopic == t {
				e.viaContent = false
			}
			return e.viaPubsub || e.viaContent
		})
	}
	return c.unneededLocked(shards)
}

// unreadLocked removes the entries keep reports false for.
func (c *cache) unreadLocked(keep func(*entry) bool) {
	for el := c.order.Front(); el != nil; {
		e, next := el.Value.(*entry), el.Next()
		if !keep(e) {
			c.removeLocked(e)
		}
		el = next
	}
}

func (c *cache) unneededLocked(topics []string) []string {
	var out []string
	for _, t := range dedupe(topics) {
		if !c.subs[t] && !c.contentNeedsLocked(t) {
			out = append(out, t)
		}
	}
	return out
}

func (c *cache) contentNeedsLocked(pubsubTopic string) bool {
	for _, shard := range c.contentShard {
		if shard == pubsubTopic {
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
