package mplex

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkResetFlood feeds a connection the inputs that make it queue
// Resets, and reports the bytes the process allocated per byte the
// connection read (alloc-B/in-B), the input that a peer pays for:
//   - stalled: a peer holding MaxInboundStreams (1 here) sends 2 MB of
//     NewStream frames and never reads (one connection per op);
//   - reading: the same peer reads, and sends bursts of 1,024 NewStream
//     frames, each burst once the Resets of the last one arrived;
//   - reset-by-host: the peer opens streams that this side accepts and
//     resets (as a host resets an unknown protocol), and reads.
func BenchmarkResetFlood(b *testing.B) {
	b.Run("stalled", func(b *testing.B) {
		input := refusals(1 << 20)
		measure(b, func() int64 {
			a, p := net.Pipe()
			mc, err := (&Transport{MaxInboundStreams: 1}).NewConn(a, true, nil)
			if err != nil {
				b.Fatal(err)
			}
			p.Write(appendFrame(nil, 0, flagNewStream, nil))
			done := make(chan int)
			go func() {
				n, _ := p.Write(input)
				done <- n
			}()
			var n int
			select {
			case n = <-done:
			case <-time.After(10 * time.Second): // the connection stays stuck: count what it took
				p.Close()
				n = <-done
			}
			mc.Close()
			p.Close()
			return int64(n) + 2
		})
	})
	b.Run("reading", func(b *testing.B) {
		const burst = 1024
		mc, p, read := readingPeer(b, &Transport{MaxInboundStreams: 1})
		defer func() { mc.Close(); p.Close() }()
		p.Write(appendFrame(nil, 0, flagNewStream, nil))
		input := refusals(burst)
		var want int64
		measure(b, func() int64 {
			if _, err := p.Write(input); err != nil {
				b.Fatal(err)
			}
			want += int64(len(input)) // a Reset of stream 1 is 2 bytes too
			for read.Load() < want {
				runtime.Gosched()
			}
			return int64(len(input))
		})
	})
	b.Run("reset-by-host", func(b *testing.B) {
		mc, p, read := readingPeer(b, &Transport{})
		defer func() { mc.Close(); p.Close() }()
		var id uint64
		var want int64
		var frame []byte
		measure(b, func() int64 {
			frame = appendFrame(frame[:0], id, flagNewStream, nil)
			if _, err := p.Write(frame); err != nil {
				b.Fatal(err)
			}
			s, err := mc.AcceptStream()
			if err != nil {
				b.Fatal(err)
			}
			s.Reset()
			want += int64(len(frame)) // the Reset has the same header
			for read.Load() < want {
				runtime.Gosched()
			}
			id++
			return int64(len(frame))
		})
	})
}

// readingPeer returns a connection of tr over a net.Pipe and the peer's
// end, which a goroutine reads, counting the bytes in read.
func readingPeer(b *testing.B, tr *Transport) (*conn, net.Conn, *atomic.Int64) {
	a, p := net.Pipe()
	mc, err := tr.NewConn(a, true, nil)
	if err != nil {
		b.Fatal(err)
	}
	read := new(atomic.Int64)
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := p.Read(buf)
			read.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return mc.(*conn), p, read
}

// measure runs op b.N times, op returning the bytes the connection read,
// and reports the process's allocations per byte read.
func measure(b *testing.B, op func() int64) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var in int64
	for b.Loop() {
		in += op()
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(in), "alloc-B/in-B")
	b.ReportMetric(float64(in)/float64(b.N), "in-B/op")
}
