package mplex

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name string
		id   uint64
		flag byte
		data string
		want []byte
	}{
		{"new stream 0 named 0", 0, flagNewStream, "0", []byte{0x00, 0x01, '0'}},
		{"message from initiator on 3", 3, flagMessageInitiator, "hi", []byte{0x1a, 0x02, 'h', 'i'}},
		{"close from receiver on 17", 17, flagCloseReceiver, "", []byte{0x8b, 0x01, 0x00}},
		{"reset from initiator on 2^20", 1 << 20, flagResetInitiator, "", []byte{0x86, 0x80, 0x80, 0x04, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendFrame(nil, tt.id, tt.flag, []byte(tt.data))
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("appendFrame = %x, want %x", got, tt.want)
			}
			h, n, err := readHeader(bufio.NewReader(bytes.NewReader(got)))
			if err != nil || h.id != tt.id || h.flag != tt.flag || n != len(tt.data) {
				t.Fatalf("readHeader = %+v, %d, %v; want id %d flag %d len %d", h, n, err, tt.id, tt.flag, len(tt.data))
			}
		})
	}
}

func TestReadHeaderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"header cut", []byte{0x80}, io.ErrUnexpectedEOF},
		{"length missing", []byte{0x02}, io.ErrUnexpectedEOF},
		{"length cut", []byte{0x02, 0x80}, io.ErrUnexpectedEOF},
		{"header of 10 bytes", append(bytes.Repeat([]byte{0xff}, 9), 0x01), ErrBadVarint},
		{"header not minimal", []byte{0x82, 0x00, 0x00}, ErrBadVarint},
		{"flag 7", []byte{0x07, 0x00}, ErrProtocol},
		{"length 1 MiB + 1", []byte{0x02, 0x81, 0x80, 0x40}, ErrFrameTooLarge},
		{"length of 2^62", []byte{0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readHeader(bufio.NewReader(bytes.NewReader(tt.in)))
			if !errors.Is(err, tt.want) {
				t.Fatalf("readHeader(%x) = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
	// exactly 1 MiB is allowed
	h, n, err := readHeader(bufio.NewReader(bytes.NewReader([]byte{0x02, 0x80, 0x80, 0x40})))
	if err != nil || n != MaxFrameSize || h.flag != flagMessageInitiator {
		t.Fatalf("1 MiB frame: %+v %d %v", h, n, err)
	}
}
