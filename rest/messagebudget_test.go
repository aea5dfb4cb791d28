package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/couriernet/courier/filter"
	"github.com/couriernet/courier/message"
)

const budgetContent = "/a/1/b/proto"

// budgetServer is a server with a 1 MiB budget (MaxBufferedBytes) whose
// relay cache reads pubsub topic "/waku/2/rs/0/0" and content topic
// budgetContent, and whose filter cache reads budgetContent; store
// queries wait for g.gate.
func budgetServer(t *testing.T) (*Server, *gatedStore) {
	t.Helper()
	lf := &lightFake{fakeBackend: newFake(t), filter: map[filter.RequestType]filter.SubscribeResponse{
		filter.Subscribe: {StatusCode: 200, StatusDesc: "OK"},
	}}
	g := &gatedStore{fakeBackend: lf.fakeBackend, gate: make(chan struct{})}
	s := lightServer(t, lf, Config{MaxBodyBytes: 1 << 20, MaxBufferedBytes: 1 << 20, Store: g})
	expect(t, s, "POST", "/relay/v1/subscriptions", `["/waku/2/rs/0/0"]`, 200, "OK")
	expect(t, s, "POST", "/relay/v1/auto/subscriptions", `["`+budgetContent+`"]`, 200, "OK")
	expect(t, s, "POST", "/filter/v2/subscriptions", `{"requestId":"1","contentFilters":["`+budgetContent+`"]}`, 200, `{"requestId":"1","statusDesc":"OK"}`)
	return s, g
}

// bigMessages makes n messages of 100 KiB payload on budgetContent, each
// an answer of 4 x its 102,4xx encoded bytes + 1024 (answerBytes): two fit
// in 1 MiB, three do not.
func bigMessages(t *testing.T, topic string, n int) []*message.Envelope {
	t.Helper()
	out := make([]*message.Envelope, n)
	for i := range out {
		out[i] = env(t, topic, &message.Message{Payload: make([]byte, 100<<10), ContentTopic: budgetContent, Timestamp: int64(i + 1)})
	}
	if a := answerBytes(out[0]); 2*a > 1<<20 || 3*a <= 1<<20 {
		t.Fatalf("answerBytes %d: want two and not three in 1 MiB", a)
	}
	return out
}

// timestamps returns the timestamps of a GET's answer of messages.
func timestamps(t *testing.T, body string) []int64 {
	t.Helper()
	var msgs []struct{ Timestamp int64 }
	if err := json.Unmarshal([]byte(body), &msgs); err != nil {
		t.Fatalf("answer %.80q: %v", body, err)
	}
	out := []int64{}
	for _, m := range msgs {
		out = append(out, m.Timestamp)
	}
	return out
}

var budgetRoutes = []struct {
	name, path string
	deliver    func(*Server, *message.Envelope)
}{
	{"relay", msgsPath("/waku/2/rs/0/0"), (*Server).Deliver},
	{"relay auto", "/relay/v1/auto/messages/" + url.PathEscape(budgetContent), (*Server).Deliver},
	{"filter", "/filter/v2/messages/" + url.PathEscape(budgetContent), (*Server).DeliverFilter},
}

// TestMessageAnswersWithinBudget: a GET of cached messages (relay, relay
// auto, filter) answers at most what fits in MaxBufferedBytes, in arrival
// order, and leaves the rest for the next GET: ten messages of 100 KiB
// (about 410 KB of answer each) under a 1 MiB budget come two by two.
// Before, one GET answered the ten at once, whatever the budget (with
// --rest-relay-cache-capacity large, any number).
func TestMessageAnswersWithinBudget(t *testing.T) {
	for _, route := range budgetRoutes {
		t.Run(route.name, func(t *testing.T) {
			s, _ := budgetServer(t)
			for _, e := range bigMessages(t, "/waku/2/rs/0/0", 10) {
				route.deliver(s, e)
			}
			var got [][]int64
			for range 6 {
				code, _, body := do(t, s, "GET", route.path, "")
				if code != 200 {
					t.Fatalf("GET %s: %d %q", route.path, code, body)
				}
				got = append(got, timestamps(t, body))
			}
			want := [][]int64{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {}}
			if len(got) != len(want) {
				t.Fatalf("answers %v, want %v", got, want)
			}
			for i := range want {
				if len(got[i]) != len(want[i]) || len(want[i]) > 0 && (got[i][0] != want[i][0] || got[i][1] != want[i][1]) {
					t.Fatalf("answers %v, want %v", got, want)
				}
			}
		})
	}
}

