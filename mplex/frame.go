package mplex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame flags: the low three bits of a frame header (libp2p specs
// mplex/README.md, "Flag Values"). The Receiver variants are sent by the
// side that accepted the stream, the Initiator variants by the side that
// opened it.
const (
	flagNewStream        = 0
	flagMessageReceiver  = 1
	flagMessageInitiator = 2
	flagCloseReceiver    = 3
	flagCloseInitiator   = 4
	flagResetReceiver    = 5
	flagResetInitiator   = 6
)

const (
	// MaxFrameSize is the largest frame payload accepted, in bytes; a larger
	// length closes the connection, as js-libp2p's mplex does (maxMsgSize,
	// 1 MiB).
	MaxFrameSize = 1 << 20
	// maxVarintLen bounds each of a header's two varints: js-libp2p reads
	// at most 9 bytes, which carry 63 bits.
	maxVarintLen = 9
	// maxFrameOverhead is a header and a length of at most MaxFrameSize.
	maxFrameOverhead = maxVarintLen + 3
	// maxStreamID keeps id<<3|flag within 63 bits.
	maxStreamID = 1<<60 - 1
)

// Errors that close a connection: the peer broke the framing.
var (
	// ErrFrameTooLarge: a frame's length is over MaxFrameSize.
	ErrFrameTooLarge = errors.New("mplex: frame larger than 1 MiB")
	// ErrBadVarint: a header or length varint is longer than 9 bytes or not
	// minimally encoded.
	ErrBadVarint = errors.New("mplex: bad varint")
	// ErrProtocol: an unknown flag, or a NewStream for an id already open.
	ErrProtocol = errors.New("mplex: protocol violation")
)

// header is the decoded first varint of a frame.
type header struct {
	id   uint64
	flag byte
}

// local reports whether the frame belongs to a stream this side opened:
// the peer sends the Receiver variants on those.
func (h header) local() bool { return h.flag%2 == 1 }

// readHeader reads a frame's header and payload length, leaving the
// payload unread in r.
func readHeader(r *bufio.Reader) (header, int, error) {
	v, err := readUvarint(r)
	if err != nil {
		return header{}, 0, err
	}
	h := header{id: v >> 3, flag: byte(v & 7)}
	if h.flag > flagResetInitiator {
		return header{}, 0, fmt.Errorf("%w: unknown flag %d", ErrProtocol, h.flag)
	}
	n, err := readUvarint(r)
	if err != nil {
		return header{}, 0, noEOF(err)
	}
	if n > MaxFrameSize {
		return header{}, 0, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	return h, int(n), nil
}

// readUvarint reads a minimally encoded unsigned varint of at most 9
// bytes. io.EOF means r ended before the first byte.
func readUvarint(r io.ByteReader) (uint64, error) {
	var x uint64
	for i := range maxVarintLen {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 {
				return 0, noEOF(err)
			}
			return 0, err
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, fmt.Errorf("%w: not minimal", ErrBadVarint)
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: longer than %d bytes", ErrBadVarint, maxVarintLen)
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendFrame appends a frame of stream id with flag and payload p to b.
func appendFrame(b []byte, id uint64, flag byte, p []byte) []byte {
	b = binary.AppendUvarint(b, id<<3|uint64(flag))
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}
