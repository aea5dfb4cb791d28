//go:build napi

package main

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-parameter
#include <stdlib.h>
#include "glue.h"
*/
import "C"

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/netip"
	"os"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/couriernet/courier/libnet"
)

// Defaults of Sn's limits when a wrapper passes none (1.3.x and 1.4.x
// pass six arguments): lib-net 1.4.x's constants (lib.rs
// HEADER_SIZE_LIMIT_IN_BYTES, PAYLOAD_SIZE_LIMIT_IN_BYTES), which 1.6.1's
// wrapper also passes by default.
const (
	defaultPayloadLimit = 2 << 20
	defaultHeaderLimit  = 2 << 10
	// defaultReceiveQueue bounds the messages posted to JavaScript and not
	// yet delivered, per Sn; past it the connections' read loops wait, so
	// a slow event loop slows its senders instead of growing a queue.
	defaultReceiveQueue = 8192
	// tokenLife is how long a raw ask may wait for respond_raw; tokenMax
	// bounds the asks waiting at once (the oldest is forgotten first).
	tokenLife = time.Minute
	tokenMax  = 1 << 16
)

var logging atomic.Bool

func logf(format string, args ...any) {
	if logging.Load() {
		log.Printf("shardus-net: "+format, args...)
	}
}

// core is one Sn object's Go side.
type core struct {
	s        *C.sn
	ep       *libnet.Endpoint
	listen   string // "host:port" to bind on listen()
	legacyOn atomic.Bool
	rawOn    atomic.Bool
	recvMax  int32

	lmu      sync.Mutex
	retry    chan struct{} // closed to stop a bind retry loop; nil when none
	bound    bool
	tokens   tokens
	closeOne sync.Once
}

func coreOf(h C.uintptr_t) *core { return cgo.Handle(h).Value().(*core) }

// gostr copies C bytes into a Go string.
func gostr(p *C.char, n C.size_t) string { return C.GoStringN(p, C.int(n)) }

// cbytes aliases C (or V8) memory; the caller keeps it alive.
func cbytes(p *C.char, n C.size_t) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

func setErr(buf *C.char, n C.size_t, msg string) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	k := copy(b[:len(b)-1], msg)
	b[k] = 0
}

// Error kinds returned to C: thrown as TypeError or Error.
const (
	errType  = 1
	errPlain = 2
)

// u16 converts a JavaScript number as Rust's `as u16` does (saturating,
// NaN to 0), which is how lib-net reads ports.
func u16(d float64) uint16 {
	switch {
	case d != d || d <= 0:
		return 0
	case d >= math.MaxUint16:
		return math.MaxUint16
	}
	return uint16(d)
}

// u8 converts a JavaScript number as Rust's `as u8` does.
func u8(d float64) uint8 {
	switch {
	case d != d || d <= 0:
		return 0
	case d >= math.MaxUint8:
		return math.MaxUint8
	}
	return uint8(d)
}

// resolve turns (host, port) into "ip:port" as lib-net's to_socket_addrs
// does: an IP literal as it is, a name by the first address it resolves
// to (a blocking lookup, as in lib-net).
func resolve(host string, port uint16) (string, bool) {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		addrs, lerr := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
		if lerr != nil || len(addrs) == 0 {
			return "", false
		}
		ip = addrs[0]
	}
	return netip.AddrPortFrom(ip.Unmap(), port).String(), true
}

//export goModuleInit
func goModuleInit(errbuf *C.char, n C.size_t) C.int {
	if err := oneRuntime(); err != nil {
		setErr(errbuf, n, err.Error())
		return errPlain
	}
	return 0
}

//export goNew
func goNew(s *C.sn, o *C.sn_opts, errbuf *C.char, n C.size_t) C.int {
	c, kind, err := newCore(s, o)
	if err != nil {
		setErr(errbuf, n, err.Error())
		return kind
	}
	s._go = C.uintptr_t(cgo.NewHandle(c))
	return 0
}

