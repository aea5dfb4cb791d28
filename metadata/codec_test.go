package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestAppendBytes(t *testing.T) {
	cases := []struct {
		name string
		rpc  RPC
		want []byte
	}{
		// cluster 1, shards 0 and 300: field 1 = 0x08 01; field 2 unpacked =
		// 0x10 00, 0x10 ac02; field 3 packed = 0x1a 03 00 ac02.
		{"cluster 1 shards 0,300", RPC{ClusterID: 1, HasClusterID: true, Shards: []uint32{0, 300}},
			[]byte{0x08, 0x01, 0x10, 0x00, 0x10, 0xac, 0x02, 0x1a, 0x03, 0x00, 0xac, 0x02}},
		// cluster 0 is written explicitly; no shards means no field 2 or 3.
		{"cluster 0 no shards", RPC{ClusterID: 0, HasClusterID: true}, []byte{0x08, 0x00}},
		{"nothing", RPC{}, nil},
	}
	for _, c := range cases {
		got := c.rpc.Append(nil)
		if !bytes.Equal(got, c.want) {
			t.Fatalf("%s: Append = % x, want % x", c.name, got, c.want)
		}
		back, err := Decode(got)
		if err != nil {
			t.Fatalf("%s: Decode: %v", c.name, err)
		}
		if back.ClusterID != c.rpc.ClusterID || back.HasClusterID != c.rpc.HasClusterID || !equalShards(back.Shards, c.rpc.Shards) {
			t.Fatalf("%s: round trip %+v, want %+v", c.name, back, c.rpc)
		}
	}
}

func equalShards(a, b []uint32) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// TestDecodeOrder checks nwaku's read order: field 3, then packed field 2,
// then unpacked field 2.
func TestDecodeOrder(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want []uint32
	}{
		{"field 3 wins over both forms of 2",
			[]byte{0x10, 0x07, 0x12, 0x01, 0x08, 0x1a, 0x02, 0x01, 0x02},
			[]uint32{1, 2}},
		{"packed 2 wins over unpacked 2",
			[]byte{0x10, 0x07, 0x12, 0x02, 0x08, 0x09},
			[]uint32{8, 9}},
		{"unpacked 2 alone",
			[]byte{0x08, 0x10, 0x10, 0x04, 0x10, 0x05},
			[]uint32{4, 5}},
		{"unpacked 3 is field 3",
			[]byte{0x18, 0x03, 0x18, 0x04, 0x10, 0x05},
			[]uint32{3, 4}},
		{"empty packed 3 falls back to 2",
			[]byte{0x1a, 0x00, 0x10, 0x05},
			[]uint32{5}},
		{"unknown fields skipped",
			[]byte{0x22, 0x02, 0xff, 0xff, 0x28, 0x01, 0x1a, 0x01, 0x06},
			[]uint32{6}},
		{"wide varint truncates to uint32",
			[]byte{0x10, 0x80, 0x80, 0x80, 0x80, 0x10},
			[]uint32{0}},
	}
	for _, c := range cases {
		got, err := Decode(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Shards, c.want) {
			t.Fatalf("%s: shards %v, want %v", c.name, got.Shards, c.want)
		}
	}
	got, err := Decode([]byte{0x08, 0x05, 0x08, 0x10})
	if err != nil || !got.HasClusterID || got.ClusterID != 16 {
		t.Fatalf("last cluster id wins: %+v, %v", got, err)
	}
	got, err = Decode(nil)
	if err != nil || got.HasClusterID || got.Shards != nil {
		t.Fatalf("empty: %+v, %v", got, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"truncated tag", []byte{0x80}, ErrMalformed},
		{"truncated cluster", []byte{0x08}, ErrMalformed},
		{"cluster as bytes", []byte{0x0a, 0x00}, ErrMalformed},
		{"packed run truncated", []byte{0x1a, 0x05, 0x01}, ErrMalformed},
		{"bad varint in packed run", []byte{0x1a, 0x01, 0x80}, ErrMalformed},
		{"shards as fixed32", []byte{0x1d, 0, 0, 0, 0}, ErrMalformed},
		{"group", []byte{0x0b}, ErrMalformed},
		{"too large", make([]byte, MaxRPCSize+1), ErrTooLarge},
	}
	for _, c := range cases {
		if _, err := Decode(c.in); !errors.Is(err, c.want) {
			t.Fatalf("%s: error = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	payload := []byte{0x08, 0x01}
	if err := writeFrame(&buf, payload); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), []byte{0x02, 0x08, 0x01}) {
		t.Fatalf("frame = % x", buf.Bytes())
	}
	got, err := readFrame(&buf)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("readFrame = % x, %v", got, err)
	}
	// 1025 = 0x81 0x08: one byte over the limit.
	if _, err := readFrame(bytes.NewReader([]byte{0x81, 0x08})); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized frame: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})); err == nil {
		t.Fatal("overlong varint accepted")
	}
	if _, err := readFrame(bytes.NewReader([]byte{0x03, 0x08})); err == nil {
		t.Fatal("short frame accepted")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x08, 0x01, 0x10, 0x00, 0x10, 0xac, 0x02, 0x1a, 0x03, 0x00, 0xac, 0x02})
	f.Add([]byte{0x10, 0x07, 0x12, 0x02, 0x08, 0x09})
	f.Add([]byte{0x1a, 0x05, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		if len(r.Shards) != cap(r.Shards) {
			t.Fatalf("Shards len %d, cap %d", len(r.Shards), cap(r.Shards))
		}
		// Whatever decodes re-encodes to bytes that decode to the same RPC.
		again, err := Decode(r.Append(nil))
		if err != nil && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("re-decode: %v", err)
		}
		if err == nil && (again.ClusterID != r.ClusterID || again.HasClusterID != r.HasClusterID || !equalShards(again.Shards, r.Shards)) {
			t.Fatalf("re-decode %+v, want %+v", again, r)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0x02, 0x08, 0x01})
	f.Add([]byte{0x81, 0x08})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := readFrame(bytes.NewReader(data))
		if err == nil && len(b) > MaxRPCSize {
			t.Fatalf("frame of %d bytes", len(b))
		}
	})
}

// TestDecodeShardsCapped: the decoded shard list has len == cap, so an
// append by the caller never shares memory with the decoder's.
func TestDecodeShardsCapped(t *testing.T) {
	for _, data := range [][]byte{
		{0x08, 0x01, 0x1a, 0x03, 0x00, 0x01, 0x02},       // packed field 3: shards 0, 1, 2
		{0x08, 0x01, 0x18, 0x00, 0x18, 0x01, 0x18, 0x02}, // unpacked field 3
		{0x08, 0x01, 0x12, 0x03, 0x00, 0x01, 0x02},       // packed field 2 (deprecated)
	} {
		r, err := Decode(data)
		if err != nil {
			t.Fatalf("% x: %v", data, err)
		}
		if !equalShards(r.Shards, []uint32{0, 1, 2}) || len(r.Shards) != cap(r.Shards) {
			t.Fatalf("% x: Shards %v len %d cap %d; want [0 1 2] with len == cap", data, r.Shards, len(r.Shards), cap(r.Shards))
		}
	}
}
