package rest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/couriernet/courier/message"
)

// The cases of nwaku's tests/test_message_cache.nim (v0.38.1), capacity 3,
// on the cache's own operations.

const (
	testPubsub  = "/waku/2/rs/0/0"
	testContent = "/toy-chat/2/huilong/proto"
)

func cacheMsg(t *testing.T, pubsubTopic, contentTopic, payload string, ts int64) *message.Envelope {
	t.Helper()
	return env(t, pubsubTopic, &message.Message{Payload: []byte(payload), ContentTopic: contentTopic, Timestamp: ts})
}

func payloads(envs []*message.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = string(e.Message().Payload)
	}
	return out
}

func (c *cache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byHash)
}

func TestCacheGetClears(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{testPubsub, testPubsub})
	c.deliver(cacheMsg(t, testPubsub, testContent, "m", 1))
	envs, ok := c.drainPubsub(testPubsub, math.MaxInt64)
	if !ok || !slices.Equal(payloads(envs), []string{"m"}) {
		t.Fatalf("first GET %v %v", payloads(envs), ok)
	}
	if envs, ok := c.drainPubsub(testPubsub, math.MaxInt64); !ok || len(envs) != 0 {
		t.Fatalf("second GET %v %v, want an empty answer", payloads(envs), ok)
	}
	// Read through the pubsub topic, the message is gone from its content
	// topic too: the cache keeps each message once.
	if envs, ok := c.drainContent(testContent, math.MaxInt64); !ok || len(envs) != 0 {
		t.Fatalf("content GET %v %v", payloads(envs), ok)
	}
}

func TestCacheNotSubscribed(t *testing.T) {
	c := newCache(3)
	c.deliver(cacheMsg(t, testPubsub, testContent, "m", 1))
	if _, ok := c.drainPubsub(testPubsub, math.MaxInt64); ok {
		t.Fatal("a topic never subscribed is readable")
	}
	c.addPubsub([]string{"/waku/2/rs/0/5"})
	if _, ok := c.drainPubsub(testPubsub, math.MaxInt64); ok {
		t.Fatal("another topic's subscription made this one readable")
	}
	if c.count() != 0 {
		t.Fatalf("%d messages cached for no subscription", c.count())
	}
}

// TestCacheCapacity: six messages with growing timestamps into a cache of
// three keep the newest three ("add messages beyond the capacity").
func TestCacheCapacity(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{testPubsub})
	for i := range 6 {
		c.deliver(cacheMsg(t, testPubsub, testContent, fmt.Sprint("MSG-", i), int64(100+i)))
	}
	envs, _ := c.drainPubsub(testPubsub, math.MaxInt64)
	if got, want := payloads(envs), []string{"MSG-3", "MSG-4", "MSG-5"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	if st := c.stats(); st != (Stats{Cached: 6, DroppedOldest: 3, Drained: 3}) {
		t.Fatalf("stats %+v", st)
	}
}

// TestCacheDropsOldestTimestamp: the message a full cache drops is the one
// with the smallest timestamp, not the first to arrive (message_cache.nim
// addMessage).
func TestCacheDropsOldestTimestamp(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{testPubsub})
	for i, ts := range []int64{30, 10, 20, 40} {
		c.deliver(cacheMsg(t, testPubsub, testContent, fmt.Sprint("m", i), ts))
	}
	envs, _ := c.drainPubsub(testPubsub, math.MaxInt64)
	if got, want := payloads(envs), []string{"m0", "m2", "m3"}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// TestCacheSharedAcrossTopics: the capacity bounds all topics together.
func TestCacheSharedAcrossTopics(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{"/waku/2/rs/0/1", "/waku/2/rs/0/2"})
	for i := range 4 {
		c.deliver(cacheMsg(t, fmt.Sprint("/waku/2/rs/0/", 1+i%2), "/a/1/b/c", fmt.Sprint("m", i), int64(i+1)))
	}
	one, _ := c.drainPubsub("/waku/2/rs/0/1", math.MaxInt64)
	two, _ := c.drainPubsub("/waku/2/rs/0/2", math.MaxInt64)
	if !slices.Equal(payloads(one), []string{"m2"}) || !slices.Equal(payloads(two), []string{"m1", "m3"}) {
		t.Fatalf("shard 1 %v, shard 2 %v", payloads(one), payloads(two))
	}
}

// TestCacheReadThroughContentTopic: "get messages on pubsub via content
// topics", both ways.
func TestCacheReadThroughContentTopic(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{testPubsub})
	c.deliver(cacheMsg(t, testPubsub, testContent, "m", 1))
	envs, ok := c.drainContent(testContent, math.MaxInt64)
	if !ok || !slices.Equal(payloads(envs), []string{"m"}) {
		t.Fatalf("through the content topic: %v %v", payloads(envs), ok)
	}

	c = newCache(3)
	c.addContent([]string{testContent}, []string{"/waku/2/rs/0/4"})
	c.deliver(cacheMsg(t, "/waku/2/rs/0/4", testContent, "n", 1))
	envs, ok = c.drainPubsub("/waku/2/rs/0/4", math.MaxInt64)
	if !ok || !slices.Equal(payloads(envs), []string{"n"}) {
		t.Fatalf("through the pubsub topic: %v %v", payloads(envs), ok)
	}
}

