// Package lpframe reads and writes the unsigned-varint length-prefixed
// frames that Waku's request/response protocols put on libp2p streams
// (nim-libp2p writeLp/readLp, go-waku pbio, js-waku it-length-prefixed).
//
// # Memory bound
//
// A length prefix is the peer's word, not its bytes: nim-libp2p's readLp
// and go-msgio allocate the whole announced length before reading it, so
// a peer that announces the largest frame and sends nothing more makes
// the reader hold that much for each stream until its deadline (a few
// bytes per stream held 256 kB in a store server, 1.6 MB in a filter
// service). Read allocates as the bytes arrive instead: FirstChunk bytes
// at first, then a buffer twice as large each time the last one is full.
// A frame whose bytes have not all arrived holds at most
// max(FirstChunk, 3 x the bytes received) (the full buffer and the next
// one while it is copied), and a complete frame of n bytes allocates less
// than 3n + FirstChunk in all.
package lpframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Errors of ReadFrame.
var (
	// ErrTooLarge: the length prefix is over the reader's limit.
	ErrTooLarge = errors.New("lpframe: frame over the size limit")
	// ErrMalformed: a length prefix wider than 64 bits.
	ErrMalformed = errors.New("lpframe: malformed length prefix")
)

// Append appends b to dst behind its unsigned-varint length prefix.
func Append(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// Write writes b behind its length prefix in one Write call, so that a
// stream sends it as one frame. It copies b once into a new buffer.
func Write(w io.Writer, b []byte) error {
	buf := Append(make([]byte, 0, binary.MaxVarintLen64+len(b)), b)
	_, err := w.Write(buf)
	return err
}

// FirstChunk is the most Read allocates for a frame before any of its
// bytes have arrived (see the package doc, "Memory bound").
const FirstChunk = 4 << 10

// Read reads one frame of at most max bytes from r. The returned slice is
// newly allocated and owned by the caller; its buffer grows as the bytes
// arrive (see the package doc, "Memory bound"). A clean end of stream
// before the first byte returns io.EOF; errors wrap ErrTooLarge,
// ErrMalformed or the reader's error.
func Read(r io.Reader, max int) ([]byte, error) {
	var n uint64
	var one [1]byte
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return nil, ErrMalformed
		}
		if _, err := io.ReadFull(r, one[:]); err != nil {
			if shift > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n |= uint64(one[0]&0x7f) << shift
		if n > uint64(max) {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
		}
		if one[0] < 0x80 {
			break
		}
	}
	buf := make([]byte, min(n, FirstChunk))
	for got := 0; ; {
		if _, err := io.ReadFull(r, buf[got:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if uint64(len(buf)) == n {
			return buf, nil
		}
		got = len(buf)
		next := make([]byte, min(n, 2*uint64(got)))
		copy(next, buf)
		buf = next
	}
}
