package libnet

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// codecs compresses and decompresses payloads with lib-net's settings
// (lib-net compression.rs: gzip at the default level, brotli quality 5
// window 22) plus zstd. Compression always works on the bytes it is given:
// the raw payload on the raw lane, the augData JSON on the legacy lane
// (that is what lib-net compresses, so it is what its peers expect).
type codecs struct {
	limit int // largest decompressed output in bytes

	once sync.Once
	zenc *zstd.Encoder
	zdec *zstd.Decoder
	zerr error

	gzw sync.Pool // *gzip.Writer
}

func (c *codecs) zstd() error {
	c.once.Do(func() {
		c.zenc, c.zerr = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if c.zerr != nil {
			return
		}
		c.zdec, c.zerr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(c.limit)), zstd.WithDecoderMaxWindow(uint64(max(c.limit, zstd.MinWindowSize))))
	})
	return c.zerr
}

// close releases the zstd coders.
func (c *codecs) close() {
	c.once.Do(func() {})
	if c.zenc != nil {
		c.zenc.Close()
	}
	if c.zdec != nil {
		c.zdec.Close()
	}
}

// compress returns src compressed with comp in a new slice; CompressNone
// returns src itself.
func (c *codecs) compress(comp Compression, src []byte) ([]byte, error) {
	switch comp {
	case CompressNone:
		return src, nil
	case CompressGzip:
		var buf bytes.Buffer
		buf.Grow(len(src)/2 + 64)
		w, _ := c.gzw.Get().(*gzip.Writer)
		if w == nil {
			w = gzip.NewWriter(&buf)
		} else {
			w.Reset(&buf)
		}
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		c.gzw.Put(w)
		return buf.Bytes(), err
	case CompressBrotli:
		var buf bytes.Buffer
		w := brotli.NewWriterOptions(&buf, brotli.WriterOptions{Quality: 5, LGWin: 22})
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		return buf.Bytes(), err
	case CompressZstd:
		if err := c.zstd(); err != nil {
			return nil, err
		}
		return c.zenc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
	}
	return nil, fmt.Errorf("%w: compression %d", ErrMalformed, comp)
}

// decompress returns src decompressed into a new slice of at most c.limit
// bytes whose capacity is its length; sizeHint preallocates. CompressNone
// returns src itself.
func (c *codecs) decompress(comp Compression, src []byte, sizeHint int) ([]byte, error) {
	var r io.Reader
	switch comp {
	case CompressNone:
		return src, nil
	case CompressGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrMalformed, err)
		}
		r = zr
	case CompressBrotli:
		r = brotli.NewReader(bytes.NewReader(src))
	case CompressZstd:
		if err := c.zstd(); err != nil {
			return nil, err
		}
		out, err := c.zdec.DecodeAll(src, make([]byte, 0, min(sizeHint, c.limit)))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %w", ErrMalformed, err)
		}
		if len(out) > c.limit {
			return nil, ErrPayloadTooLarge
		}
		return slices.Clip(out), nil
	default:
		return nil, fmt.Errorf("%w: compression %d", ErrMalformed, comp)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(max(sizeHint, 512), c.limit)+1))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(c.limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, comp, err)
	}
	if n > int64(c.limit) {
		return nil, ErrPayloadTooLarge
	}
	return slices.Clip(buf.Bytes()), nil
}
