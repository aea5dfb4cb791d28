// Package sha256x2 computes two SHA-256 digests in one pass. On amd64 with
// the SHA extensions the rounds of both run interleaved in one instruction
// stream: each digest's SHA256RNDS2 waits on the one before it, so a
// second digest fills those waits. Sum also gives the first input's
// CRC-32C, which the interleaved pass computes in the rounds' waits. On
// this project's machine (BenchmarkSum, medians of 8 alternating runs)
// two digests of 65 kB took 44.5 µs interleaved and 46.0 µs with the
// CRC-32C, against 76 to 79 µs for two calls of crypto/sha256, to which
// hash/crc32 adds about 3.5 µs. Elsewhere it is two calls of
// crypto/sha256 and one of hash/crc32. The digests are SHA-256 of FIPS
// 180-4, the same as crypto/sha256's; only the schedule of the work
// differs.
package sha256x2

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"sync"
)

// Sum returns sha256(a), sha256 of the concatenation of b's pieces, and
// crcA, a's CRC-32C (the Castagnoli polynomial, as hash/crc32's Checksum
// with crc32.MakeTable(crc32.Castagnoli) gives it). Neither a nor b is
// modified or kept. It allocates nothing.
func Sum(a []byte, b [][]byte) (sa, sb [sha256.Size]byte, crcA uint32) {
	s := pool.Get().(*pair)
	s.a.Reset()
	s.b.Reset()
	var ok bool
	if useRounds {
		crcA, ok = s.interleaved(a, b)
	}
	if !ok {
		s.a.Write(a)
		for _, p := range b {
			s.b.Write(p)
		}
		crcA = crc32.Checksum(a, castagnoli)
	}
	copy(sa[:], s.a.Sum(s.sum[:0]))
	copy(sb[:], s.b.Sum(s.sum[:0]))
	pool.Put(s)
	return sa, sb, crcA
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pair is two pooled digests, room for a digest's marshalled state and
// for a sum (an interface's Sum would move a result on the stack to the
// heap).
type pair struct {
	a, b  hash.Hash
	state [stateSize]byte
	sum   [sha256.Size]byte
}

var pool = sync.Pool{New: func() any { return &pair{a: sha256.New(), b: sha256.New()} }}

// The marshalled state of a crypto/sha256 digest (its MarshalBinary): a
// 4-byte magic, the eight 32-bit words of the chaining value big-endian,
// the 64-byte block buffer and the 64-bit length in bytes, big-endian. The
// interleaved rounds take the chaining value out of a digest and put it
// back this way, so that crypto/sha256 does the padding and the partial
// blocks; selfTest checks the layout once before it is used.
const (
	stateSize  = 4 + 32 + 64 + 8
	stateWords = 4
	stateLen   = stateSize - 8
)

// interleaved hashes a and b with the interleaved rounds, leaving the sums
// to s.a and s.b, returns a's CRC-32C and reports whether it did; false
// (nothing written) when there are fewer than minBlocks blocks to pair.
// The CPU must have the rounds (haveRounds). b's largest piece is paired
// with a: the pieces before it and its head, up to a block boundary, go to
// s.b first.
func (s *pair) interleaved(a []byte, b [][]byte) (crcA uint32, ok bool) {
	if len(a) < minBlocks*64 || len(b) == 0 {
		return 0, false
	}
	big, before := 0, 0
	for i, p := range b {
		if len(p) > len(b[big]) {
			big = i
		}
	}
	for _, p := range b[:big] {
		before += len(p)
	}
	head := (64 - before%64) % 64
	if len(b[big]) < head+minBlocks*64 {
		return 0, false
	}
	for _, p := range b[:big] {
		s.b.Write(p)
	}
	s.b.Write(b[big][:head])
	bulk := b[big][head:]
	n := min(len(a), len(bulk)) / 64
	ha := iv
	hb := s.words(s.b)
	crc := ^uint32(0) // the register at the start: hash/crc32's CRC of nothing, inverted
	blocks2(&ha, &hb, &a[0], &bulk[0], n, &crc)
	s.setWords(s.a, &ha, uint64(n*64))
	s.setWords(s.b, &hb, uint64(before+head+n*64))
	s.a.Write(a[n*64:])
	s.b.Write(bulk[n*64:])
	for _, p := range b[big+1:] {
		s.b.Write(p)
	}
	return crc32.Update(^crc, castagnoli, a[n*64:]), true
}

// minBlocks is the fewest blocks worth pairing: below it the state's
// round trip through the marshalled form costs about what pairing saves.
const minBlocks = 16

// iv is SHA-256's initial chaining value (FIPS 180-4, 5.3.3).
var iv = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}

// words returns d's chaining value; d must hold a whole number of blocks.
func (s *pair) words(d hash.Hash) [8]uint32 {
	st, _ := d.(encoding.BinaryAppender).AppendBinary(s.state[:0])
	var h [8]uint32
	for i := range h {
		h[i] = binary.BigEndian.Uint32(st[stateWords+4*i:])
	}
	return h
}

// setWords makes d the digest of n bytes (a whole number of blocks) whose
// chaining value is h.
func (s *pair) setWords(d hash.Hash, h *[8]uint32, n uint64) {
	st, _ := d.(encoding.BinaryAppender).AppendBinary(s.state[:0])
	for i, w := range h {
		binary.BigEndian.PutUint32(st[stateWords+4*i:], w)
	}
	clear(st[stateWords+32 : stateLen])
	binary.BigEndian.PutUint64(st[stateLen:], n)
	if err := d.(encoding.BinaryUnmarshaler).UnmarshalBinary(st); err != nil {
		panic("sha256x2: " + err.Error()) // selfTest rules this out before useRounds is set
	}
}

// useRounds is whether Sum uses the interleaved rounds: the CPU
// has them and selfTest passed.
var useRounds = haveRounds && selfTest()

// selfTest reports whether the marshalled state is laid out as this
// package reads and writes it and the rounds agree with crypto/sha256,
// on inputs that exercise every path of interleaved.
func selfTest() bool {
	if _, ok := sha256.New().(interface {
		encoding.BinaryAppender
		encoding.BinaryUnmarshaler
	}); !ok {
		return false
	}
	if st, _ := sha256.New().(encoding.BinaryAppender).AppendBinary(nil); len(st) != stateSize {
		return false
	}
	buf := make([]byte, 3*minBlocks*64+200)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	s := &pair{a: sha256.New(), b: sha256.New()}
	for _, n := range []int{minBlocks * 64, minBlocks*64 + 1, 2*minBlocks*64 + 63, 3 * minBlocks * 64} {
		a, b := buf[:n], [][]byte{buf[1:40], buf[40 : 40+n+(n%3)*64], buf[5:17]}
		crc, ok := s.interleaved(a, b)
		if !ok {
			return false
		}
		var sa, sb [sha256.Size]byte
		s.a.Sum(sa[:0])
		s.b.Sum(sb[:0])
		whole := append(append(append([]byte{}, b[0]...), b[1]...), b[2]...)
		if sa != sha256.Sum256(a) || sb != sha256.Sum256(whole) || crc != crc32.Checksum(a, castagnoli) {
			return false
		}
		s.a.Reset()
		s.b.Reset()
	}
	return true
}
