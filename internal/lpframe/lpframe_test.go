package lpframe

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 70000} {
		b := bytes.Repeat([]byte{7}, n)
		var w bytes.Buffer
		if err := Write(&w, b); err != nil {
			t.Fatal(err)
		}
		got, err := Read(&w, n)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("n=%d: %v", n, err)
		}
		if _, err := Read(&w, n); err != io.EOF {
			t.Fatalf("empty reader: %v, want io.EOF", err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		max  int
		want error
	}{
		{"over limit", []byte{0x81, 0x01}, 128, ErrTooLarge},
		{"over limit in the prefix", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1 << 20, ErrTooLarge},
		{"varint overflow", bytes.Repeat([]byte{0x80}, 11), 1 << 62, ErrMalformed},
		{"truncated prefix", []byte{0x80}, 10, io.ErrUnexpectedEOF},
		{"truncated body", []byte{0x03, 1}, 10, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Read(bytes.NewReader(tc.in), tc.max); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte{0x03, 1, 2, 3})
	f.Add([]byte{0x80, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := Read(bytes.NewReader(in), 4096)
		if err != nil {
			return
		}
		back, err := Read(bytes.NewReader(Append(nil, b)), len(b))
		if err != nil || !bytes.Equal(back, b) {
			t.Fatalf("re-framing changed %x to %x (%v)", b, back, err)
		}
	})
}
