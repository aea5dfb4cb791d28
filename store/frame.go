package store

import (
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned for a length prefix over the reader's limit.
var ErrFrameTooLarge = errors.New("store: frame over the size limit")

// readFrame reads one unsigned-varint length-prefixed frame of at most max
// bytes (nim-libp2p readLp, go-waku pbio). The returned slice is newly
// allocated and owned by the caller.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var n uint64
	var one [1]byte
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return nil, fmt.Errorf("%w: length prefix overflows", ErrMalformed)
		}
		if _, err := io.ReadFull(r, one[:]); err != nil {
			if shift > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n |= uint64(one[0]&0x7f) << shift
		if n > uint64(max) {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
		}
		if one[0] < 0x80 {
			break
		}
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