func newCore(s *C.sn, o *C.sn_opts) (*core, C.int, error) {
	host, port := gostr(o.host, o.host_len), u16(float64(o.port))
	listen, ok := resolve(host, port)
	if !ok {
		return nil, errType, errors.New("The provided address is not valid")
	}
	hashKey, err := hex.DecodeString(gostr(o.hash_key, o.hash_key_len))
	if err != nil {
		return nil, errPlain, fmt.Errorf("hashKey is not valid hex: %w", err)
	}
	sk, err := hex.DecodeString(gostr(o.sk, o.sk_len))
	if err != nil || len(sk) != ed25519.PrivateKeySize {
		return nil, errPlain, errors.New("Invalid secret key: signingSecretKeyHex must be 64 bytes in hex (sodium layout)")
	}
	payload, header := int(o.payload_limit), int(o.header_limit)
	if payload <= 0 {
		payload = defaultPayloadLimit
	}
	if header <= 0 {
		header = defaultHeaderLimit
	}
	maxPeers := 1 << 20 // lib-net's HashMap is unbounded
	if o.use_lru != 0 {
		if o.lru_size < 1 {
			return nil, errPlain, errors.New("lruSize must be at least 1")
		}
		maxPeers = int(o.lru_size)
	}
	c := &core{s: s, listen: listen, recvMax: defaultReceiveQueue}
	if o.receive_queue >= 1 {
		c.recvMax = int32(min(o.receive_queue, math.MaxInt32))
	}
	c.tokens.init()
	cfg := libnet.Config{
		SenderID:   gostr(o.sender_id, o.sender_id_len),
		Lane:       libnet.LaneLegacy,
		HashKey:    hashKey,
		SigningKey: ed25519.PrivateKey(sk),
		// Receive limits as lib-net's NetConfig; a frame a peer with the same
		// limits would drop is refused before it is written.
		HeaderLimit:  max(header, 64),
		PayloadLimit: payload,
		LegacySend:   libnet.SendLimits{Frame: payload, Header: max(header, 64)},
		MaxPeers:     maxPeers,
		// lib-net closes no idle connection: a peer that writes to a
		// connection we closed as idle could lose that frame.
		IdleTimeout:     -1,
		MaxInboundConns: 1 << 14,
		AsyncQueueLen:   int(o.queue_len),
		DedupSize:       int(o.dedup_size),
		HandlerDedup:    o.dedup != 0,
		FrameHandler:    c.onFrame,
		Handler:         c.onRaw,
		OnError:         func(err error) { logf("%v", err) },
	}
	if o.raw_all != 0 {
		cfg.Lane = libnet.LaneRaw
	}
	if o.raw_peers_len > 0 {
		cfg.PeerLanes = map[string]libnet.Lane{}
		for _, p := range strings.Split(gostr(o.raw_peers, o.raw_peers_len), ",") {
			if p = strings.TrimSpace(p); p != "" {
				h, ps, err := net.SplitHostPort(p)
				pn, perr := strconv.Atoi(ps)
				addr, ok := resolve(h, uint16(pn))
				if err != nil || perr != nil || !ok {
					return nil, errType, fmt.Errorf("rawPeers: %q is not host:port", p)
				}
				cfg.PeerLanes[addr] = libnet.LaneRaw
			}
		}
	}
	ep, err := libnet.New(cfg)
	if err != nil {
		return nil, errPlain, err
	}
	c.ep = ep
	return c, 0, nil
}

//export goClose
func goClose(h C.uintptr_t) {
	c := coreOf(h)
	c.closeOne.Do(func() {
		go func() {
			c.stopRetry()
			_ = c.ep.Close()
			cgo.Handle(h).Delete()
			C.sn_unref(c.s)
		}()
	})
}

