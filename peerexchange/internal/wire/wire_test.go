package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestCodecWire(t *testing.T) {
	// Request: {1: {1: 5}}.
	if got, want := EncodeRequest(5), []byte{0x0a, 0x02, 0x08, 0x05}; !bytes.Equal(got, want) {
		t.Errorf("request % x, want % x", got, want)
	}
	// Response: {1: {}, 2: {1: {1: "ab"}, 10: 200}}; field 1 always, as nwaku needs.
	got := EncodeResponse(Response{ENRs: [][]byte{[]byte("ab")}, StatusCode: 200})
	want := []byte{0x0a, 0x00, 0x12, 0x09, 0x0a, 0x04, 0x0a, 0x02, 'a', 'b', 0x50, 0xc8, 0x01}
	if !bytes.Equal(got, want) {
		t.Errorf("response % x, want % x", got, want)
	}
	rpc, err := DecodeRPC(got)
	if err != nil || !rpc.HasQuery || !rpc.HasResponse || rpc.Response.StatusCode != 200 || len(rpc.Response.ENRs) != 1 {
		t.Fatalf("%+v %v", rpc, err)
	}
	// go-waku writes no status: success with peers, else unavailable.
	for _, tc := range []struct {
		b    []byte
		code uint32
	}{{[]byte{0x12, 0x06, 0x0a, 0x04, 0x0a, 0x02, 'a', 'b'}, StatusSuccess}, {[]byte{0x12, 0x00}, StatusServiceUnavailable}} {
		rpc, err := DecodeRPC(tc.b)
		if err != nil || rpc.Response.StatusCode != tc.code {
			t.Errorf("% x: %+v %v", tc.b, rpc, err)
		}
	}
	for _, bad := range [][]byte{{0x0a}, {0x0a, 0x05, 0x08}, {0x12, 0x03, 0x0a, 0x09, 0x00}, {0xff}} {
		if _, err := DecodeRPC(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

func FuzzDecodeRPC(f *testing.F) {
	f.Add(EncodeRequest(5))
	f.Add(EncodeResponse(Response{ENRs: [][]byte{{1, 2}}, StatusCode: 200, StatusDesc: "ok"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		rpc, err := DecodeRPC(b)
		if err != nil || !rpc.HasResponse {
			return
		}
		again, err := DecodeRPC(EncodeResponse(rpc.Response))
		if err != nil || len(again.Response.ENRs) != len(rpc.Response.ENRs) || again.Response.StatusCode != rpc.Response.StatusCode {
			t.Fatalf("re-encoded: %+v %v", again, err)
		}
	})
}
