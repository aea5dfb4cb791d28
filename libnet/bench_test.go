package libnet

import (
	"context"
	"fmt"
	"testing"
	"time"
)

var benchSizes = []int{1_000, 10_000, 100_000}

// BenchmarkAsk measures one ask and its echoed reply over loopback, per
// lane and payload size.
func BenchmarkAsk(b *testing.B) {
	for _, lane := range []Lane{LaneRaw, LaneLegacy} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%dkB", lane, size/1000), func(b *testing.B) {
				cli, srv := newPair(b, Config{Lane: lane}, Config{Lane: lane})
				srv.Handle("echo", func(_ *Header, p []byte, respond Respond) { _ = respond(p) }, RouteOptions{})
				m := Msg{Route: "echo", Payload: make([]byte, size)}
				ctx := context.Background()
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					if _, err := cli.Ask(ctx, srv.Addr(), m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTell measures tells until the receiver's handler has run, with
// up to 32 in flight.
func BenchmarkTell(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("raw/%dkB", size/1000), func(b *testing.B) {
			cli, srv := newPair(b, Config{Lane: LaneRaw}, Config{Lane: LaneRaw})
			window := make(chan struct{}, 32)
			srv.Handle("sink", func(*Header, []byte, Respond) { <-window }, RouteOptions{})
			m := Msg{Route: "sink", Payload: make([]byte, size)}
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				window <- struct{}{}
				if err := cli.Tell(ctx, srv.Addr(), m); err != nil {
					b.Fatal(err)
				}
			}
			for len(window) > 0 { // let the last tells land before the endpoints close
				time.Sleep(time.Millisecond)
			}
		})
	}
}
