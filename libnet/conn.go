package libnet

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/couriernet/courier/libnet/internal/legacy"
	"github.com/couriernet/courier/libnet/internal/wire"
)

// conn is one TCP connection, inbound or dialled by a peer. Its read loop
// parses frames and dispatches them; replies to raw-lane asks go back on it.
type conn struct {
	ep     *Endpoint
	nc     net.Conn
	remote string
	peer   *peer // nil for an inbound connection

	remoteAP   netip.AddrPort // remote, parsed (IPv4 unmapped)
	wmu        sync.Mutex     // serialises reply writes on inbound connections
	lastSender string         // interned sender id
	dead       atomic.Bool    // the read loop has ended
}

// Backoff between failed accepts: doubled from acceptBackoffMin on each
// consecutive failure up to acceptBackoffMax.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptLoop accepts connections until the listener is closed. An accept
// that fails for any other reason (too many open files, a connection
// aborted before it was accepted) is counted in Stats.AcceptErrors,
// reported to OnError as an *AcceptError and retried after a backoff, so
// the endpoint does not go deaf while the listener is open.
func (e *Endpoint) acceptLoop(ln net.Listener) {
	defer e.wg.Done()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			e.c.acceptErrors.Add(1)
			if e.cfg.OnError != nil {
				e.cfg.OnError(&AcceptError{Err: err, Retry: backoff})
			}
			t := time.NewTimer(backoff)
			select {
			case <-e.quit:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			_ = nc.Close()
			return
		}
		if len(e.inbound) >= e.cfg.MaxInboundConns {
			e.mu.Unlock()
			_ = nc.Close()
			e.c.refusedConns.Add(1)
			continue
		}
		c := e.startConnLocked(nc, nil)
		e.inbound[c] = struct{}{}
		e.mu.Unlock()
	}
}

// startConn starts the read loop of a dialled connection.
func (e *Endpoint) startConn(nc net.Conn, p *peer) *conn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.startConnLocked(nc, p)
}

func (e *Endpoint) startConnLocked(nc net.Conn, p *peer) *conn {
	c := &conn{ep: e, nc: nc, remote: nc.RemoteAddr().String(), peer: p}
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		c.remoteAP = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	if p == nil {
		e.c.inbound.Add(1)
	}
	e.wg.Add(1)
	go c.readLoop()
	return c
}

func (c *conn) close() {
	c.dead.Store(true)
	_ = c.nc.Close()
	if c.peer == nil {
		c.ep.mu.Lock()
		delete(c.ep.inbound, c)
		c.ep.mu.Unlock()
		c.ep.c.inbound.Add(-1)
	}
}

// writeBufs writes bufs with one writev, bounded by WriteTimeout. bufs is
// consumed.
func (c *conn) writeBufs(bufs net.Buffers) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.ep.cfg.WriteTimeout))
	_, err := bufs.WriteTo(c.nc)
	return err
}

// reply writes f on this connection: through the peer's queue for a
// dialled connection, directly for an inbound one.
func (c *conn) reply(f *frame) error {
	if c.peer != nil {
		return c.peer.send(context.Background(), f)
	}
	c.wmu.Lock()
	err := c.writeBufs(net.Buffers{f.bufs[0], f.bufs[1], f.bufs[2]})
	c.wmu.Unlock()
	if err == nil {
		c.ep.c.sent.add(f.lane, f.n)
	} else {
		c.ep.c.sendErrors.Add(1)
	}
	return err
}

// readLoop reads frames until the connection ends or a frame is rejected.
// A handler's payload aliases the frame's buffer until the handler returns.
// An inbound connection on which no frame begins within inboundIdle is
// closed (Stats.IdleClosed); a frame whose bytes do not all arrive within
// FrameTimeout of its first byte closes the connection (DropFrameTimeout).
func (c *conn) readLoop() {
	defer c.ep.wg.Done()
	defer c.close()
	var idle time.Duration
	if c.peer == nil {
		idle = inboundIdle(c.ep.cfg.IdleTimeout)
	}
	r := newFrameReader(c.nc, c.ep.limits.MaxFrame(), idle, max(c.ep.cfg.FrameTimeout, 0), &c.ep.c.readBuffers)
	defer r.release()
	for {
		b, err := r.next()
		if err != nil {
			c.readErr(err)
			return
		}
		c.handle(b, len(b)+wire.OuterLen)
		r.done()
	}
}

