package sha256x2

import (
	"bytes"
	"crypto/sha256"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// concat is b's pieces in one slice.
func concat(b [][]byte) []byte { return bytes.Join(b, nil) }

// TestSum: Sum agrees with crypto/sha256 and hash/crc32 for lengths
// around every boundary interleaved has (the pairing threshold, block
// edges, the largest piece first, last or in the middle, empty pieces),
// and for random ones; with FIPS 180-4's test vector for "abc"; and with
// the CRC-32C check value of "123456789", 0xe3069283 (RFC 3720, B.4).
func TestSum(t *testing.T) {
	if !useRounds {
		t.Logf("no interleaved rounds on this CPU (haveRounds %v): Sum is crypto/sha256 twice and hash/crc32", haveRounds)
	}
	abc := [][]byte{[]byte("a"), []byte("bc")}
	if _, sb, _ := Sum(nil, abc); sb != [32]byte{0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad} {
		t.Errorf("sha256(abc) = %x", sb)
	}
	if sa, sb, crc := Sum(make([]byte, 4096), nil); sa != sha256.Sum256(make([]byte, 4096)) || sb != sha256.Sum256(nil) || crc != crc32.Checksum(make([]byte, 4096), castagnoli) {
		t.Error("b of no pieces: wrong sums")
	}
	if _, _, crc := Sum([]byte("123456789"), abc); crc != 0xe3069283 {
		t.Errorf("crc32c(123456789) = %#x, want 0xe3069283", crc)
	}
	long := bytes.Repeat([]byte("123456789"), 300) // paired
	if _, _, crc := Sum(long, [][]byte{long}); crc != crc32.Checksum(long, castagnoli) {
		t.Errorf("crc32c of 2,700 bytes = %#x, want %#x", crc, crc32.Checksum(long, castagnoli))
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 200_000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	check := func(a []byte, b [][]byte) {
		t.Helper()
		sa, sb, crc := Sum(a, b)
		if sa != sha256.Sum256(a) || sb != sha256.Sum256(concat(b)) || crc != crc32.Checksum(a, castagnoli) {
			t.Fatalf("len(a) %d, pieces of b %v: wrong sum", len(a), lens(b))
		}
	}
	edge := []int{0, 1, 63, 64, 65, minBlocks*64 - 1, minBlocks * 64, minBlocks*64 + 1, 2*minBlocks*64 + 63, 65_000, 150_000}
	for _, na := range edge {
		for _, nb := range edge {
			for _, pre := range []int{0, 1, 20, 63, 64, 100} {
				a := buf[:na]
				check(a, [][]byte{buf[7 : 7+pre], buf[300 : 300+nb], buf[:9], nil, buf[5:13]})
				check(a, [][]byte{buf[300 : 300+nb], buf[7 : 7+pre]})
				check(a, [][]byte{buf[7 : 7+pre], buf[300 : 300+nb]})
			}
		}
	}
	for range 3000 {
		na := r.IntN(70_000)
		pieces := make([][]byte, 1+r.IntN(5))
		for i := range pieces {
			n := r.IntN(100)
			if r.IntN(3) == 0 {
				n = r.IntN(70_000)
			}
			off := r.IntN(len(buf) - n)
			pieces[i] = buf[off : off+n]
		}
		check(buf[len(buf)-na:], pieces)
	}
}

func lens(b [][]byte) []int {
	out := make([]int, len(b))
	for i, p := range b {
		out[i] = len(p)
	}
	return out
}

// TestSumAllocs: Sum allocates nothing, paired or not.
func TestSumAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("with the race detector crypto/sha256's AppendBinary allocates")
	}
	a, b := make([]byte, 65_000), make([]byte, 65_000)
	pieces := [][]byte{b[:20], b[20:], b[:8]}
	if n := testing.AllocsPerRun(100, func() { Sum(a, pieces) }); n != 0 {
		t.Errorf("Sum allocates %v times a call, want 0", n)
	}
}

// FuzzSum: any a and any split of b into three pieces hash as
// crypto/sha256 hashes them, and a's CRC-32C is hash/crc32's.
func FuzzSum(f *testing.F) {
	f.Add(bytes.Repeat([]byte{1}, 2000), bytes.Repeat([]byte{2}, 3000), uint16(10), uint16(2900))
	f.Add([]byte{}, []byte("abc"), uint16(1), uint16(2))
	f.Fuzz(func(t *testing.T, a, b []byte, i, j uint16) {
		x, y := min(int(i), len(b)), min(int(j), len(b))
		if x > y {
			x, y = y, x
		}
		pieces := [][]byte{b[:x], b[x:y], b[y:]}
		sa, sb, crc := Sum(a, pieces)
		if sa != sha256.Sum256(a) || sb != sha256.Sum256(b) || crc != crc32.Checksum(a, castagnoli) {
			t.Fatalf("len(a) %d, pieces %v: wrong sum", len(a), lens(pieces))
		}
	})
}

var (
	sink    [sha256.Size]byte
	crcSink uint32
)

// BenchmarkSum: two digests of 65,000 bytes each (a WakuMessage of the
// seed's median payload and its hash input) and the first's CRC-32C,
// interleaved and as two calls of crypto/sha256 and one of hash/crc32;
// bytes/s count both inputs.
func BenchmarkSum(b *testing.B) {
	a, c := make([]byte, 65_000), make([]byte, 65_000)
	pieces := [][]byte{c[:20], c[20:], c[:8]}
	b.Run("interleaved", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(2 * 65_000)
		for b.Loop() {
			sink, _, _ = Sum(a, pieces)
		}
	})
	b.Run("crypto-sha256+crc32", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(2 * 65_000)
		for b.Loop() {
			sink = sha256.Sum256(a)
			d := sha256.New()
			for _, p := range pieces {
				d.Write(p)
			}
			d.Sum(sink[:0])
			crcSink = crc32.Checksum(a, castagnoli)
		}
	})
}
