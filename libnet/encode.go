package libnet

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

// frame is one encoded message: prefix (outer length through data length),
// data (the payload or its compressed form, never copied) and suffix
// (owner and signature). Its buffers are shared by every recipient and
// never modified after encoding.
type frame struct {
	bufs [3][]byte
	n    int // total bytes on the wire
	lane Lane
}

// respInfo carries what a legacy reply copies from its request's augData.
type respInfo struct {
	sendTime, receivedTime int64 // Unix ms
	port                   int
}

func (e *Endpoint) pickCompression(c Compression, lane Lane, n int) Compression {
	if c == CompressDefault {
		c = e.cfg.Compression
	}
	if n < e.cfg.CompressMin || (lane == LaneLegacy && c == CompressZstd) {
		return CompressNone
	}
	return c
}

// checkMsg refuses what a caller put in m that cannot be sent: a route
// over 255 bytes (ErrRouteTooLong) or a Compression that is not one of the
// constants (ErrBadMsg, wrapped).
func checkMsg(m *Msg) error {
	switch {
	case len(m.Route) > 255:
		return ErrRouteTooLong
	case m.Compression > CompressZstd:
		return fmt.Errorf("%w: compression %d", ErrBadMsg, m.Compression)
	}
	return nil
}

func (e *Endpoint) encode(lane Lane, dir Dir, id [16]byte, m *Msg, askTimeout time.Duration, ri *respInfo) (frame, error) {
	if err := checkMsg(m); err != nil {
		return frame{}, err
	}
	if lane == LaneRaw {
		return e.encodeRaw(dir, id, m)
	}
	return e.encodeLegacy(dir, id, m, askTimeout, ri)
}

// checkSize refuses a message whose payload or encoded data section (lane
// and codec applied) is over PayloadLimit: a receiver with the same limit
// would drop it and close the connection. Errors wrap ErrTooLarge.
func (e *Endpoint) checkSize(payload, data int) error {
	switch limit := e.cfg.PayloadLimit; {
	case payload > limit:
		return fmt.Errorf("%w: payload of %d bytes, PayloadLimit %d", ErrTooLarge, payload, limit)
	case data > limit:
		return fmt.Errorf("%w: encoded data of %d bytes (payload %d), PayloadLimit %d", ErrTooLarge, data, payload, limit)
	}
	return nil
}

// encodeRaw lays out a raw-lane frame; the payload is referenced, not copied.
// Errors: ErrTooLarge (wrapped), compression errors.
func (e *Endpoint) encodeRaw(dir Dir, id [16]byte, m *Msg) (frame, error) {
	if err := e.checkSize(len(m.Payload), 0); err != nil {
		return frame{}, err
	}
	comp := e.pickCompression(m.Compression, LaneRaw, len(m.Payload))
	data, err := e.codecs.compress(comp, m.Payload)
	if err == nil {
		err = e.checkSize(len(m.Payload), len(data))
	}
	if err != nil {
		return frame{}, err
	}
	h := wire.RawHeader{UUID: id, Dir: uint8(dir), Flags: comp.code(), RawLen: uint32(len(m.Payload))}
	if m.Trace {
		h.Flags |= wire.FlagTrace
		h.SendTime = time.Now().UnixNano()
	}
	hdrLen := wire.RawLen(h.Flags, e.cfg.SenderID, m.Route)
	f := e.seal(wire.VersionRaw, hdrLen, data, e.cfg.SignRaw, func(dst []byte) []byte {
		return wire.AppendRaw(dst, &h, e.cfg.SenderID, m.Route)
	})
	f.lane = LaneRaw
	return f, nil
}

