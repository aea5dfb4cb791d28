package libnet

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

// The frame-level API is for a host that owns lib-net's envelope itself:
// lib-net's JavaScript wrapper builds augData, correlates asks with their
// replies and calls respond(), so all it needs from the transport is
// frames (lib-net shardus_net/src/lib.rs, shardus_net_listener.rs). Such a
// host sets Config.FrameHandler to receive legacy frames unparsed and sends
// with SendFrame and MultiSendFrame; the raw lane keeps Tell, Ask and
// Handle (and their asynchronous forms TellAsync, MultiTellAsync and
// AskAsync).

// LegacyHeader is lib-net's HeaderV1 as a host gives it to SendFrame or
// gets it in a Frame (header/header_v1.rs). The data is never compressed,
// as lib-net 1.3.11 and later never compress (ENABLE_COMPRESSION false):
// Compression is only carried in the header.
type LegacyHeader struct {
	UUID             [16]byte
	MessageLength    uint32 // received frames: the header's data length; ignored when sending
	SenderID         string // at most Config.LegacySend.SenderID bytes when sending (64)
	TrackerID        string
	VerificationData string
	Compression      Compression // CompressNone (or CompressDefault), CompressGzip or CompressBrotli
}

// Frame is one legacy frame received, as lib-net's listener hands it to
// JavaScript: Data is the frame's data (augData JSON as the sender wrote
// it), Version 0 for the plain lane (no header, never signed) or 1 for
// header version 1, whose signature has been verified (Owner, Sig).
// Data, Owner and Sig alias the connection's read buffer and are valid
// only until the FrameHandler returns.
type Frame struct {
	Version uint8
	Header  LegacyHeader // Version 1 only
	Data    []byte
	Owner   []byte // 32-byte Ed25519 public key (Version 1)
	Sig     []byte // 96-byte combined signature (Version 1)
	Remote  netip.AddrPort
}

// FrameHandler receives every legacy frame when Config.FrameHandler is
// set. It runs on the connection's read loop (the receive backpressure)
// and must copy what it keeps.
type FrameHandler func(f *Frame)

// AppendHeaderJSON appends f's header as lib-net's listener gives it to
// JavaScript (header_v1.rs to_json_string), with the same keys, order and
// spacing:
//
//	{"uuid": "550e8400-e29b-41d4-a716-446655440000", "message_length": 42,
//	 "sender_id": "…", "tracker_id": "…", "verification_data": "…"}
//
// (one line). lib-net writes the strings unescaped, so a quote in a sender
// id makes its JSON unreadable; here they are escaped as JSON.stringify
// does, which changes nothing for the ids lib-net's users send.
func (f *Frame) AppendHeaderJSON(dst []byte) []byte {
	h := &f.Header
	dst = append(dst, `{"uuid": "`...)
	dst = append(dst, uuidText(h.UUID)...)
	dst = append(dst, `", "message_length": `...)
	dst = fmt.Appendf(dst, "%d", h.MessageLength)
	dst = append(dst, `, "sender_id": `...)
	dst = legacy.AppendString(dst, h.SenderID)
	dst = append(dst, `, "tracker_id": `...)
	dst = legacy.AppendString(dst, h.TrackerID)
	dst = append(dst, `, "verification_data": `...)
	dst = legacy.AppendString(dst, h.VerificationData)
	return append(dst, '}')
}

// AppendSignJSON appends f's signature as lib-net gives it to JavaScript
// (message.rs Sign::to_json_string): {"owner": "<hex>", "sig": "<hex>"}.
func (f *Frame) AppendSignJSON(dst []byte) []byte {
	dst = append(dst, `{"owner": "`...)
	dst = hex.AppendEncode(dst, f.Owner)
	dst = append(dst, `", "sig": "`...)
	dst = hex.AppendEncode(dst, f.Sig)
	return append(dst, `"}`...)
}