// inboundIdle returns how long an accepted connection may wait for a frame
// to begin: twice idle, so that a peer evicting its pooled connection after
// idle (checked every idle/2) closes first; 0 (no limit) for idle <= 0.
func inboundIdle(idle time.Duration) time.Duration {
	if idle <= 0 {
		return 0
	}
	return idle + min(idle, math.MaxInt64-idle)
}

// readErr counts the error that ended a read loop. A clean end, a local
// close and other socket errors are not counted.
func (c *conn) readErr(err error) {
	switch {
	case errors.Is(err, errIdle):
		c.ep.c.idleClosed.Add(1)
	case errors.Is(err, ErrFrameTimeout):
		c.ep.drop(DropFrameTimeout, &FrameError{Remote: c.remote, Err: err})
	case errors.Is(err, ErrTruncated), errors.Is(err, ErrPayloadTooLarge):
		c.reject(err)
	}
}

func (c *conn) reject(err error) {
	c.ep.drop(DropBadFrame, &FrameError{Remote: c.remote, Err: err})
}

// handle parses one frame and dispatches it. A frame that is rejected is
// counted and dropped and the connection kept, as lib-net's listener skips
// a frame it cannot verify or validate (shardus_net_listener.rs receive):
// the outer length has framed it, so the next frame is where it should be.
// Only a frame the reader cannot delimit ends the connection (readErr).
func (c *conn) handle(b []byte, wireLen int) {
	if len(b) == 0 {
		c.reject(ErrEmptyFrame)
		return
	}
	start := time.Now()
	if c.ep.cfg.FrameHandler != nil && b[0] != wire.Marker { // lib-net: anything but 0x01 is the plain lane
		c.ep.c.recv.add(LaneJSON, wireLen)
		if c.ep.cfg.RequireSigned {
			c.ep.drop(DropUnsigned, &FrameError{Remote: c.remote, Err: ErrUnsigned})
			return
		}
		c.handleFrame(&Frame{Data: b}, start)
		return
	}
	switch b[0] {
	case wire.JSONMarker:
		c.ep.c.recv.add(LaneJSON, wireLen)
		if c.ep.cfg.RequireSigned { // the plain lane is never signed
			c.ep.drop(DropUnsigned, &FrameError{Remote: c.remote, Err: ErrUnsigned})
			return
		}
		c.handleAug(&Header{Version: 0, Remote: c.remote}, b, true)
		return
	case wire.Marker:
	default:
		c.reject(ErrUnknownLane)
		return
	}
	f, err := wire.ParseFrame(b, c.ep.limits)
	if err != nil {
		c.reject(err)
		return
	}
	h := &Header{Version: f.Version, Remote: c.remote}
	if reason, err := c.verify(&f, h); err != nil {
		c.ep.drop(reason, &FrameError{Remote: c.remote, Err: err})
		return
	}
	if f.Version == wire.VersionV1 {
		c.ep.c.recv.add(LaneLegacy, wireLen)
		c.handleV1(h, &f, start)
		return
	}
	c.ep.c.recv.add(LaneRaw, wireLen)
	c.handleRaw(h, &f)
}

// verify checks the frame's signature (lib-net message.rs verify). With a
// hash key, a legacy frame must be signed, as lib-net verifies every
// headered frame; a raw frame must be when RequireSigned is set.
func (c *conn) verify(f *wire.Frame, h *Header) (DropReason, error) {
	if len(f.Owner) == 0 && len(f.Sig) == 0 {
		if c.ep.cfg.RequireSigned || (c.ep.signer != nil && f.Version == wire.VersionV1) {
			return DropUnsigned, ErrUnsigned
		}
		return 0, nil
	}
	if c.ep.signer == nil { // no hash key: the signature cannot be checked
		return 0, nil
	}
	if reason := c.ep.signer.verify(f.Owner, f.Sig, f.Signed); reason != "" {
		return DropBadSignature, &SignatureError{Owner: exactCopy(f.Owner), Reason: reason}
	}
	h.Owner = f.Owner
	return 0, nil
}

