package rest

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// bodyWait bounds how long a request waits for room in the body budget
// (Config.MaxBufferedBytes) before it is answered 503.
const bodyWait = 5 * time.Second

// textBodiesBusy answers a request whose body found no room in the budget
// within bodyWait.
const textBodiesBusy = "Too many request bodies in memory, try again later"

// bodyBudget bounds the request body bytes held in memory by all requests
// together (Config.MaxBufferedBytes). Waiters are served in arrival order,
// so a large body is not starved by a stream of small ones.
type bodyBudget struct {
	sem     *semaphore.Weighted
	maxBody int64
}

func newBodyBudget(total, maxBody int64) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(total), maxBody: maxBody}
}

// size is what a request reserves before its body is read: its
// Content-Length, MaxBodyBytes when the length is not known (the most
// readBody buffers), and nothing for a request without a body or one over
// MaxBodyBytes (readBody refuses it without reading it).
func (b *bodyBudget) size(r *http.Request) int64 {
	switch n := r.ContentLength; {
	case n < 0:
		return b.maxBody
	case n > b.maxBody:
		return 0
	default:
		return n
	}
}

// reserve reserves n bytes for r's body, waiting up to bodyWait while the
// budget is full. When it reports false it has answered 503.
func (b *bodyBudget) reserve(w http.ResponseWriter, r *http.Request, n int64) bool {
	return b.reserveAs(w, r, n, textBodiesBusy, "close") // the body is left unread
}

// textAnswersBusy answers a store query whose answer found no room in
// the budget within bodyWait.
const textAnswersBusy = "Too many store answers in memory, try again later"

// reserveAs reserves n bytes for r, waiting up to bodyWait while the
// budget is full; when it reports false it has answered 503 with busy and
// the Connection header conn (none when "").
func (b *bodyBudget) reserveAs(w http.ResponseWriter, r *http.Request, n int64, busy, conn string) bool {
	if b.sem.TryAcquire(n) {
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), bodyWait)
	defer cancel()
	if b.sem.Acquire(ctx, n) == nil {
		return true
	}
	w.Header().Set("Retry-After", "1")
	if conn != "" {
		w.Header().Set("Connection", conn)
	}
	writeText(w, http.StatusServiceUnavailable, busy)
	return false
}

// release gives back what reserve took.
func (b *bodyBudget) release(n int64) { b.sem.Release(n) }
