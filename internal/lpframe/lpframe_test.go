package lpframe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"
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

// A peer that announces a large frame and sends a few bytes of it makes
// Read allocate FirstChunk, not the length it announced; a frame that
// arrives whole allocates less than 3n + FirstChunk.
func TestReadAllocatesAsBytesArrive(t *testing.T) {
	const announced = 1 << 20
	partial := append(binary.AppendUvarint(nil, announced), make([]byte, 10)...)
	got := bytesAllocated(func() {
		if _, err := Read(bytes.NewReader(partial), 2*announced); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
		}
	})
	if got > FirstChunk+1024 {
		t.Errorf("a 1 MiB frame with 10 bytes sent allocated %d bytes, want at most %d", got, FirstChunk+1024)
	}
	whole := Append(nil, bytes.Repeat([]byte{7}, announced))
	got = bytesAllocated(func() {
		if b, err := Read(bytes.NewReader(whole), announced); err != nil || len(b) != announced {
			t.Fatalf("read %d bytes, %v", len(b), err)
		}
	})
	if got >= 3*announced+FirstChunk {
		t.Errorf("a whole 1 MiB frame allocated %d bytes, want under %d", got, 3*announced+FirstChunk)
	}
}

// Frames whose length is around the chunk boundaries come back whole.
func TestReadAcrossChunks(t *testing.T) {
	for _, n := range []int{FirstChunk - 1, FirstChunk, FirstChunk + 1, 2 * FirstChunk, 2*FirstChunk + 1, 5*FirstChunk + 3} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i * 31)
		}
		got, err := Read(iotest.OneByteReader(bytes.NewReader(Append(nil, b))), n)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
}

// bytesAllocated returns the bytes f allocates, the least of three runs
// (the least run leaves out other goroutines' allocations).
func bytesAllocated(f func()) uint64 {
	best := uint64(math.MaxUint64)
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		f()
		runtime.ReadMemStats(&m1)
		best = min(best, m1.TotalAlloc-m0.TotalAlloc)
	}
	return best
}