//export goListen
func goListen(h C.uintptr_t, errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.bound || c.retry != nil {
		return 0
	}
	err := c.ep.Listen(c.listen)
	if err == nil {
		c.bound = true
		return 0
	}
	log.Printf("shardus-net: failed to listen to %s: %v; retrying every 10 s", c.listen, err)
	// lib-net's listener retries a failed bind every 10 s (bind_to_socket).
	stop := make(chan struct{})
	c.retry = stop
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			c.lmu.Lock()
			if c.retry != stop {
				c.lmu.Unlock()
				return
			}
			err := c.ep.Listen(c.listen)
			if err == nil {
				c.bound, c.retry = true, nil
			}
			c.lmu.Unlock()
			if err == nil {
				return
			}
			log.Printf("shardus-net: failed to listen to %s: %v; retrying every 10 s", c.listen, err)
		}
	}()
	return 0
}

func (c *core) stopRetry() {
	c.lmu.Lock()
	if c.retry != nil {
		close(c.retry)
		c.retry = nil
	}
	c.lmu.Unlock()
}

//export goSetListening
func goSetListening(h C.uintptr_t, which C.int) {
	c := coreOf(h)
	if which == 2 {
		c.rawOn.Store(true)
	} else {
		c.legacyOn.Store(true)
	}
}

//export goStopListening
func goStopListening(h C.uintptr_t) {
	c := coreOf(h)
	c.legacyOn.Store(false)
	c.rawOn.Store(false)
	c.stopRetry()
	c.lmu.Lock()
	c.bound = false
	c.lmu.Unlock()
	_ = c.ep.StopListening()
}

//export goSetLogging
func goSetLogging(on C.int) { logging.Store(on != 0) }

// ---- receive ----

// waitRoom holds a read loop while JavaScript has recvMax messages still
// to deliver (the receive backpressure), until the Sn's JavaScript side
// ends. It reports whether the message may be posted.
func (c *core) waitRoom() bool {
	for C.sn_inflight(c.s) >= C.int32_t(c.recvMax) {
		if C.sn_is_closed(c.s) != 0 {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return C.sn_is_closed(c.s) == 0
}

func (c *core) post(it *C.item) {
	atomic.AddInt32((*int32)(unsafe.Pointer(&c.s.inflight)), 1)
	if C.sn_post(c.s, it) != 0 {
		atomic.AddInt32((*int32)(unsafe.Pointer(&c.s.inflight)), -1)
	}
}

// extra returns the bytes after an item's struct.
func extra(it *C.item, n int) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(it), C.sizeof_item)), n)
}

func setIP(it *C.item, ap netip.AddrPort) {
	ip := ap.Addr().String()
	b := unsafe.Slice((*byte)(unsafe.Pointer(&it.ip[0])), len(it.ip))
	b[copy(b[:len(b)-1], ip)] = 0
	it.port = C.int(ap.Port())
}

// onFrame posts a legacy frame to the listen callback: data, remote ip
// and port, header version, header JSON and sign JSON (null, null, null on
// the plain lane), as lib-net's listener does (lib.rs listen).
func (c *core) onFrame(f *libnet.Frame) {
	if !c.legacyOn.Load() || !c.waitRoom() {
		return
	}
	var hdr, sign []byte
	if f.Version != 0 {
		hdr = f.AppendHeaderJSON(make([]byte, 0, 192))
		sign = f.AppendSignJSON(make([]byte, 0, 280))
	}
	n := len(f.Data) + len(hdr) + len(sign)
	it := C.item_new(C.ITEM_LEGACY, C.size_t(n))
	if it == nil {
		return
	}
	b := extra(it, n)
	copy(b, f.Data)
	copy(b[len(f.Data):], hdr)
	copy(b[len(f.Data)+len(hdr):], sign)
	base := (*C.char)(unsafe.Add(unsafe.Pointer(it), C.sizeof_item))
	it.data, it.data_len = base, C.size_t(len(f.Data))
	if f.Version != 0 {
		it.hdr, it.hdr_len = (*C.char)(unsafe.Add(unsafe.Pointer(base), len(f.Data))), C.size_t(len(hdr))
		it.sign, it.sign_len = (*C.char)(unsafe.Add(unsafe.Pointer(base), len(f.Data)+len(hdr))), C.size_t(len(sign))
	}
	it.version = C.int(f.Version)
	setIP(it, f.Remote)
	c.post(it)
}