// TestMessageAnswersWaitForBudget: while the budget is full (a store
// query holds it), a GET of cached messages waits, is answered 503 after
// 5 s and drains nothing; a GET of a topic with nothing cached answers []
// at once; once the store answer is written the messages are answered.
// Before, the GET answered at once, on top of what the budget held.
func TestMessageAnswersWaitForBudget(t *testing.T) {
	for _, route := range budgetRoutes {
		t.Run(route.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, g := budgetServer(t)
				var wg sync.WaitGroup
				defer wg.Wait()
				openGate := sync.OnceFunc(func() { close(g.gate) })
				defer openGate() // also when the test fails early
				wg.Go(func() {
					rec := httptest.NewRecorder()
					s.ServeHTTP(rec, httptest.NewRequest("GET", "/store/v3/messages?includeData=true&pageSize=100", nil))
				})
				synctest.Wait()
				if g.started.Load() != 1 {
					t.Fatal("the store query did not start")
				}
				expect(t, s, "GET", route.path, "", 200, "[]")
				route.deliver(s, bigMessages(t, "/waku/2/rs/0/0", 1)[0])
				start := time.Now()
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", route.path, nil))
				if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != textMessagesBusy || rec.Header().Get("Retry-After") != "1" {
					t.Fatalf("GET with the budget full: %d %.120q", rec.Code, rec.Body.String())
				}
				if waited := time.Since(start); waited != bodyWait {
					t.Errorf("answered 503 after %v, want %v", waited, bodyWait)
				}
				openGate()
				wg.Wait()
				code, _, body := do(t, s, "GET", route.path, "")
				if ts := timestamps(t, body); code != 200 || len(ts) != 1 || ts[0] != 1 {
					t.Fatalf("GET after the store answer: %d %v", code, ts)
				}
			})
		})
	}
}

// TestCacheDrainLimit: pending sums answerBytes; drain takes messages in
// arrival order while they fit in the limit, none for limit 0, and the
// first one whatever its size for a limit smaller than it.
func TestCacheDrainLimit(t *testing.T) {
	c := newCache(10)
	c.addPubsub([]string{testPubsub})
	var envs []*message.Envelope
	for i := range 4 {
		e := cacheMsg(t, testPubsub, testContent, fmt.Sprint("payload-", i), int64(i+1))
		envs = append(envs, e)
		c.deliver(e)
	}
	a := answerBytes(envs[0])
	if n, ok := c.pendingPubsub(testPubsub); !ok || n != 4*a {
		t.Fatalf("pending %d %v, want %d", n, ok, 4*a)
	}
	if _, ok := c.pendingPubsub("/waku/2/rs/0/9"); ok {
		t.Fatal("pending of a topic not readable")
	}
	for _, tc := range []struct {
		limit int64
		want  int
	}{{0, 0}, {1, 1}, {2*a - 1, 1}, {2 * a, 2}} {
		got, ok := c.drainPubsub(testPubsub, tc.limit)
		if !ok || len(got) != tc.want {
			t.Fatalf("limit %d: drained %d, want %d", tc.limit, len(got), tc.want)
		}
	}
	if n, _ := c.pendingPubsub(testPubsub); n != 0 {
		t.Fatalf("pending %d after draining all", n)
	}
}