func TestCacheSameMessageTwice(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{testPubsub})
	m := cacheMsg(t, testPubsub, testContent, "m", 1)
	c.deliver(m)
	c.deliver(cacheMsg(t, testPubsub, testContent, "m", 1))
	if c.count() != 1 {
		t.Fatalf("%d messages, want 1", c.count())
	}
	if st := c.stats(); st.Cached != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCacheUnsubscribeRemovesUnread: "unsubscribing remove messages".
func TestCacheUnsubscribeRemovesUnread(t *testing.T) {
	c := newCache(3)
	topics := []string{"PubsubTopic0", "PubsubTopic1", "PubsubTopic2"}
	c.addPubsub(topics)
	c.addContent([]string{"ContentTopic0"}, []string{"PubsubTopic0"})
	for i, topic := range topics {
		c.deliver(cacheMsg(t, topic, testContent, fmt.Sprint("MSG-", i), int64(i+1)))
	}
	c.removePubsub(topics[:1])
	// MSG-0 is still read through its content topic.
	envs, ok := c.drainContent(testContent, math.MaxInt64)
	if !ok || len(envs) != 3 {
		t.Fatalf("content topic answers %v %v, want all three", payloads(envs), ok)
	}

	c = newCache(3)
	c.addPubsub(topics)
	for i, topic := range topics {
		c.deliver(cacheMsg(t, topic, testContent, fmt.Sprint("MSG-", i), int64(i+1)))
	}
	c.removePubsub(topics[:1])
	c.removeContent([]string{testContent}, []string{testPubsub})
	// MSG-0 was read by neither topic any more.
	if c.count() != 2 {
		t.Fatalf("%d messages, want 2", c.count())
	}
	if _, ok := c.drainPubsub(topics[0], math.MaxInt64); ok {
		t.Fatal("unsubscribed topic still readable")
	}
}

// TestCacheUnneededShards: only subscriptions made through the API keep a
// shard; a topic readable because a message reached it does not.
func TestCacheUnneededShards(t *testing.T) {
	c := newCache(3)
	c.addPubsub([]string{"/waku/2/rs/0/1"})
	c.addContent([]string{"/a/1/b/c", "/a/1/d/e"}, []string{"/waku/2/rs/0/2", "/waku/2/rs/0/2"})
	c.deliver(cacheMsg(t, "/waku/2/rs/0/3", "/a/1/b/c", "m", 1))
	if got := c.removeContent([]string{"/a/1/b/c"}, []string{"/waku/2/rs/0/2"}); len(got) != 0 {
		t.Fatalf("leaves %v while /a/1/d/e needs the shard", got)
	}
	if got := c.removeContent([]string{"/a/1/d/e"}, []string{"/waku/2/rs/0/2"}); !slices.Equal(got, []string{"/waku/2/rs/0/2"}) {
		t.Fatalf("leaves %v", got)
	}
	if got := c.removePubsub([]string{"/waku/2/rs/0/1", "/waku/2/rs/0/3"}); !slices.Equal(got, []string{"/waku/2/rs/0/1", "/waku/2/rs/0/3"}) {
		t.Fatalf("leaves %v", got)
	}
}

// TestCacheRandomOperations is the "fuzzing" case of nwaku's suite with
// the cache's invariants checked after every step: at most capacity
// messages, every cached message readable through one of its topics, the
// order list, age heap and hash index in step.
func TestCacheRandomOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := newCache(50)
	contents := []string{"/app/1/one/proto", "/app/1/two/proto"}
	c.addContent(contents, []string{testPubsub, testPubsub})
	for i := range 10000 {
		topic := contents[r.IntN(2)]
		switch n := r.Float64(); {
		case n > 0.4:
			c.deliver(cacheMsg(t, testPubsub, topic, fmt.Sprint(i), int64(r.IntN(1000))))
		case n > 0.1:
			c.drainContent(topic, math.MaxInt64)
		case n > 0.05:
			if r.IntN(2) == 0 {
				c.removePubsub([]string{testPubsub})
			} else {
				c.addPubsub([]string{testPubsub})
			}
		default:
			if r.IntN(2) == 0 {
				c.removeContent([]string{topic}, []string{testPubsub})
			} else {
				c.addContent([]string{topic}, []string{testPubsub})
			}
		}
		checkCache(t, c)
	}
}

func checkCache(t *testing.T, c *cache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.byHash)
	if n > c.capacity || c.order.Len() != n || len(c.oldest) != n {
		t.Fatalf("%d messages, order %d, heap %d, capacity %d", n, c.order.Len(), len(c.oldest), c.capacity)
	}
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		if c.byHash[e.env.Hash()] != e || c.oldest[e.heapIndex] != e {
			t.Fatal("indexes out of step")
		}
		if !e.viaPubsub && !e.viaContent {
			t.Fatal("a message no topic reads is kept")
		}
	}
}
