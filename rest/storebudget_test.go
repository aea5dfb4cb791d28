package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/couriernet/courier/store"
)

// gatedStore answers local store queries once gate is closed, counting
// the queries that started.
type gatedStore struct {
	*fakeBackend
	gate    chan struct{}
	started atomic.Int32
}

func (g *gatedStore) StoreLocal(ctx context.Context, req *store.Request) (*store.Response, error) {
	g.started.Add(1)
	<-g.gate
	return &store.Response{StatusCode: 200, StatusDesc: "OK"}, nil
}

func (g *gatedStore) StoreRemote(context.Context, string, *store.Request) (*store.Response, error) {
	return nil, ErrNoStorePeer
}

// TestStoreAnswersBudget: store answers draw on MaxBufferedBytes: of ten
// concurrent queries for pages of 100 messages with data (up to 61 MB of
// answer each), one runs at a time and one that waits 5 s is answered
// 503; ten queries for hashes run at once. Before, all ten pages were
// queried and held at once (50 of them held 2.4 GB in a node).
func TestStoreAnswersBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &gatedStore{fakeBackend: newFake(t), gate: make(chan struct{})}
		s := newServer(t, g.fakeBackend, Config{Store: g})
		serve := func(query string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/store/v3/messages?"+query, nil))
			return rec
		}
		const n = 10
		recs := make([]*httptest.ResponseRecorder, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { recs[i] = serve("includeData=true&pageSize=100") })
		}
		synctest.Wait()
		if got := g.started.Load(); got != 1 {
			t.Errorf("%d of %d queries for full pages with data running at once, want 1", got, n)
		}
		time.Sleep(5*time.Second + time.Millisecond)
		close(g.gate)
		wg.Wait()
		busy := 0
		for _, rec := range recs {
			switch {
			case rec.Code == http.StatusServiceUnavailable && rec.Body.String() == textAnswersBusy && rec.Header().Get("Retry-After") == "1":
				busy++
			case rec.Code != 200:
				t.Errorf("answer %d %q", rec.Code, rec.Body.String())
			}
		}
		if busy != n-1 {
			t.Errorf("%d queries answered 503 after waiting 5 s, want %d", busy, n-1)
		}

		g.gate = make(chan struct{})
		g.started.Store(0)
		for i := range n {
			wg.Go(func() { recs[i] = serve("pageSize=100") })
		}
		synctest.Wait()
		if got := g.started.Load(); got != n {
			t.Errorf("%d of %d queries for hashes running at once, want all", got, n)
		}
		close(g.gate)
		wg.Wait()
	})
}