func (c *conn) handleV1(h *Header, f *wire.Frame, start time.Time) {
	hv, err := wire.ParseV1(f.Header)
	if err == nil && int(hv.MessageLength) != len(f.Data) {
		err = ErrLengthMismatch // lib-net HeaderV1::validate
	}
	if err != nil {
		c.reject(err)
		return
	}
	h.UUID, h.Compression = hv.UUID, compressionFromCode(uint8(hv.Compression))
	h.SenderID, h.TrackerID = c.intern(hv.SenderID), string(hv.TrackerID)
	comp := h.Compression
	if comp != CompressNone && plainJSON(f.Data) { // lib-net 1.3.11+: the field is sent, the data is not compressed
		comp = CompressNone
	}
	data, err := c.ep.codecs.decompress(comp, f.Data, 4*len(f.Data))
	if err != nil {
		c.reject(err)
		return
	}
	if c.ep.cfg.FrameHandler != nil {
		c.handleFrame(&Frame{Version: wire.VersionV1, Data: data, Owner: f.Owner, Sig: f.Sig,
			Header: LegacyHeader{UUID: hv.UUID, MessageLength: hv.MessageLength, SenderID: h.SenderID,
				TrackerID: h.TrackerID, VerificationData: string(hv.VerificationData), Compression: h.Compression}}, start)
		return
	}
	c.handleAug(h, data, comp == CompressNone)
}

// plainJSON reports whether legacy data is augData JSON as it stands. A
// gzip stream never begins with '{'; a brotli stream can, but is not
// valid JSON.
func plainJSON(data []byte) bool {
	return len(data) > 0 && data[0] == '{' && json.Valid(data)
}

// handleAug reads augData JSON (plain lane or header version 1).
func (c *conn) handleAug(h *Header, js []byte, aliased bool) {
	a, ops, err := legacy.Parse(js)
	c.ep.c.jsonOps.Add(uint64(ops.JSON))
	c.ep.c.base64Ops.Add(uint64(ops.Base64))
	dir, ok := dirFromText(a.MsgDir)
	if err == nil && !ok {
		err = ErrBadEnvelope
	}
	var id [16]byte
	if err == nil {
		id, err = parseUUIDText(a.UUID)
	}
	if err != nil {
		c.reject(err)
		return
	}
	if h.Version == 0 {
		h.UUID = id
	}
	h.Dir, h.Route = dir, a.Route
	h.SendTime, h.ReceiveTime, h.ReplyTime = a.SendTime*1e6, time.Now().UnixNano(), a.ReplyTime*1e6
	payload := a.Payload
	if !a.Binary {
		payload = a.Data
	} else {
		aliased = false
	}
	ri := &respInfo{sendTime: a.SendTime, receivedTime: h.ReceiveTime / 1e6, port: a.Port,
		timeout: a.Timeout, hasTimeout: a.HasTimeout, trackerID: h.TrackerID}
	c.dispatch(h, payload, aliased, ri)
}

