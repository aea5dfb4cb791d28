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
		got := c.rpc.append(nil)
		if !bytes.Equal(got, c.want) {
			t.Fatalf("%s: Append = % x, want % x", c.name, got, c.want)
		}
		back, err := decode(got)
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
		got, err := decode(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got.Shards, c.want) {
			t.Fatalf("%s: shards %v, want %v", c.name, got.Shards, c.want)
		}
	}
	got, err := decode([]byte{0x08, 0x05, 0x08, 0x10})
	if err != nil || !got.HasClusterID || got.ClusterID != 16 {
		t.Fatalf("last cluster id wins: %+v, %v", got, err)
	}
	got, err = decode(nil)
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
		if _, err := decode(c.in); !errors.Is(err, c.want) {
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
		r, err := decode(data)
		if err != nil {
			return
		}
		if len(r.Shards) != cap(r.Shards) {
			t.Fatalf("Shards len %d, cap %d", len(r.Shards), cap(r.Shards))
		}
		// Whatever decodes re-encodes to bytes that decode to the same RPC.
		again, err := decode(r.append(nil))
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
		r, err := decode(data)
		if err != nil {
			t.Fatalf("% x: %v", data, err)
		}
		if !equalShards(r.Shards, []uint32{0, 1, 2}) || len(r.Shards) != cap(r.Shards) {
			t.Fatalf("% x: Shards %v len %d cap %d; want [0 1 2] with len == cap", data, r.Shards, len(r.Shards), cap(r.Shards))
		}
	}
}

// shardRange returns the shard ids from..to-1.
func shardRange(from, to uint32) []uint32 {
	var out []uint32
	for s := from; s < to; s++ {
		out = append(out, s)
	}
	return out
}

// TestAppendDropsDeprecatedField: when the deprecated unpacked field 2 and
// field 3 together are over MaxRPCSize, only field 3 is written, so that a
// node relaying 300 shards stays readable; below that, both are written.
func TestAppendDropsDeprecatedField(t *testing.T) {
	// Shards 0..299 of cluster 0: field 1 is 2 bytes; field 3 is 1 + 2 +
	// (128*1 + 172*2 = 472) = 475 bytes; field 2 would add 128*2 + 172*3 =
	// 772 bytes, 1249 in all.
	r := RPC{ClusterID: 0, HasClusterID: true, Shards: shardRange(0, 300)}
	got := r.append(nil)
	if len(got) != 477 || r.size() != 477 {
		t.Fatalf("300 shards: Append gives %d bytes, Size %d; want 477 (field 3 alone)", len(got), r.size())
	}
	if want := []byte{0x08, 0x00, 0x1a, 0xd8, 0x03, 0x00, 0x01}; !bytes.HasPrefix(got, want) {
		t.Fatalf("300 shards: encoding starts % x, want % x", got[:len(want)], want)
	}
	back, err := decode(got)
	if err != nil || !equalShards(back.Shards, r.Shards) || !back.HasClusterID {
		t.Fatalf("300 shards: Decode = %d shards, %v", len(back.Shards), err)
	}

	// The largest run of low shards for which both fields fit: shards below
	// 128 take 1 + 1 bytes in field 2 and 1 in field 3, so 0..n-1 take
	// 2 + n*2 + 1 + (n < 128 ? 1 : 2) + n bytes.
	for n := uint32(1); n < 400; n++ {
		r := RPC{ClusterID: 0, HasClusterID: true, Shards: shardRange(0, n)}
		enc := r.append(nil)
		if len(enc) != r.size() {
			t.Fatalf("%d shards: Append %d bytes, Size %d", n, len(enc), r.size())
		}
		both := bytes.Contains(enc[:3], []byte{0x10}) // field 2's tag right after field 1
		full := 2 + r.deprecatedSize() + r.packedSize()
		if both != (full <= MaxRPCSize) {
			t.Fatalf("%d shards: field 2 written %v, both fields take %d bytes", n, both, full)
		}
		if back, err := decode(enc); err != nil || !equalShards(back.Shards, r.Shards) {
			t.Fatalf("%d shards: round trip %d shards, %v", n, len(back.Shards), err)
		}
	}
}

// TestCheckShards checks the bound: MinShardsFit shards of 2 bytes each fit
// with the widest cluster id, one more does not; 573 low shards of cluster 0
// fit, 574 do not; 1024 never do.
func TestCheckShards(t *testing.T) {
	ids := func(from, to int) []uint16 {
		var out []uint16
		for s := from; s < to; s++ {
			out = append(out, uint16(s))
		}
		return out
	}
	cases := []struct {
		name    string
		cluster uint16
		shards  []uint16
		fits    bool
	}{
		{"none", 0, nil, true},
		{"508 high shards, cluster 65535", 65535, ids(128, 128+MinShardsFit), true},
		{"509 high shards, cluster 65535", 65535, ids(128, 128+MinShardsFit+1), false},
		{"shards 0..572, cluster 0", 0, ids(0, 573), true},
		{"shards 0..573, cluster 0", 0, ids(0, 574), false},
		{"shards 0..299, cluster 16", 16, ids(0, 300), true},
		{"all 1024", 0, ids(0, 1024), false},
	}
	for _, c := range cases {
		err := CheckShards(c.cluster, c.shards)
		if c.fits != (err == nil) || err != nil && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: CheckShards = %v, want fits %v", c.name, err, c.fits)
		}
		r := RPC{ClusterID: uint32(c.cluster), HasClusterID: true}
		for _, s := range c.shards {
			r.Shards = append(r.Shards, uint32(s))
		}
		if _, derr := decode(r.append(nil)); c.fits != (derr == nil) {
			t.Errorf("%s: Decode of the encoding: %v, want fits %v", c.name, derr, c.fits)
		}
	}
}
