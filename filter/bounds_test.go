package filter

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// cts returns n distinct content topics of size bytes each.
func cts(prefix string, n, size int) []string {
	out := make([]string, n)
	for i := range out {
		p := fmt.Sprintf("/%s/%d/", prefix, i)
		out[i] = p + strings.Repeat("x", size-len(p))
	}
	return out
}

// TestCriteriaTopicRules: a SUBSCRIBE or UNSUBSCRIBE naming a content
// topic over 1024 bytes, an empty or white-space one, or a pubsub topic
// over 1024 bytes is refused 400 and changes nothing.
func TestCriteriaTopicRules(t *testing.T) {
	s, _ := clockService(t, Config{})
	a := peer.ID("a")
	long := sub(cts("long", 100, 16_000)...)
	for _, tc := range []struct {
		name string
		req  SubscribeRequest
		code uint32
		desc string
	}{
		{"100 content topics of 16 kB", long, 400, "BAD_REQUEST: content topic exceeds maximum size: 1024 bytes"},
		{"one content topic of 1025 bytes", sub("/x/1/y/proto", cts("l", 1, 1025)[0]), 400, "BAD_REQUEST: content topic exceeds maximum size: 1024 bytes"},
		{"empty content topic", sub("/x/1/y/proto", ""), 400, "BAD_REQUEST: content topic is empty or white space"},
		{"white space content topic", sub(" "), 400, "BAD_REQUEST: content topic is empty or white space"},
		{"pubsub topic of 1025 bytes", SubscribeRequest{RequestID: "r", Type: Subscribe, PubsubTopic: strings.Repeat("/", 1025), HasPubsubTopic: true, ContentTopics: []string{"/x/1/y/proto"}}, 400, "BAD_REQUEST: pubsub topic exceeds maximum size: 1024 bytes"},
		{"unsubscribe of 16 kB topics", unsub(cts("long", 1, 16_000)...), 400, "BAD_REQUEST: content topic exceeds maximum size: 1024 bytes"},
		{"1024-byte topics", SubscribeRequest{RequestID: "r", Type: Subscribe, PubsubTopic: strings.Repeat("/", 1024), HasPubsubTopic: true, ContentTopics: cts("ok", 100, 1024)}, 200, "OK"},
	} {
		before := s.Stats()
		resp := s.Answer(a, tc.req)
		if resp.StatusCode != tc.code || resp.StatusDesc != tc.desc {
			t.Fatalf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, resp.StatusDesc, tc.code, tc.desc)
		}
		if after := s.Stats(); tc.code != 200 && (after.Criteria != before.Criteria || after.CriteriaBytes != before.CriteriaBytes || after.Subscribers != before.Subscribers) {
			t.Fatalf("%s: refused request changed the subscriptions: %+v", tc.name, after)
		}
	}
	if st := s.Stats(); st.Criteria != 100 || st.CriteriaBytes != 100*(1024+1024+CriterionOverhead) {
		t.Fatalf("after the 1024-byte topics: %d criteria charged %d bytes", st.Criteria, st.CriteriaBytes)
	}
}

// TestCriteriaByteLimits: each criterion is charged its two topics and
// CriterionOverhead; a SUBSCRIBE that would take a peer past
// MaxCriteriaBytes, or all peers past MaxTotalCriteriaBytes, is refused 503
// and changes nothing; criteria a peer holds already cost nothing again;
// unsubscribing, UNSUBSCRIBE_ALL and expiry give the bytes back.
func TestCriteriaByteLimits(t *testing.T) {
	ts := topics(9)
	one := len(topic) + len(ts[0]) + CriterionOverhead // the nine topics have one size
	s, now := clockService(t, Config{MaxCriteriaBytes: 3 * one, MaxTotalCriteriaBytes: 5 * one})
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	peerFull := fmt.Sprintf("SERVICE_UNAVAILABLE: peer has reached maximum size of filter criteria: %d bytes", 3*one)
	nodeFull := fmt.Sprintf("SERVICE_UNAVAILABLE: node has reached maximum size of filter criteria: %d bytes", 5*one)
	steps := []struct {
		name  string
		p     peer.ID
		req   SubscribeRequest
		code  uint32
		desc  string
		bytes int // CriteriaBytes after
	}{
		{"two criteria", a, sub(ts[0], ts[1], ts[1]), 200, "OK", 2 * one},
		{"two more would pass the peer's bytes", a, sub(ts[2], ts[3]), 503, peerFull, 2 * one},
		{"held criteria cost nothing", a, sub(ts[0], ts[1], ts[2]), 200, "OK", 3 * one},
		{"still nothing at the limit", a, sub(ts[0]), 200, "OK", 3 * one},
		{"second peer", b, sub(ts[4], ts[5]), 200, "OK", 5 * one},
		{"a new peer past the node's bytes", c, sub(ts[6]), 503, nodeFull, 5 * one},
		{"unsubscribe gives bytes back", a, unsub(ts[0]), 200, "OK", 4 * one},
		{"then the new peer fits", c, sub(ts[6]), 200, "OK", 5 * one},
		{"unsubscribe all", b, SubscribeRequest{RequestID: "r", Type: UnsubscribeAll}, 200, "OK", 3 * one},
	}
	for _, st := range steps {
		resp := s.Answer(st.p, st.req)
		if resp.StatusCode != st.code || resp.StatusDesc != st.desc {
			t.Fatalf("%s: %d %q, want %d %q", st.name, resp.StatusCode, resp.StatusDesc, st.code, st.desc)
		}
		if got := s.Stats().CriteriaBytes; got != st.bytes {
			t.Fatalf("%s: %d bytes charged, want %d", st.name, got, st.bytes)
		}
	}
	if st := s.Stats(); st.Subscribers != 2 || st.Criteria != 3 {
		t.Fatalf("subscribers %d, criteria %d", st.Subscribers, st.Criteria)
	}
	*now = now.Add(DefaultSubscriptionTimeout + 1)
	s.sweep()
	if st := s.Stats(); st.CriteriaBytes != 0 || st.Criteria != 0 || len(s.index) != 0 || len(s.topics) != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
}