// onRaw posts a raw-lane tell or ask to the raw listen callback: the
// payload as a Buffer over C memory (one copy, from the read buffer), the
// route, the sender id, the direction and, for an ask, a respond token.
func (c *core) onRaw(h *libnet.Header, payload []byte, respond libnet.Respond) {
	if !c.rawOn.Load() || !c.waitRoom() {
		return
	}
	n := len(h.Route) + len(h.SenderID)
	it := C.item_new(C.ITEM_RAW, C.size_t(n))
	if it == nil {
		return
	}
	if !fillPayload(it, payload) {
		C.item_free(it)
		return
	}
	fillNames(it, h.Route, h.SenderID)
	it.version = C.int(h.Dir)
	if h.Dir == libnet.DirAsk {
		it.token = C.uint64_t(c.tokens.add(respond))
	}
	ap, _ := netip.ParseAddrPort(h.Remote)
	setIP(it, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	c.post(it)
}

// fillPayload copies payload into a malloc'd block the item owns (handed
// to JavaScript as an external buffer).
func fillPayload(it *C.item, payload []byte) bool {
	if len(payload) == 0 {
		return true
	}
	p := C.malloc(C.size_t(len(payload)))
	if p == nil {
		return false
	}
	copy(unsafe.Slice((*byte)(p), len(payload)), payload)
	it.data, it.data_len, it.own_data = (*C.char)(p), C.size_t(len(payload)), 1
	return true
}

// fillNames writes route (as hdr) and sender id (as sign) after the item.
func fillNames(it *C.item, route, sender string) {
	b := extra(it, len(route)+len(sender))
	copy(b, route)
	copy(b[len(route):], sender)
	base := unsafe.Add(unsafe.Pointer(it), C.sizeof_item)
	it.hdr, it.hdr_len = (*C.char)(base), C.size_t(len(route))
	it.sign, it.sign_len = (*C.char)(unsafe.Add(base, len(route))), C.size_t(len(sender))
}

// ---- send ----

// postDone answers one send's callback: nothing on success, lib-net's
// error text otherwise.
func (c *core) postDone(ref *C.cbref, peer string, err error) {
	var text string
	if err != nil {
		text = sendErrText(peer, err)
	}
	it := C.item_new(C.ITEM_DONE, C.size_t(len(text)+1))
	if it == nil {
		return
	}
	it.ref = ref
	if err != nil {
		b := extra(it, len(text)+1)
		copy(b, text)
		it.err = (*C.char)(unsafe.Pointer(&b[0]))
	}
	_ = C.sn_post(c.s, it)
}

// Send kinds, as glue.c passes them.
const (
	sendPlain  = 0
	sendHeader = 1
	sendRaw    = 2
)

//export goSend
func goSend(h C.uintptr_t, kind C.int, port, version C.double, host *C.char, hostLen C.size_t,
	hdr *C.char, hdrLen C.size_t, data *C.char, dataLen C.size_t, own C.int, ref *C.cbref,
	errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	var f libnet.OutFrame
	var m libnet.Msg
	switch kind {
	case sendHeader:
		lh, err := libnet.ParseHeaderJSON(u8(float64(version)), cbytes(hdr, hdrLen))
		if err != nil {
			setErr(errbuf, n, "Failed to parse header")
			return errPlain
		}
		f = libnet.OutFrame{Version: 1, Header: lh}
	case sendRaw:
		if hdr != nil {
			var err error
			if m, err = rawHeader(u8(float64(version)), cbytes(hdr, hdrLen)); err != nil {
				setErr(errbuf, n, "Failed to parse header")
				return errPlain
			}
		}
	}
	peer, ok := resolve(gostr(host, hostLen), u16(float64(port)))
	if !ok {
		setErr(errbuf, n, "The provided address is not valid")
		return errType
	}
	body := cbytes(data, dataLen)
	if kind == sendRaw {
		if l := c.ep.LaneFor(peer); l != libnet.LaneRaw {
			go c.postDone(ref, peer, errNotRaw)
			return 0
		}
		m.Payload = body
		c.ep.TellAsync(peer, m, func(err error) { c.postDone(ref, peer, err) })
		return 0
	}
	f.Data = body
	c.ep.SendFrame(peer, &f, func(err error) {
		if own != 0 {
			C.free(unsafe.Pointer(data))
		}
		c.postDone(ref, peer, err)
	})
	return 0
}

var errNotRaw = errors.New("peer is not known to take the raw lane (header version 2): list it in rawPeers, call allowRaw, or set rawAll")

// rawHeaders caches parsed raw headers by their text: a sender passes the
// same few (one per route), so no message pays for a JSON parse.
var rawHeaders struct {
	sync.Mutex
	m map[string]libnet.Msg
}

// rawHeader reads the header JSON of the raw functions: version 2 (the raw
// lane), {"route": string, "compression": "None"|"Gzip"|"Brotli"|"Zstd"},
// both optional.
func rawHeader(version uint8, js []byte) (libnet.Msg, error) {
	if version != 2 {
		return libnet.Msg{}, fmt.Errorf("header version %d", version)
	}
	rawHeaders.Lock()
	m, ok := rawHeaders.m[string(js)]
	rawHeaders.Unlock()
	if ok {
		return m, nil
	}
	m, err := parseRawHeader(js)
	if err != nil {
		return m, err
	}
	rawHeaders.Lock()
	if rawHeaders.m == nil || len(rawHeaders.m) >= 1024 {
		rawHeaders.m = map[string]libnet.Msg{}
	}
	rawHeaders.m[string(js)] = m
	rawHeaders.Unlock()
	return m, nil
}

func parseRawHeader(js []byte) (libnet.Msg, error) {
	var m libnet.Msg
	var h struct {
		Route       *string `json:"route"`
		Compression string  `json:"compression"`
	}
	if len(js) > 0 {
		if err := json.Unmarshal(js, &h); err != nil {
			return m, err
		}
	}
	if h.Route != nil {
		m.Route = *h.Route
	}
	switch h.Compression {
	case "", "None":
		m.Compression = libnet.CompressNone
	case "Gzip":
		m.Compression = libnet.CompressGzip
	case "Brotli":
		m.Compression = libnet.CompressBrotli
	case "Zstd":
		m.Compression = libnet.CompressZstd
	default:
		return m, fmt.Errorf("compression %q", h.Compression)
	}
	return m, nil
}

//export goMulti
func goMulti(h C.uintptr_t, raw C.int, ports *C.double, hosts **C.char, hostLens *C.size_t, count C.uint32_t,
	version C.double, hdr *C.char, hdrLen C.size_t, data *C.char, dataLen C.size_t, ref *C.cbref,
	errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	var lh libnet.LegacyHeader
	var m libnet.Msg
	var err error
	if raw != 0 {
		m, err = rawHeader(u8(float64(version)), cbytes(hdr, hdrLen))
	} else {
		lh, err = libnet.ParseHeaderJSON(u8(float64(version)), cbytes(hdr, hdrLen))
	}
	if err != nil {
		setErr(errbuf, n, "Failed to parse header")
		return errPlain
	}
	k := int(count)
	ps := unsafe.Slice(ports, k)
	hs := unsafe.Slice(hosts, k)
	hl := unsafe.Slice(hostLens, k)
	peers := make([]string, k)
	for i := range peers {
		host, port := gostr(hs[i], hl[i]), u16(float64(ps[i]))
		p, ok := resolve(host, port)
		if !ok {
			setErr(errbuf, n, fmt.Sprintf("The provided address %s:%d is not valid", host, port))
			return errType
		}
		peers[i] = p
	}
	if k == 0 {
		setErr(errbuf, n, "No valid addresses provided")
		return errType
	}
	body := cbytes(data, dataLen)
	if raw != 0 {
		m.Payload = body
		c.multiRaw(peers, m, ref)
		return 0
	}
	var left atomic.Int32
	left.Store(int32(k))
	c.ep.MultiSendFrame(peers, &libnet.OutFrame{Version: 1, Header: lh, Data: body}, func(i int, err error) {
		if left.Add(-1) == 0 {
			defer C.free(unsafe.Pointer(data))
		}
		c.postDone(ref, peers[i], err)
	})
	return 0
}

// multiRaw sends m to the peers that take the raw lane, framed once, and
// posts one result per peer in a single callback.
func (c *core) multiRaw(peers []string, m libnet.Msg, ref *C.cbref) {
	errs := make([]error, len(peers))
	var send []string
	var at []int
	for i, p := range peers {
		if c.ep.LaneFor(p) != libnet.LaneRaw {
			errs[i] = errNotRaw
			continue
		}
		send, at = append(send, p), append(at, i)
	}
	finish := func(got []error) {
		for j, e := range got {
			errs[at[j]] = e
		}
		it := C.item_new(C.ITEM_MULTI, 0)
		if it == nil {
			return
		}
		it.ref, it.n = ref, C.int(len(peers))
		it.errs = (**C.char)(C.calloc(C.size_t(len(peers)), C.size_t(unsafe.Sizeof(uintptr(0)))))
		es := unsafe.Slice(it.errs, len(peers))
		for i, e := range errs {
			if e != nil {
				es[i] = C.CString(sendErrText(peers[i], e))
			}
		}
		_ = C.sn_post(c.s, it)
	}
	if len(send) == 0 {
		go finish(nil)
		return
	}
	c.ep.MultiTellAsync(send, m, finish)
}

//export goAsk
func goAsk(h C.uintptr_t, port C.double, host *C.char, hostLen C.size_t, hdr *C.char, hdrLen C.size_t,
	data *C.char, dataLen C.size_t, timeout C.double, ref *C.cbref, errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	m, err := rawHeader(2, cbytes(hdr, hdrLen))
	if err != nil {
		setErr(errbuf, n, "Failed to parse header")
		return errPlain
	}
	peer, ok := resolve(gostr(host, hostLen), u16(float64(port)))
	if !ok {
		setErr(errbuf, n, "The provided address is not valid")
		return errType
	}
	if c.ep.LaneFor(peer) != libnet.LaneRaw {
		go c.postReply(ref, peer, libnet.Reply{}, errNotRaw)
		return 0
	}
	m.Payload = cbytes(data, dataLen)
	d := time.Duration(float64(timeout) * float64(time.Millisecond))
	c.ep.AskAsync(peer, m, d, func(r libnet.Reply, err error) { c.postReply(ref, peer, r, err) })
	return 0
}

func (c *core) postReply(ref *C.cbref, peer string, r libnet.Reply, err error) {
	var text string
	if err != nil {
		text = sendErrText(peer, err)
	}
	it := C.item_new(C.ITEM_REPLY, C.size_t(len(r.Header.Route)+len(r.Header.SenderID)+len(text)+1))
	if it == nil {
		return
	}
	it.ref = ref
	if err != nil {
		b := extra(it, len(text)+1)
		copy(b, text)
		it.err = (*C.char)(unsafe.Pointer(&b[0]))
	} else {
		fillNames(it, r.Header.Route, r.Header.SenderID)
		if !fillPayload(it, r.Payload) {
			C.item_free(it)
			return
		}
	}
	_ = C.sn_post(c.s, it)
}

//export goRespond
func goRespond(h C.uintptr_t, token C.uint64_t, data *C.char, dataLen C.size_t, ref *C.cbref,
	errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	respond := c.tokens.take(uint64(token))
	payload := cbytes(data, dataLen)
	go func() {
		err := errExpiredToken
		if respond != nil {
			err = respond(payload)
		}
		c.postDone(ref, "", err)
	}()
	return 0
}

var errExpiredToken = errors.New("ask not found: answered already, or older than a minute")

//export goPeer
func goPeer(h C.uintptr_t, allow C.int, port C.double, host *C.char, hostLen C.size_t, on C.int,
	errbuf *C.char, n C.size_t) C.int {
	c := coreOf(h)
	peer, ok := resolve(gostr(host, hostLen), u16(float64(port)))
	if !ok {
		setErr(errbuf, n, "The provided address is not valid")
		return errType
	}
	if allow == 0 {
		c.ep.Evict(peer)
		return 0
	}
	lane := libnet.LaneLegacy
	if on != 0 {
		lane = libnet.LaneRaw
	}
	if err := c.ep.SetPeerLane(peer, lane); err != nil {
		setErr(errbuf, n, err.Error())
		return errPlain
	}
	return 0
}

// ---- stats ----

func summary(r *C.ring) libnet.RingSummary {
	s := libnet.RingSummary{LongTermMax: int64(r.lt_max), LongTermMin: int64(r.lt_min), Count: int(r.n)}
	buf := unsafe.Slice((*int64)(unsafe.Pointer(&r.buf[0])), int(r.n))
	for i, v := range buf {
		if i == 0 || v < s.Min {
			s.Min = v
		}
		if i == 0 || v > s.Max {
			s.Max = v
		}
		s.Total += v
	}
	if r.n > 0 {
		s.Average = float64(s.Total) / float64(r.n)
	}
	return s
}

// goStats returns stats() as JSON: lib-net's three rings (sampled on the
// JavaScript thread, as lib-net samples them) and courier's counters.
//
//export goStats
func goStats(h C.uintptr_t, sends, receives, elapsed *C.ring) *C.char {
	c := coreOf(h)
	st := c.ep.Stats()
	drops := map[string]uint64{}
	for i, n := range st.Drops {
		drops[libnet.DropReason(i).String()] = n
	}
	out := map[string]any{
		"outstanding_sends":    summary(sends),
		"outstanding_receives": summary(receives),
		"receive_elapsed":      summary(elapsed),
		"dropped_duplicates":   st.Drops[libnet.DropDuplicate],
		"drops":                drops,
		"sent":                 map[string]uint64{"messages": st.Sent.Msgs, "bytes": st.Sent.Bytes, "raw": st.Sent.ByLane[libnet.LaneRaw]},
		"received":             map[string]uint64{"messages": st.Received.Msgs, "bytes": st.Received.Bytes, "raw": st.Received.ByLane[libnet.LaneRaw]},
		"send_errors":          st.SendErrors,
		"pending_asks":         st.PendingAsks,
		"peers":                st.Peers,
		"inbound_connections":  st.InboundConns,
		"base64_ops":           st.Base64Ops,
		"json_ops":             st.JSONOps,
	}
	js, _ := json.Marshal(out)
	return C.CString(string(js))
}

// sendErrText is the text a send's callback gets: lib-net's (the Debug
// form of its SenderError, shardus_net_sender.rs) for dial and write
// failures, libnet's own for what lib-net has no answer to.
func sendErrText(peer string, err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, libnet.ErrDial) && errors.As(err, &errno):
		return fmt.Sprintf("ConnectionFailedError(%s, %s)", rustOs(errno), peer)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("SendFailedError(Custom { kind: TimedOut, error: \"Send timed out\" }, %s)", peer)
	case errors.As(err, &errno):
		return fmt.Sprintf("SendFailedError(%s, %s)", rustOs(errno), peer)
	}
	return err.Error()
}

// rustOs formats errno as Rust's io::Error Debug does.
func rustOs(e syscall.Errno) string {
	kinds := map[syscall.Errno]string{
		syscall.ECONNREFUSED: "ConnectionRefused", syscall.ECONNRESET: "ConnectionReset",
		syscall.ECONNABORTED: "ConnectionAborted", syscall.EPIPE: "BrokenPipe", syscall.ETIMEDOUT: "TimedOut",
		syscall.EHOSTUNREACH: "HostUnreachable", syscall.ENETUNREACH: "NetworkUnreachable",
		syscall.EADDRNOTAVAIL: "AddrNotAvailable", syscall.EADDRINUSE: "AddrInUse",
	}
	kind, ok := kinds[e]
	if !ok {
		kind = "Uncategorized"
	}
	msg := e.Error()
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return fmt.Sprintf("Os { code: %d, kind: %s, message: %q }", int(e), kind, msg)
}

func main() {}