// ParseHeaderJSON reads the header JSON a lib-net host passes with
// send_with_header for header version version, with lib-net's rules
// (header_factory.rs header_from_json_string, serde on HeaderV1): only
// version 1 exists; the object must have "uuid" (hyphenated, simple,
// braced or urn form); "sender_id", "tracker_id" and "verification_data"
// are strings and "message_length" a u32, each optional; "compression" is
// "None", "Gzip" or "Brotli"; other keys are ignored. Every failure wraps
// ErrNoLegacyHeader, which lib-net's JavaScript sees as "Failed to parse
// header".
func ParseHeaderJSON(version uint8, js []byte) (LegacyHeader, error) {
	var h LegacyHeader
	if version != wire.VersionV1 {
		return h, fmt.Errorf("%w: header version %d", ErrNoLegacyHeader, version)
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return h, fmt.Errorf("%w: not a JSON object", ErrNoLegacyHeader)
	}
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return h, fmt.Errorf("%w: %w", ErrNoLegacyHeader, err)
		}
		key := tok.(string)
		if err := h.setField(d, key, seen); err != nil {
			return h, fmt.Errorf("%w: %s: %w", ErrNoLegacyHeader, key, err)
		}
	}
	if _, err := d.Token(); err != nil {
		return h, fmt.Errorf("%w: %w", ErrNoLegacyHeader, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return h, fmt.Errorf("%w: trailing characters", ErrNoLegacyHeader)
	}
	if !seen["uuid"] {
		return h, fmt.Errorf("%w: missing field uuid", ErrNoLegacyHeader)
	}
	return h, nil
}

var errFieldType = errors.New("wrong type")

func (h *LegacyHeader) setField(d *json.Decoder, key string, seen map[string]bool) error {
	known := key == "uuid" || key == "message_length" || key == "sender_id" || key == "tracker_id" ||
		key == "verification_data" || key == "compression"
	if !known {
		var skip json.RawMessage
		return d.Decode(&skip)
	}
	if seen[key] {
		return errors.New("duplicate field")
	}
	seen[key] = true
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if key == "message_length" {
		n, ok := tok.(json.Number)
		if !ok {
			return errFieldType
		}
		var v uint32
		if _, err := fmt.Sscan(n.String(), &v); err != nil || strings.ContainsAny(n.String(), ".eE") {
			return fmt.Errorf("%w: %s is not a u32", errFieldType, n)
		}
		h.MessageLength = v
		return nil
	}
	s, ok := tok.(string)
	if !ok {
		return errFieldType
	}
	switch key {
	case "uuid":
		h.UUID, err = parseAnyUUID(s)
	case "sender_id":
		h.SenderID = s
	case "tracker_id":
		h.TrackerID = s
	case "verification_data":
		h.VerificationData = s
	case "compression":
		switch s {
		case "None":
			h.Compression = CompressNone
		case "Gzip":
			h.Compression = CompressGzip
		case "Brotli":
			h.Compression = CompressBrotli
		default:
			err = fmt.Errorf("unknown variant %q", s)
		}
	}
	return err
}

// parseAnyUUID reads the forms Rust's uuid crate parses: hyphenated,
// simple (32 hex digits), braced and urn:uuid:.
func parseAnyUUID(s string) ([16]byte, error) {
	switch {
	case len(s) == 38 && s[0] == '{' && s[37] == '}':
		s = s[1:37]
	case len(s) == 45 && strings.HasPrefix(s, "urn:uuid:"):
		s = s[9:]
	case len(s) == 32:
		var id [16]byte
		if _, err := hex.Decode(id[:], []byte(s)); err != nil {
			return id, fmt.Errorf("uuid %q", s)
		}
		return id, nil
	}
	return parseUUIDText(s)
}

// OutFrame is a legacy frame for SendFrame: Version 0 is lib-net's plain
// lane (send: Data alone, unsigned), Version 1 a signed header-version-1
// frame (send_with_header). Data is read, not copied, until the send's
// done has been called; it must not change before then.
type OutFrame struct {
	Version uint8
	Header  LegacyHeader
	Data    []byte
}