// encodeLegacy lays out a header-version-1 frame whose data is augData
// JSON with the payload base64 (specs/libnet.md sections 1, 4, 5). Errors:
// ErrTooLarge (wrapped; base64 makes the data a third larger than the
// payload unless compressed), compression errors.
func (e *Endpoint) encodeLegacy(dir Dir, id [16]byte, m *Msg, askTimeout time.Duration, ri *respInfo) (frame, error) {
	if err := e.checkSize(len(m.Payload), 0); err != nil {
		return frame{}, err
	}
	a := legacy.Aug{UUID: uuidText(id), Port: e.listenPort, Address: e.listenHost,
		SendTime: time.Now().UnixMilli(), MsgDir: dir.String(), Route: m.Route, Payload: m.Payload}
	if dir == DirResp {
		a.Address = ""
		a.Port, a.SendTime, a.ReceivedTime, a.ReplyTime = ri.port, ri.sendTime, ri.receivedTime, time.Now().UnixMilli()
	} else {
		a.HasTimeout, a.Timeout = true, askTimeout.Milliseconds()
	}
	js, ops := legacy.Append(make([]byte, 0, 256+len(m.Payload)*4/3), &a)
	e.c.jsonOps.Add(uint64(ops.JSON))
	e.c.base64Ops.Add(uint64(ops.Base64))
	comp := e.pickCompression(m.Compression, LaneLegacy, len(js))
	data, err := e.codecs.compress(comp, js)
	if err == nil {
		err = e.checkSize(len(m.Payload), len(data))
	}
	if err != nil {
		return frame{}, err
	}
	h := wire.HeaderV1{UUID: id, MessageLength: uint32(len(data)), SenderID: []byte(e.cfg.SenderID),
		Compression: uint32(comp.code())}
	hdrLen := wire.V1MinLen + len(h.SenderID)
	f := e.seal(wire.VersionV1, hdrLen, data, true, func(dst []byte) []byte {
		return wire.AppendV1(dst, &h)
	})
	f.lane = LaneLegacy
	return f, nil
}

// seal builds prefix and suffix around data, signing version..data when
// sign is set (lib-net message.rs sign over serialize_unsigned).
func (e *Endpoint) seal(version uint8, hdrLen int, data []byte, sign bool, appendHeader func([]byte) []byte) frame {
	sign = sign && e.signer != nil && e.signer.priv != nil
	suffixLen := 8
	if sign {
		suffixLen += len(e.signer.pub) + signatureSize
	}
	buf := make([]byte, 0, wire.OuterLen+10+hdrLen+suffixLen)
	buf = wire.AppendStart(buf, version, hdrLen, len(data), suffixLen)
	buf = appendHeader(buf)
	buf = wire.AppendDataLen(buf, len(data))
	prefix := buf[:len(buf):len(buf)]
	var owner, sig []byte
	if sign {
		owner, sig = e.signer.pub, e.signer.sign(prefix[wire.OuterLen+1:], data)
	}
	suffix := wire.AppendSuffix(buf[len(buf):], owner, sig)
	return frame{bufs: [3][]byte{prefix, data, suffix}, n: len(prefix) + len(data) + len(suffix)}
}

// uuidText formats id as lib-net's augData UUID (8-4-4-4-12 hex).
func uuidText(id [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	hex.Encode(b[9:13], id[4:6])
	hex.Encode(b[14:18], id[6:8])
	hex.Encode(b[19:23], id[8:10])
	hex.Encode(b[24:], id[10:])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	return string(b[:])
}

// parseUUIDText is the inverse of uuidText.
func parseUUIDText(s string) ([16]byte, error) {
	var id [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("%w: uuid %q", ErrBadEnvelope, s)
	}
	var compact [32]byte
	copy(compact[0:], s[0:8])
	copy(compact[8:], s[9:13])
	copy(compact[12:], s[14:18])
	copy(compact[16:], s[19:23])
	copy(compact[20:], s[24:])
	if _, err := hex.Decode(id[:], compact[:]); err != nil {
		return id, fmt.Errorf("%w: uuid %q", ErrBadEnvelope, s)
	}
	return id, nil
}

// newID returns a UUID unique to this endpoint: a random 8-byte prefix
// and a counter, laid out as a version-4 UUID.
func (e *Endpoint) newID() [16]byte {
	var id [16]byte
	copy(id[:8], e.idPrefix[:])
	binary.BigEndian.PutUint64(id[8:], e.idSeq.Add(1))
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}
