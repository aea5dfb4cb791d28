package protowalk

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// walk reads field 1 as bytes and field 2 as a varint and skips the others.
func walk(b []byte) (string, error) {
	var got string
	r := NewReader(b)
	for r.Next() {
		switch r.Num() {
		case 1:
			got += fmt.Sprintf("1:%s ", r.Bytes())
		case 2:
			got += fmt.Sprintf("2:%d ", r.Varint())
		}
	}
	return got, r.Err()
}

func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want string
		err  error
	}{
		{"0a0161" + "1007", "1:a 2:7 ", nil},
		{"1807" + "0a0162", "1:b ", nil},       // unknown varint field 3 skipped
		{"0a0161" + "0a0162", "1:a 1:b ", nil}, // repeated: every value, in order
		{"0801", "", ErrMalformed},             // field 1 as a varint
		{"0a05", "", ErrMalformed},             // truncated bytes
		{"ff", "", ErrMalformed},               // truncated tag
		{"2205" + "6162", "", ErrMalformed},    // unknown field truncated
		{"", "", nil},
	} {
		b, _ := hex.DecodeString(tc.hex)
		got, err := walk(b)
		if !errors.Is(err, tc.err) || (err == nil && got != tc.want) {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.hex, got, err, tc.want, tc.err)
		}
	}
}

// TestErrors: each failure says what failed and where; a known field of the
// wrong wire type is WrongType even when its value would not parse either.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want Error
		text string
	}{
		{"ff", Error{Kind: BadTag, Off: 0}, "malformed protobuf: tag at offset 0: "},
		{"0a0161" + "0000", Error{Kind: BadTag, Off: 3}, "malformed protobuf: tag at offset 3: "},
		{"0801", Error{Kind: WrongType, Num: 1, Type: protowire.VarintType, Off: 1}, "malformed protobuf: field 1 has wire type 0"},
		{"08", Error{Kind: WrongType, Num: 1, Type: protowire.VarintType, Off: 1}, "malformed protobuf: field 1 has wire type 0"},
		{"0a05", Error{Kind: BadValue, Num: 1, Type: protowire.BytesType, Off: 1}, "malformed protobuf: field 1 at offset 1: "},
		{"1080", Error{Kind: BadValue, Num: 2, Type: protowire.VarintType, Off: 1}, "malformed protobuf: field 2 at offset 1: "},
		{"1007" + "2205" + "6162", Error{Kind: BadValue, Num: 4, Type: protowire.BytesType, Off: 3}, "malformed protobuf: field 4 at offset 3: "},
		{"1b", Error{Kind: BadValue, Num: 3, Type: protowire.StartGroupType, Off: 1}, "malformed protobuf: field 3 at offset 1: "},
		{"f8ff01", Error{Kind: BadValue, Num: 4095, Type: protowire.VarintType, Off: 3}, "malformed protobuf: field 4095 at offset 3: "},
	} {
		b, _ := hex.DecodeString(tc.hex)
		_, err := walk(b)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: %v, want an *Error", tc.hex, err)
		}
		if e.Kind != tc.want.Kind || e.Num != tc.want.Num || e.Type != tc.want.Type || e.Off != tc.want.Off {
			t.Errorf("%s: %+v, want %+v", tc.hex, *e, tc.want)
		}
		// protowire's own texts vary on purpose: only the part before them is fixed.
		if !strings.HasPrefix(e.Error(), tc.text) || (e.Err != nil && !strings.HasSuffix(e.Error(), e.Err.Error())) {
			t.Errorf("%s: %q, want %q and then protowire's text", tc.hex, e.Error(), tc.text)
		}
		if (e.Kind == WrongType) != (e.Err == nil) {
			t.Errorf("%s: Err %v for kind %d", tc.hex, e.Err, e.Kind)
		}
	}
}

func TestTruncatedWrapsEOF(t *testing.T) {
	if _, err := walk([]byte{0x0a, 0x05}); !errors.Is(err.(*Error).Err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v does not wrap io.ErrUnexpectedEOF", err)
	}
}

// TestBytesAliasCapped: values alias the input with len == cap, and an empty
// field is an empty non-nil slice (a present field, told from an absent one).
func TestBytesAliasCapped(t *testing.T) {
	in := []byte{0x0a, 0x02, 'h', 'i', 0x12, 0x00, 0x18, 0x01}
	r := NewReader(in)
	var vals [][]byte
	for r.Next() {
		if r.Type() == protowire.BytesType {
			vals = append(vals, r.Bytes())
		}
	}
	if r.Err() != nil || len(vals) != 2 {
		t.Fatalf("%d values, %v", len(vals), r.Err())
	}
	if &vals[0][0] != &in[2] || len(vals[0]) != cap(vals[0]) {
		t.Fatalf("value does not alias the input with len == cap: len %d cap %d", len(vals[0]), cap(vals[0]))
	}
	if vals[1] == nil || len(vals[1]) != 0 {
		t.Fatalf("empty field: %#v", vals[1])
	}
	_ = append(vals[0], 'X')
	if in[4] != 0x12 {
		t.Fatal("an append to a value wrote into the input")
	}
}

func TestAppendPacked(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want []uint32
		err  bool
	}{
		{"0a03" + "01ac02", []uint32{1, 300}, false},
		{"0a00", nil, false},
		{"0a05" + "ffffffff0f", []uint32{0xffffffff}, false},
		{"0a06" + "ffffffff1f" + "02", []uint32{0xffffffff, 2}, false}, // truncated to 32 bits
		{"0a02" + "0180", nil, true},                                   // bad varint in the run
		{"0801", nil, true},                                            // not length-delimited
	} {
		b, _ := hex.DecodeString(tc.hex)
		r := NewReader(b)
		var got []uint32
		for r.Next() {
			got = AppendPacked(&r, got)
		}
		if (r.Err() != nil) != tc.err || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, %v; want %v (error %v)", tc.hex, got, r.Err(), tc.want, tc.err)
		}
	}
	r := NewReader([]byte{0x0a, 0x02, 0x01, 0x80})
	r.Next()
	AppendPacked(&r, []uint64(nil))
	if e, ok := r.Err().(*Error); !ok || e.Kind != BadValue || e.Off != 3 {
		t.Fatalf("bad varint in a run: %v, want BadValue at offset 3", r.Err())
	}
}

// FuzzReader: whatever the input, the Reader stops without a panic, every
// value it hands out aliases the input, and it agrees with protowire on
// where the fields end.
func FuzzReader(f *testing.F) {
	for _, s := range []string{"0a0161" + "1007", "1807" + "0a0162", "0801", "0a05", "ff", "1b", "0a03" + "01ac02"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(data)
		fields := 0
		for r.Next() {
			fields++
			switch r.Type() {
			case protowire.BytesType:
				if v := r.Bytes(); v != nil && len(v) > 0 && !bytes.Contains(data, v) {
					t.Fatalf("value %x not in the input", v)
				}
			case protowire.VarintType:
				r.Varint()
			}
		}
		want := 0
		for b := data; len(b) > 0; want++ {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				break
			}
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				want++ // Next hands out the field; reading it fails
				break
			}
			b = b[n+m:]
		}
		if fields != want {
			t.Fatalf("%d fields, protowire finds %d (err %v)", fields, want, r.Err())
		}
	})
}