// encodeOut frames f (lib-net shardus_net_sender.rs send and
// send_with_header, message.rs serialize_optimized). Errors:
// ErrNoLegacyHeader, ErrNoSigningKey, ErrTooLarge (wrapped).
func (e *Endpoint) encodeOut(f *OutFrame) (frame, error) {
	switch f.Version {
	case 0:
		if err := e.checkSize(len(f.Data), 0); err != nil {
			return frame{}, err
		}
		if len(f.Data) > e.cfg.LegacySend.Frame {
			return frame{}, fmt.Errorf("%w: frame of %d bytes, LegacySend.Frame %d", ErrTooLarge, len(f.Data), e.cfg.LegacySend.Frame)
		}
		prefix := binary.BigEndian.AppendUint32(make([]byte, 0, wire.OuterLen), uint32(len(f.Data)))
		return frame{bufs: [3][]byte{prefix, f.Data, nil}, n: len(prefix) + len(f.Data), lane: LaneJSON}, nil
	case wire.VersionV1:
	default:
		return frame{}, fmt.Errorf("%w: header version %d", ErrNoLegacyHeader, f.Version)
	}
	if e.signer == nil || e.signer.priv == nil {
		return frame{}, ErrNoSigningKey
	}
	if err := e.checkSize(len(f.Data), len(f.Data)); err != nil {
		return frame{}, err
	}
	comp := f.Header.Compression
	if comp == CompressDefault || comp > CompressBrotli {
		comp = CompressNone
	}
	h := wire.HeaderV1{UUID: f.Header.UUID, MessageLength: uint32(len(f.Data)), SenderID: []byte(f.Header.SenderID),
		TrackerID: []byte(f.Header.TrackerID), VerificationData: []byte(f.Header.VerificationData), Compression: uint32(comp.code())}
	hdrLen := wire.V1MinLen + len(h.SenderID) + len(h.TrackerID) + len(h.VerificationData)
	if err := e.checkLegacyHeader(len(h.SenderID), hdrLen); err != nil {
		return frame{}, err
	}
	out := e.seal(wire.VersionV1, hdrLen, f.Data, true, func(dst []byte) []byte { return wire.AppendV1(dst, &h) })
	if body := out.n - wire.OuterLen; body > e.cfg.LegacySend.Frame {
		return frame{}, fmt.Errorf("%w: legacy frame of %d bytes, LegacySend.Frame %d", ErrTooLarge, body, e.cfg.LegacySend.Frame)
	}
	out.lane = LaneLegacy
	return out, nil
}

// SendFrame queues f to peer ("ip:port") and returns at once; done is
// called exactly once with the result of the write (nil once the frame is
// written to the socket), from another goroutine or, for a send refused
// at once, before SendFrame returns. Frames to one peer are written in the
// order SendFrame was called. f is framed (and signed) by the peer's
// writer, off the caller's thread. Errors given to done: ErrClosed,
// ErrQueueFull, ErrNoLegacyHeader, ErrNoSigningKey and ErrTooLarge
// (wrapped; nothing written), dial errors (matching ErrDial) and write
// errors.
func (e *Endpoint) SendFrame(peer string, f *OutFrame, done func(error)) {
	if f.Version > wire.VersionV1 {
		done(fmt.Errorf("%w: header version %d", ErrNoLegacyHeader, f.Version))
		return
	}
	lf := &lazyFrame{build: func() (frame, error) { return e.encodeOut(f) }}
	e.postLazy(peer, lf, done)
}

// MultiSendFrame sends f to every peer, framed and signed once for all of
// them (lib-net multi_send_with_header). done(i, err) is called once per
// peer with peers[i]'s result, as SendFrame's done is; a slow or dead peer
// delays only its own.
func (e *Endpoint) MultiSendFrame(peers []string, f *OutFrame, done func(i int, err error)) {
	if f.Version > wire.VersionV1 {
		err := fmt.Errorf("%w: header version %d", ErrNoLegacyHeader, f.Version)
		for i := range peers {
			done(i, err)
		}
		return
	}
	lf := &lazyFrame{build: func() (frame, error) { return e.encodeOut(f) }}
	for i, p := range peers {
		e.postLazy(p, lf, func(err error) { done(i, err) })
	}
}