func (c *conn) handleRaw(h *Header, f *wire.Frame) {
	rh, err := wire.ParseRaw(f.Header)
	if err == nil && int(rh.RawLen) > c.ep.cfg.PayloadLimit {
		err = ErrPayloadTooLarge
	}
	if err != nil {
		c.reject(err)
		return
	}
	h.UUID, h.Dir = rh.UUID, Dir(rh.Dir)
	h.Compression = compressionFromCode(rh.Flags & wire.FlagCompressionMask)
	h.SenderID, h.Route = c.intern(rh.SenderID), c.ep.routeName(rh.Route)
	h.SendTime, h.ReceiveTime, h.ReplyTime = rh.SendTime, rh.ReceiveTime, rh.ReplyTime
	if rh.Flags&wire.FlagTrace != 0 {
		h.ReceiveTime = time.Now().UnixNano()
	}
	payload, err := c.ep.codecs.decompress(h.Compression, f.Data, int(rh.RawLen))
	if err == nil && len(payload) != int(rh.RawLen) {
		err = ErrLengthMismatch
	}
	if err != nil {
		c.reject(err)
		return
	}
	if c.peer != nil {
		c.ep.learnRaw(c.peer.addr)
	}
	c.dispatch(h, payload, h.Compression == CompressNone, nil)
}

// intern returns b as a string, reusing the connection's last sender id.
func (c *conn) intern(b []byte) string {
	if string(b) != c.lastSender {
		c.lastSender = string(b)
	}
	return c.lastSender
}

// routeName returns the registered name equal to b without allocating, or
// a new string.
func (e *Endpoint) routeName(b []byte) string {
	e.mu.RLock()
	r := e.routes[string(b)]
	e.mu.RUnlock()
	if r != nil {
		return r.name
	}
	return string(b)
}

// dispatch hands a resp to its pending ask and a tell or ask to its
// route's handler. aliased says payload points into the read buffer.
func (c *conn) dispatch(h *Header, payload []byte, aliased bool, ri *respInfo) {
	e := c.ep
	if h.Dir == DirResp {
		e.deliver(c, h, payload, aliased)
		return
	}
	r := e.route(h.Route)
	if r == nil {
		e.drop(DropNoHandler, nil)
		return
	}
	if r.dedup && e.seen(r.name, payload) {
		e.drop(DropDuplicate, nil)
		return
	}
	respond := respondNotAsk
	if h.Dir == DirAsk {
		respond = c.responder(h, ri)
	}
	e.c.outRecvs.Add(1)
	r.h(h, payload, respond)
	e.c.recvRing.Put(e.c.outRecvs.Add(-1))
}

func respondNotAsk([]byte) error { return ErrNotAsk }

// seen records route and payload in the dedup LRU and reports whether they
// were there already.
func (e *Endpoint) seen(route string, payload []byte) bool {
	d, _ := blake2b.New256(nil)
	d.Write([]byte(route))
	d.Write(payload)
	var key [hashSize]byte
	d.Sum(key[:0])
	found, _ := e.dedup.ContainsOrAdd(key, struct{}{})
	return found
}

// responder returns the Respond of one ask. A raw-lane ask is answered on
// c; a legacy or plain-lane ask goes to the sender's IP and augData PORT
// over the pool, unless it has expired, with the ask's tracker id and the
// payload as the whole data (lib-net src/index.ts respond; shardus-core
// src/p2p/Comms.ts registerInternalBinary).
func (c *conn) responder(h *Header, ri *respInfo) Respond {
	id, route, lane := h.UUID, h.Route, h.Lane()
	return func(payload []byte) error {
		e := c.ep
		m := Msg{Route: route, Payload: payload}
		if lane == LaneRaw {
			f, err := e.encodeRaw(DirResp, id, &m)
			if err == nil {
				err = c.reply(&f)
			}
			return e.replyErr(err)
		}
		if ri.expired(time.Now().UnixMilli()) {
			return e.replyErr(ErrAskExpired)
		}
		host, _, _ := net.SplitHostPort(c.remote)
		to := net.JoinHostPort(host, strconv.Itoa(ri.port))
		f, err := e.encodeLegacy(e.legacyMode(to), DirResp, id, &m, 0, ri)
		if err != nil {
			return e.replyErr(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.WriteTimeout+e.cfg.DialTimeout)
		defer cancel()
		return e.replyErr(e.sendFrame(ctx, to, &f))
	}
}

func (e *Endpoint) replyErr(err error) error {
	if err != nil && e.cfg.OnError != nil {
		e.cfg.OnError(err)
	}
	return err
}
