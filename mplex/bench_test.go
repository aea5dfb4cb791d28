package mplex

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
)

// BenchmarkStream moves messages over one stream of a loopback TCP
// connection, with mplex and, for comparison, go-libp2p's yamux, without
// a security layer: the muxers' own cost per message. At most 16 messages
// are in flight (2.4 MB of 150 kB): mplex has no flow control, and a
// reader more than 4 MiB behind is reset.
func BenchmarkStream(b *testing.B) {
	for _, mux := range []struct {
		name string
		tr   network.Multiplexer
	}{{"mplex", DefaultTransport()}, {"yamux", yamux.DefaultTransport}} {
		for _, size := range []int{1 << 10, 64 << 10, 150 << 10} {
			b.Run(fmt.Sprintf("%s/%dkB", mux.name, size>>10), func(b *testing.B) {
				benchStream(b, mux.tr, size)
			})
		}
	}
}

func benchStream(b *testing.B, tr network.Multiplexer, size int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	sc := <-accepted
	client, err := tr.NewConn(cc, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := tr.NewConn(sc, true, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	out, err := client.OpenStream(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	out.Write([]byte{0}) // yamux announces the stream with its first data
	in, err := server.AcceptStream()
	if err != nil {
		b.Fatal(err)
	}
	in.Read(make([]byte, 1))
	window := make(chan struct{}, 16)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for range b.N {
			if _, err := io.ReadFull(in, buf); err != nil {
				done <- err
				return
			}
			<-window
		}
		done <- nil
	}()
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		select {
		case window <- struct{}{}:
		case err := <-done:
			b.Fatalf("reader: %v", err)
		}
		if _, err := out.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