// postLazy queues lf to addr, answering done once.
func (e *Endpoint) postLazy(addr string, lf *lazyFrame, done func(error)) {
	r := &sendReq{lazy: lf, cb: done, start: time.Now()}
	for {
		p, err := e.peer(addr)
		if err != nil {
			done(err)
			return
		}
		if err = p.post(r); !errors.Is(err, errPeerStopped) {
			if err != nil {
				done(err)
			}
			return
		}
		e.forget(addr, p)
	}
}

// TellAsync is Tell without the wait: m is queued to peer on the peer's
// lane and done is called once with the result, as SendFrame's done is;
// tells to one peer are written in call order. m.Payload is read, not
// copied, until done has been called.
func (e *Endpoint) TellAsync(peer string, m Msg, done func(error)) {
	md, id := e.modeFor(peer), e.newID()
	lf := &lazyFrame{build: func() (frame, error) { return e.encode(md, DirTell, id, &m, 0) }}
	e.postLazy(peer, lf, done)
}

// MultiTellAsync is MultiTell without the wait: m is framed once per lane
// and queued to every peer; done is called once with errs[i] holding
// peers[i]'s result, after the last of them.
func (e *Endpoint) MultiTellAsync(peers []string, m Msg, done func(errs []error)) {
	errs := make([]error, len(peers))
	if len(peers) == 0 {
		done(errs)
		return
	}
	var mu sync.Mutex
	left := len(peers)
	frames := map[mode]*lazyFrame{}
	id := e.newID()
	for i, p := range peers {
		md := e.modeFor(p)
		lf := frames[md]
		if lf == nil {
			lf = &lazyFrame{build: func() (frame, error) { return e.encode(md, DirTell, id, &m, 0) }}
			frames[md] = lf
		}
		e.postLazy(p, lf, func(err error) {
			mu.Lock()
			errs[i] = err
			left--
			last := left == 0
			mu.Unlock()
			if last {
				done(errs)
			}
		})
	}
}

// Listen starts the listener on addr if the endpoint has none (lib-net
// binds on listen(), not when it is created). Errors: ErrClosed, ErrBadConfig
// (wrapped) if a listener is open, the listen error.
func (e *Endpoint) Listen(addr string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if e.ln != nil {
		return fmt.Errorf("%w: already listening on %s", ErrBadConfig, e.ln.Addr())
	}
	return e.listen(addr)
}

// StopListening closes the listener and every accepted connection; the
// endpoint goes on sending, and Listen may be called again. It returns
// nil when there is no listener.
func (e *Endpoint) StopListening() error {
	e.mu.Lock()
	ln := e.ln
	e.ln = nil
	for c := range e.inbound {
		_ = c.nc.Close()
	}
	e.mu.Unlock()
	if ln == nil {
		return nil
	}
	return ln.Close()
}

// Evict closes the pooled connection to peer ("ip:port") after what is
// queued to it has been written (lib-net evict_socket); the next send
// dials anew. An unknown peer is ignored.
func (e *Endpoint) Evict(peer string) {
	e.mu.Lock()
	e.pool.Remove(peer)
	e.mu.Unlock()
}

// NetStats returns lib-net's stats() shape for this endpoint.
func (e *Endpoint) NetStats() NetStats {
	c := e.c
	return NetStats{OutstandingSends: c.sendRing.Summary(), OutstandingReceives: c.recvRing.Summary(),
		ReceiveElapsed: c.elapsedRing.Summary()}
}

// handleFrame hands a legacy frame to Config.FrameHandler. Data that is
// not UTF-8 is dropped as lib-net's listener drops it (String::from_utf8).
// start is when the frame's parse began.
func (c *conn) handleFrame(f *Frame, start time.Time) {
	if !utf8.Valid(f.Data) {
		c.reject(fmt.Errorf("%w: data is not UTF-8", ErrMalformed))
		return
	}
	f.Remote = c.remoteAP
	e := c.ep
	e.c.outRecvs.Add(1)
	e.c.elapsedRing.Put(time.Since(start).Milliseconds())
	e.cfg.FrameHandler(f)
	e.c.recvRing.Put(e.c.outRecvs.Add(-1))
}
