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

// respInfo carries what a legacy reply copies from its request: augData's
// times and PORT, and the header's tracker id (lib-net src/index.ts
// respond; shardus-core src/p2p/Comms.ts sets the reply's tracker_id to the
// request's).
type respInfo struct {
	sendTime, receivedTime int64 // Unix ms
	timeout                float64
	hasTimeout             bool
	port                   int
	trackerID              string
}

// expired reports whether now (Unix ms) is past the ask's sendTime +
// timeout, when lib-net's respond() sends nothing: the asker has given up,
// and a late reply would reach its handler as a new request. An ask with
// no timeout key never expires (sendTime + undefined is NaN in JavaScript).
func (ri *respInfo) expired(now int64) bool {
	return ri.hasTimeout && float64(now) > float64(ri.sendTime)+ri.timeout
}

// mode is how a message to one peer is framed: its lane and, on the legacy
// lane, whether the peer decompresses what the header says (lib-net 1.3.10
// or older).
type mode struct {
	lane     Lane
	compress bool
}

// pickCompression returns the codec for a payload of n bytes: c, or the
// endpoint's default for CompressDefault; none below CompressMin, on the
// legacy lane unless the peer decompresses, and for zstd on the legacy lane.
func (e *Endpoint) pickCompression(c Compression, md mode, n int) Compression {
	if c == CompressDefault {
		c = e.cfg.Compression
	}
	if n < e.cfg.CompressMin || (md.lane == LaneLegacy && (!md.compress || c == CompressZstd)) {
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

func (e *Endpoint) encode(md mode, dir Dir, id [16]byte, m *Msg, askTimeout time.Duration) (frame, error) {
	if err := checkMsg(m); err != nil {
		return frame{}, err
	}
	if md.lane == LaneRaw {
		return e.encodeRaw(dir, id, m)
	}
	return e.encodeLegacy(md, dir, id, m, askTimeout, nil)
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
	comp := e.pickCompression(m.Compression, mode{lane: LaneRaw}, len(m.Payload))
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

// encodeLegacy lays out a signed header-version-1 frame whose data is
// augData JSON with the payload base64 (lib-net src/index.ts, lib-types
// stringify.ts);
// ri is set for a reply. It is compressed only for a peer that
// decompresses (md.compress). Errors: ErrNoSigningKey; ErrTooLarge
// (wrapped) for a payload or data section over PayloadLimit (base64 makes
// the data a third larger than the payload) and for a sender id, header
// or frame over Config.LegacySend; compression errors.
func (e *Endpoint) encodeLegacy(md mode, dir Dir, id [16]byte, m *Msg, askTimeout time.Duration, ri *respInfo) (frame, error) {
	if e.signer == nil || e.signer.priv == nil {
		return frame{}, ErrNoSigningKey
	}
	if err := e.checkSize(len(m.Payload), 0); err != nil {
		return frame{}, err
	}
	h := wire.HeaderV1{UUID: id, SenderID: []byte(e.cfg.SenderID), TrackerID: []byte(m.TrackerID)}
	a := legacy.Aug{UUID: uuidText(id), Port: e.listenPort, Address: e.listenHost,
		SendTime: time.Now().UnixMilli(), MsgDir: dir.String(), Route: m.Route, Payload: m.Payload}
	if ri != nil {
		a.Address, a.Reply = "", true
		a.Port, a.SendTime, a.ReceivedTime, a.ReplyTime = ri.port, ri.sendTime, ri.receivedTime, time.Now().UnixMilli()
		h.TrackerID = []byte(ri.trackerID)
	} else {
		a.HasTimeout, a.Timeout = true, float64(askTimeout.Milliseconds())
	}
	hdrLen := wire.V1MinLen + len(h.SenderID) + len(h.TrackerID)
	if err := e.checkLegacyHeader(len(h.SenderID), hdrLen); err != nil {
		return frame{}, err
	}
	js, ops := legacy.Append(make([]byte, 0, 256+len(m.Payload)*4/3), &a)
	e.c.jsonOps.Add(uint64(ops.JSON))
	e.c.base64Ops.Add(uint64(ops.Base64))
	comp := e.pickCompression(m.Compression, md, len(js))
	data, err := e.codecs.compress(comp, js)
	if err == nil {
		err = e.checkSize(len(m.Payload), len(data))
	}
	if err != nil {
		return frame{}, err
	}
	h.MessageLength, h.Compression = uint32(len(data)), uint32(comp.code())
	f := e.seal(wire.VersionV1, hdrLen, data, true, func(dst []byte) []byte {
		return wire.AppendV1(dst, &h)
	})
	if body := f.n - wire.OuterLen; body > e.cfg.LegacySend.Frame {
		return frame{}, fmt.Errorf("%w: legacy frame of %d bytes (payload %d), LegacySend.Frame %d",
			ErrTooLarge, body, len(m.Payload), e.cfg.LegacySend.Frame)
	}
	f.lane = LaneLegacy
	return f, nil
}

// checkLegacyHeader refuses a sender id or header that lib-net 1.4.x
// would reject by panicking the connection's task (header_v1.rs
// check_variable_size); errors wrap ErrTooLarge.
func (e *Endpoint) checkLegacyHeader(senderLen, hdrLen int) error {
	switch lim := e.cfg.LegacySend; {
	case senderLen > lim.SenderID:
		return fmt.Errorf("%w: sender id of %d bytes, LegacySend.SenderID %d", ErrTooLarge, senderLen, lim.SenderID)
	case hdrLen > lim.Header:
		return fmt.Errorf("%w: legacy header of %d bytes, LegacySend.Header %d", ErrTooLarge, hdrLen, lim.Header)
	}
	return nil
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
