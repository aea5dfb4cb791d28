package peerexchange

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/couriernet/courier/internal/lpframe"
	"github.com/couriernet/courier/peerexchange/internal/wire"
)

// lines records the log records a logger gets, by message.
type lines struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

// with returns the records whose message is msg.
func (l *lines) with(msg string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.recs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

// attr returns r's attribute key, as its value's string.
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

func TestLogLimit(t *testing.T) {
	l := logLimit{interval: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		at   time.Duration
		ok   bool
		held uint64
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{5 * time.Second, false, 0},
		{10*time.Second - 1, false, 0},
		{10 * time.Second, true, 3},
		{11 * time.Second, false, 0},
		{30 * time.Second, true, 1},
		{41 * time.Second, true, 0},
	} {
		ok, held := l.allow(t0.Add(tc.at))
		if ok != tc.ok || held != tc.held {
			t.Errorf("at %v: allow = %v, %d; want %v, %d", tc.at, ok, held, tc.ok, tc.held)
		}
	}
}

// TestServerBadRequestLogBounded: a peer sending bad request after bad
// request gets a 400 for each, all counted, but only the first is logged
// within BadRequestLogInterval.
func TestServerBadRequestLogBounded(t *testing.T) {
	const n = 100
	server, client := newHost(t), newHost(t)
	log := new(lines)
	s := NewServer(server, Config{Logger: slog.New(log)})
	defer s.Close()
	connect(t, client, server)
	start := time.Now()
	for range n {
		st, err := client.NewStream(context.Background(), server.ID(), ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		lpframe.Write(st, []byte{0x12, 0x00}) // no query
		b, err := lpframe.Read(st, MaxRPCSize)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rpc, err := wire.DecodeRPC(b); err != nil || rpc.Response.StatusCode != wire.StatusBadRequest {
			t.Fatalf("answer %+v %v, want 400", rpc.Response, err)
		}
	}
	if time.Since(start) >= BadRequestLogInterval {
		t.Skipf("%d requests took %v, over the log interval", n, time.Since(start))
	}
	if st := s.Stats(); st.BadRequests != n {
		t.Errorf("BadRequests = %d, want %d", st.BadRequests, n)
	}
	got := log.with("peer exchange: bad request")
	if len(got) != 1 {
		t.Fatalf("%d bad request lines for %d bad requests, want 1", len(got), n)
	}
	if h := attr(got[0], "held"); h != "0" {
		t.Errorf("first line held = %s, want 0", h)
	}
}

// TestClientRejectedENRsOneLine: a response of many records that do not
// decode is logged as one line with their number, whatever their number.
func TestClientRejectedENRsOneLine(t *testing.T) {
	const n = 20000
	junk := make([][]byte, n)
	for i := range junk {
		junk[i] = []byte{0xc0}
	}
	server, client := newHost(t), newHost(t)
	server.SetStreamHandler(ProtocolID, func(st network.Stream) {
		defer st.Close()
		lpframe.Read(st, MaxRPCSize)
		lpframe.Write(st, wire.EncodeResponse(wire.Response{StatusCode: 200, ENRs: junk}))
	})
	connect(t, client, server)
	log := new(lines)
	c := NewClient(client, slog.New(log))
	got, err := c.Request(context.Background(), server.ID(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("kept %d peers", len(got))
	}
	if st := c.Stats(); st.Rejected != n || st.Received != 0 {
		t.Errorf("client stats %+v", st)
	}
	if len(log.recs) != 1 {
		t.Fatalf("%d log lines for one response, want 1", len(log.recs))
	}
	if r := log.recs[0]; r.Message != "peer exchange: ENRs rejected" || attr(r, "rejected") != "20000" || attr(r, "first_err") == "" {
		t.Errorf("line %q rejected=%s first_err=%q", r.Message, attr(r, "rejected"), attr(r, "first_err"))
	}
}
