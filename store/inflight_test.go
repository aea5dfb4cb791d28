package store

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/couriernet/courier/internal/lpframe"
)

// Peers that ask for the largest pages and never read the answers make
// the server hold at most Config.MaxBytesInFlight: twelve pages of 100
// messages of 140 kB (14 MB each) held 170 MB before; with a budget of
// 40 MiB one is framed and written, the others are answered 503
// SERVICE_UNAVAILABLE after BusyWait, and a reading client is answered
// 503 too until the room is given back.
func TestResponsesInFlightBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 14 MB of messages and holds streams")
	}
	const (
		pages  = 12
		budget = 40 << 20
	)
	a := openArchive(t)
	payload := strings.Repeat("p", 140_000)
	for i := range 100 {
		appendWait(t, a, newEnv(t, topicA, ct("big"), int64(1000+i), payload+string(rune('a'+i%26))))
	}
	client, server, srv := pair(t, a, Config{MaxBytesInFlight: budget, BusyWait: 300 * time.Millisecond})
	base := liveHeap()

	req := (&Request{RequestID: "hold", IncludeData: true, Forward: true, Limit: 100}).Append(nil)
	var held []network.Stream
	for range pages {
		st, err := client.NewStream(context.Background(), server, ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		if err := lpframe.Write(st, req); err != nil {
			t.Fatal(err)
		}
		held = append(held, st) // never read
	}
	defer func() {
		for _, st := range held {
			st.Reset()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for srv.Stats().Queries < pages || srv.Stats().Busy < pages-1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want %d queries, %d answered busy", srv.Stats(), pages, pages-1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if grown := liveHeap() - base; grown > budget+16<<20 {
		t.Errorf("%d pages held by peers that do not read: live heap grew by %d MB, want at most %d MB", pages, grown>>20, (budget+16<<20)>>20)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var se *StatusError
	if _, err := Query(ctx, client, server, &Request{IncludeData: true, Limit: 100}, nil); !errors.As(err, &se) || se.Code != StatusServiceUnavailable || se.Desc != "SERVICE_UNAVAILABLE" {
		t.Fatalf("query while the budget is held: %v, want 503 SERVICE_UNAVAILABLE", err)
	}
	for _, st := range held {
		st.Reset()
	}
	held = nil
	for {
		resp, err := Query(ctx, client, server, &Request{IncludeData: true, Forward: true, Limit: 100}, nil)
		if err == nil {
			if len(resp.Messages) != 100 {
				t.Fatalf("page of %d messages, want 100", len(resp.Messages))
			}
			break
		}
		if !errors.As(err, &se) || se.Code != StatusServiceUnavailable || ctx.Err() != nil {
			t.Fatalf("query once the peers left: %v", err)
		}
	}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