// TestCriteriaDefaultsStopAHostilePeer fills one peer's criteria with the
// longest topics the defaults allow (100 content topics of 1024 bytes a
// request): the peer is held to DefaultMaxCriteriaBytes, where without
// the bounds ten requests of 16 kB topics held 16 MB.
func TestCriteriaDefaultsStopAHostilePeer(t *testing.T) {
	s, _ := clockService(t, Config{})
	a := peer.ID("a")
	accepted := 0
	for r := range 10 {
		if resp := s.Answer(a, sub(cts(fmt.Sprint(r), 100, 1024)...)); resp.StatusCode == 200 {
			accepted++
		}
	}
	perCriterion := len(topic) + 1024 + CriterionOverhead
	if st := s.Stats(); accepted != 3 || st.CriteriaBytes != 300*perCriterion || st.CriteriaBytes > DefaultMaxCriteriaBytes {
		t.Fatalf("%d requests accepted, %d bytes charged (limit %d)", accepted, st.CriteriaBytes, DefaultMaxCriteriaBytes)
	}
}

// BenchmarkCriteriaHeld reports the heap one criterion holds, for
// content topics of several sizes, beside what it is charged; the
// difference for the smallest is the source of CriterionOverhead.
//
//	go test -run '^$' -bench CriteriaHeld ./filter/
func BenchmarkCriteriaHeld(b *testing.B) {
	for _, size := range []int{16, 100, 1024} {
		b.Run(fmt.Sprintf("content=%dB", size), func(b *testing.B) {
			const peers, perPeer = 4, 1000
			var held, charged float64
			for range b.N {
				cfg := Config{MaxCriteriaBytes: 1 << 30}
				cfg.setDefaults()
				s := newService(nil, cfg)
				before := liveHeap()
				for p := range peers {
					for r := range perPeer / MaxContentTopicsPerRequest {
						s.Answer(peer.ID(fmt.Sprint(p)), sub(cts(fmt.Sprint(p, "-", r), MaxContentTopicsPerRequest, size)...))
					}
				}
				held += float64(liveHeap() - before)
				charged += float64(s.Stats().CriteriaBytes)
				runtime.KeepAlive(s)
				s.Close()
			}
			b.ReportMetric(held/float64(b.N*peers*perPeer), "heap-B/criterion")
			b.ReportMetric(charged/float64(b.N*peers*perPeer), "charged-B/criterion")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestIndexRemoval: subscribers leaving a criterion in any order leave the
// index with exactly the others, each at its recorded place, and pushes
// reach exactly them.
func TestIndexRemoval(t *testing.T) {
	s, _ := clockService(t, Config{})
	ids := []peer.ID{"a", "b", "c", "d"}
	for _, p := range ids {
		s.Answer(p, sub("/x/1/y/proto", "/x/1/"+string(p)+"/proto"))
	}
	check := func(want ...peer.ID) {
		t.Helper()
		c := Criterion{topic, "/x/1/y/proto"}
		s.mu.RLock()
		defer s.mu.RUnlock()
		subs := s.index[c]
		var got []peer.ID
		for i, sub := range subs {
			if sub.criteria[c] != i {
				t.Fatalf("%s recorded at %d, found at %d", sub.id, sub.criteria[c], i)
			}
			got = append(got, sub.id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("subscribers %v, want %v", got, want)
		}
	}
	check(ids...)
	s.Answer("b", unsub("/x/1/y/proto"))
	check("a", "c", "d")
	s.Answer("a", SubscribeRequest{RequestID: "r", Type: UnsubscribeAll})
	check("c", "d")
	s.Answer("d", unsub("/x/1/y/proto"))
	check("c")
	s.Push(envelope(t, "/x/1/y/proto", "one"))
	s.mu.RLock()
	queued := map[peer.ID]int{}
	for id, sub := range s.peers {
		queued[id] = len(sub.queue)
	}
	s.mu.RUnlock()
	if !maps.Equal(queued, map[peer.ID]int{"b": 0, "c": 1, "d": 0}) {
		t.Fatalf("queued frames %v", queued)
	}
	s.Answer("c", unsub("/x/1/y/proto"))
	if _, ok := s.index[Criterion{topic, "/x/1/y/proto"}]; ok {
		t.Fatal("criterion without subscribers still indexed")
	}
}
