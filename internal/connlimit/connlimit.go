// Package connlimit bounds the connections an HTTP/1.1 server holds, so
// that clients which open connections and send nothing (or a header byte
// at a time) cannot grow the server's memory without end, while a
// well-behaved client still gets in.
//
// At the limit, a new connection takes the place of the oldest one
// without a request in a handler: first those idle or still sending a
// request's headers (http.StateNew, http.StateIdle: net/http marks a
// connection active only once the headers are read), oldest first, then
// those between a request's headers and its handler, oldest first. A
// connection whose request is in a handler (reading its body included) is
// never closed. When every connection is in a handler, the new one is
// answered 503 with "Connection: close" and closed. Closing an idle
// keep-alive connection is what RFC 9112 section 9.5 allows a server at
// any time; a slow client is what http.Server's own timeouts
// (ReadHeaderTimeout, ReadTimeout) would cut anyway. It serves HTTP/1.1
// over plain TCP (http.Server.Serve), which is what the node's REST API
// and metrics speak.
//
// nwaku's REST server (nim-presto over chronos's HttpServer,
// waku/rest_api/endpoint/server.nim) leaves maxConnections at -1: no limit.
package connlimit

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultMax is the connection limit of a Limiter whose Config.Max is 0.
const DefaultMax = 1024

// logEvery is the least time between two log lines about the limit.
const logEvery = time.Minute

// RefusedText is the body of the 503 a connection refused at the limit
// is answered.
const RefusedText = "Too many connections, try again later"

// refusal is the whole answer to a connection refused at the limit.
var refusal = []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"+
	"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", len(RefusedText), RefusedText))

// Config tunes a Limiter.
type Config struct {
	// Max is the most connections held at once. 0 means DefaultMax;
	// negative is no limit.
	Max int
	// Name names the server in log lines, e.g. "REST API".
	Name string
	// Logger receives one line when the limit is first reached and then
	// at most one a minute while it is, with the connections closed and
	// refused meanwhile. Nil means slog.Default().
	Logger *slog.Logger
}

// Stats counts a Limiter's connections.
type Stats struct {
	Open    int    // connections held now
	Evicted uint64 // closed to make room for a new one
	Refused uint64 // answered 503 and closed: every held one was being served
}

// Limiter tracks the connections of one http.Server; Serve installs it.
// It is safe for concurrent use.
type Limiter struct {
	cfg Config

	mu      sync.Mutex
	order   list.List // *entry, in accept order
	conns   map[net.Conn]*list.Element
	st      Stats
	logged  time.Time
	pending uint64 // evicted and refused since the last log line
}

type entry struct {
	conn    net.Conn
	state   http.ConnState
	serving int // requests in a handler (HTTP/1.1: 0 or 1)
}

// New returns a Limiter of cfg.
func New(cfg Config) *Limiter {
	if cfg.Max == 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Limiter{cfg: cfg, conns: map[net.Conn]*list.Element{}}
}

// Serve serves srv on ln within the limit: it sets srv's ConnState and
// ConnContext (calling any already set after its own) and wraps its
// Handler, then calls srv.Serve. It returns what srv.Serve returns.
func (l *Limiter) Serve(srv *http.Server, ln net.Listener) error {
	if l.cfg.Max < 0 {
		return srv.Serve(ln)
	}
	prevState, prevCtx := srv.ConnState, srv.ConnContext
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.connState(c, s)
		if prevState != nil {
			prevState(c, s)
		}
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		ctx = context.WithValue(ctx, connKey{}, c)
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		return ctx
	}
	h := srv.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	srv.Handler = l.handler(h)
	return srv.Serve(&listener{Listener: ln, l: l})
}

// Stats returns the counts so far.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st
	s.Open = len(l.conns)
	return s
}

type connKey struct{}

// handler marks a connection as serving while h runs.
func (l *Limiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		l.serving(c, 1)
		defer l.serving(c, -1)
		h.ServeHTTP(w, r)
	})
}

func (l *Limiter) serving(c net.Conn, d int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.conns[c]; ok {
		el.Value.(*entry).serving += d
	}
}

func (l *Limiter) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateHijacked, http.StateClosed:
		l.order.Remove(el)
		delete(l.conns, c)
	default:
		el.Value.(*entry).state = s
	}
}

// admit takes c in, closing a connection to make room at the limit; false
// when every held connection is being served.
func (l *Limiter) admit(c net.Conn) bool {
	l.mu.Lock()
	victim := l.victim()
	full := len(l.conns) >= l.cfg.Max
	switch {
	case !full:
	case victim != nil:
		ve := victim.Value.(*entry)
		l.order.Remove(victim)
		delete(l.conns, ve.conn)
		l.st.Evicted++
		defer ve.conn.Close() // after the unlock; its server goroutine sees the error
	default:
		l.st.Refused++
	}
	ok := !full || victim != nil
	if ok {
		l.conns[c] = l.order.PushBack(&entry{conn: c, state: http.StateNew})
	}
	if full {
		l.note()
	}
	l.mu.Unlock()
	return ok
}

// victim returns the connection to close at the limit: the oldest idle
// or still sending headers, else the oldest with its headers read and no
// handler yet; nil when all are in a handler. l.mu is held.
func (l *Limiter) victim() *list.Element {
	if len(l.conns) < l.cfg.Max {
		return nil
	}
	var reading *list.Element
	for el := l.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		switch {
		case e.serving > 0:
		case e.state == http.StateNew || e.state == http.StateIdle:
			return el
		case reading == nil:
			reading = el
		}
	}
	return reading
}

// note logs that the limit was reached, at most every logEvery. l.mu is
// held.
func (l *Limiter) note() {
	l.pending++
	now := time.Now()
	if !l.logged.IsZero() && now.Sub(l.logged) < logEvery {
		return
	}
	l.cfg.Logger.Warn("connection limit reached: idle and slow connections closed to make room", "server", l.cfg.Name,
		"limit", l.cfg.Max, "since_last", l.pending, "evicted", l.st.Evicted, "refused", l.st.Refused)
	l.logged, l.pending = now, 0
}

// listener admits each accepted connection or refuses it.
type listener struct {
	net.Listener
	l *Limiter
}

func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ln.l.admit(c) {
			return c, nil
		}
		// A fresh socket's send buffer takes the answer at once; the
		// deadline only bounds a pathological case.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(refusal)
		_ = c.Close()
	}
}
