package rest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingBody is an endless request body of spaces that counts the bytes
// read from it.
type countingBody struct{ n atomic.Int64 }

func (c *countingBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// TestBodyOverLimitNotRead: a body whose Content-Length is over
// MaxBodyBytes is answered 413 with nwaku's text on every route that takes
// a body, and not one byte of it is read.
func TestBodyOverLimitNotRead(t *testing.T) {
	s := lightServer(t, &lightFake{fakeBackend: newFake(t)}, Config{})
	for _, route := range []struct{ method, path string }{
		{"POST", "/relay/v1/subscriptions"},
		{"DELETE", "/relay/v1/subscriptions"},
		{"POST", msgsPath("/waku/2/rs/0/0")},
		{"POST", "/relay/v1/auto/subscriptions"},
		{"DELETE", "/relay/v1/auto/subscriptions"},
		{"POST", "/relay/v1/auto/messages"},
		{"POST", "/lightpush/v3/message"},
		{"POST", "/lightpush/v1/message"},
		{"POST", "/filter/v2/subscriptions"},
		{"PUT", "/filter/v2/subscriptions"},
		{"DELETE", "/filter/v2/subscriptions"},
		{"DELETE", "/filter/v2/subscriptions/all"},
	} {
		body := &countingBody{}
		req := httptest.NewRequest(route.method, route.path, body)
		req.ContentLength = 28_000_000
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		want := fmt.Sprintf("Request body too large: over %d bytes", DefaultMaxBodyBytes)
		if rec.Code != http.StatusRequestEntityTooLarge || rec.Body.String() != want || body.n.Load() != 0 {
			t.Errorf("%s %s with 28 MB: %d %q after reading %d body bytes; want 413 %q, nothing read",
				route.method, route.path, rec.Code, rec.Body.String(), body.n.Load(), want)
		}
	}
}

// gatedBody is a request body that blocks its first Read until gate is
// closed, then gives a JSON array of one pubsub topic padded with spaces
// to size bytes.
type gatedBody struct {
	gate    <-chan struct{}
	started *atomic.Int32
	r       io.Reader
	once    sync.Once
}

func newGatedBody(gate <-chan struct{}, started *atomic.Int32, size int) *gatedBody {
	const topics = `["/waku/2/rs/0/0"]`
	return &gatedBody{gate: gate, started: started, r: strings.NewReader(topics[:len(topics)-1] + strings.Repeat(" ", size-len(topics)) + "]")}
}

func (g *gatedBody) Read(p []byte) (int, error) {
	g.once.Do(func() {
		g.started.Add(1)
		<-g.gate
	})
	return g.r.Read(p)
}

// TestBodyBudget: the bodies of concurrent requests hold at most
// MaxBufferedBytes: with room for three 1 MiB bodies, only three of ten
// requests read theirs while the others wait, then each is served in turn;
// one that waits longer than 5 s is answered 503. A body of unknown
// length reserves MaxBodyBytes.
func TestBodyBudget(t *testing.T) {
	const size = 1 << 20
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked %v", chunked), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newServer(t, newFake(t), Config{MaxBodyBytes: size, MaxBufferedBytes: 3 * size})
				gate := make(chan struct{})
				var started atomic.Int32
				serve := func() *httptest.ResponseRecorder {
					req := httptest.NewRequest("POST", "/relay/v1/subscriptions", newGatedBody(gate, &started, size))
					req.ContentLength = size
					if chunked {
						req.ContentLength = -1
					}
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					s.ServeHTTP(rec, req)
					return rec
				}
				const n = 10
				recs := make([]*httptest.ResponseRecorder, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { recs[i] = serve() })
				}
				synctest.Wait()
				if got := started.Load(); got != 3 {
					t.Errorf("%d of %d bodies being read at once, want 3 (MaxBufferedBytes / MaxBodyBytes)", got, n)
				}
				close(gate)
				wg.Wait()
				for i, rec := range recs {
					if rec.Code != 200 || rec.Body.String() != "OK" {
						t.Errorf("request %d: %d %q, want 200 OK", i, rec.Code, rec.Body.String())
					}
				}

				// With the budget held for longer than 5 s, a waiting request gets 503.
				gate = make(chan struct{})
				started.Store(0)
				for i := range 3 {
					wg.Go(func() { recs[i] = serve() })
				}
				synctest.Wait()
				late := make(chan *httptest.ResponseRecorder)
				go func() { late <- serve() }()
				time.Sleep(5*time.Second + time.Millisecond)
				rec := <-late
				if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != textBodiesBusy || rec.Header().Get("Retry-After") != "1" || started.Load() != 3 {
					t.Errorf("a request waiting 5 s for room: %d %q Retry-After %q, %d bodies read; want 503 %q, 3 read",
						rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"), started.Load(), textBodiesBusy)
				}
				close(gate)
				wg.Wait()
			})
		})
	}
}

// TestReadUpTo reads bodies of unknown length at, under and over the
// limit, whose buffer never grows past the limit.
func TestReadUpTo(t *testing.T) {
	const limit = 3000
	for _, n := range []int{0, 1, 511, 512, 513, 2999, 3000, 3001, 10000} {
		body := strings.Repeat("x", n)
		got, err := readUpTo(http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(body)), limit), limit)
		var tooLarge *http.MaxBytesError
		switch {
		case n > limit:
			if !errors.As(err, &tooLarge) || tooLarge.Limit != limit {
				t.Errorf("%d bytes: %v, want a MaxBytesError of %d", n, err, limit)
			}
		case err != nil || string(got) != body || cap(got) > limit:
			t.Errorf("%d bytes: %d bytes (cap %d), %v", n, len(got), cap(got), err)
		}
	}
}
