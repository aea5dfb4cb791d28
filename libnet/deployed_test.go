package libnet

// Exchanges with lib-net as it is deployed (1.3.11 and later), written from
// its source and shardus-core's:
//
//	shardeum/lib-net @2832f1d (1.3.15): shardus_net/src/lib.rs,
//	  header/header_types.rs, header/header_v1.rs, message.rs,
//	  shardus_net_listener.rs, shardus_net_sender.rs, src/index.ts,
//	  src/types.ts, src/util/Encoding.ts, test/test_lru.ts
//	shardeum/lib-net @9d454a4 (1.4.x): header/header_v1.rs,
//	  shardus_net_listener.rs (NetConfig limits)
//	shardeum/shardus-core @cde14fd (2.13.3): src/p2p/Comms.ts,
//	  src/network/index.ts
//	shardeum/lib-types @3684197: src/utils/functions/stringify.ts

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

const handUUID = "550e8400-e29b-41d4-a716-446655440000"

var handID = [16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0, 0}

// augJSON is augData as lib-types safeStringify writes it (keys sorted).
// timeout "" leaves the key out, as a reply does.
func augJSON(port, msgDir, data string, sendTime int64, timeout string) string {
	s := `{"ADDRESS":"127.0.0.1","PORT":` + port + `,"UUID":"` + handUUID + `","data":` + data +
		`,"msgDir":"` + msgDir + `","receivedTime":0,"replyReceivedTime":0,"replyTime":0,"sendTime":` +
		strconv.FormatInt(sendTime, 10)
	if timeout != "" {
		s += `,"timeout":` + timeout
	}
	return s + "}"
}

// legacyEndpoint is a listening courier endpoint on the legacy lane with
// the test keys (lib-net's crypto test vectors).
func legacyEndpoint(t *testing.T, cfg Config) *Endpoint {
	t.Helper()
	cfg.ListenAddr, cfg.Lane = "127.0.0.1:0", LaneLegacy
	if cfg.SenderID == "" {
		cfg.SenderID = "go-node"
	}
	cfg.HashKey, cfg.SigningKey = testKeys(t)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// handNode plays a lib-net node's listener: courier's legacy frames to it
// (tells, asks, replies to its asks) arrive on one pooled connection.
type handNode struct {
	t    *testing.T
	ln   net.Listener
	port string
	rc   net.Conn
}

func newHandNode(t *testing.T) *handNode {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &handNode{t: t, ln: ln}
	_, n.port, _ = net.SplitHostPort(ln.Addr().String())
	t.Cleanup(func() {
		ln.Close()
		if n.rc != nil {
			n.rc.Close()
		}
	})
	return n
}

func (n *handNode) addr() string { return "127.0.0.1:" + n.port }

// handHeader is a HeaderV1 taken apart by hand (header_v1.rs deserialize).
type handHeader struct {
	uuid             [16]byte
	sender, tracker  string
	comp, messageLen uint32
}

// read returns the next frame courier sent to the hand node.
func (n *handNode) read() (handHeader, []byte) {
	n.t.Helper()
	if n.rc == nil {
		_ = n.ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second)) // hang guard
		c, err := n.ln.Accept()
		if err != nil {
			n.t.Fatal(err)
		}
		n.rc = c
	}
	_ = n.rc.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
	hdr, data, _, _, _ := readHandFrame(n.t, n.rc)
	le := binary.LittleEndian
	var h handHeader
	copy(h.uuid[:], hdr)
	h.messageLen = le.Uint32(hdr[16:])
	off := 20
	str := func() string {
		l := int(le.Uint32(hdr[off:]))
		s := string(hdr[off+4 : off+4+l])
		off += 4 + l
		return s
	}
	h.sender, h.tracker = str(), str()
	str() // verification_data
	h.comp = le.Uint32(hdr[off:])
	return h, data
}

// 1. lib-net 1.3.11 and later send the header's compression field as the
// application set it (test/test_lru.ts sends "Brotli") with the data
// uncompressed: ENABLE_COMPRESSION = false (lib.rs, commit e6680a8) makes
// Header::compress and Header::decompress return the data as it is. Such
// frames are read; a 1.3.10 peer's really compressed data still is.
func TestLegacyCompressionFieldWithPlainData(t *testing.T) {
	b := legacyEndpoint(t, Config{})
	got := make(chan string, 1)
	b.Handle("binary/t", func(h *Header, p []byte, _ Respond) { got <- h.Compression.String() + ":" + string(p) }, RouteOptions{})
	c := dialRaw(t, b.Addr(), nil)
	aug := []byte(augJSON("1", "tell", `{"payload":{"value":"aGk=","dataType":"bb"},"route":"binary/t"}`, time.Now().UnixMilli(), "0"))
	for _, tc := range []struct {
		name string
		comp uint32
		data []byte
	}{
		{"gzip", 1, aug},
		{"brotli", 2, aug},
		{"none", 0, aug},
		{"gzip", 1, gzipBytes(aug)},     // lib-net 1.3.10 and older
		{"brotli", 2, brotliBytes(aug)}, // lib-net 1.3.10 and older
	} {
		if _, err := c.Write(v1Frame(t, v1Spec{data: tc.data, comp: tc.comp, uuid: handID, sender: "lib-net-node"})); err != nil {
			t.Fatal(err)
		}
		if s := recv(t, got); s != tc.name+":hi" {
			t.Fatalf("%s: handler got %q", tc.name, s)
		}
	}
	if s := b.Stats(); s.Drops != [dropReasons]uint64{} || s.InboundConns != 1 {
		t.Fatalf("drops %v, inbound %d", s.Drops, s.InboundConns)
	}
}

// 1. The other way: with Compression set, legacy frames to a lib-net
// 1.3.11+ peer go out uncompressed with the field None (its listener hands
// the data to String::from_utf8 undecompressed); a peer known to run
// 1.3.10 or older gets them compressed.
func TestLegacySendsUncompressedToDeployedLibnet(t *testing.T) {
	n := newHandNode(t)
	a := legacyEndpoint(t, Config{Compression: CompressGzip, CompressMin: -1})
	payload := bytes.Repeat([]byte("compressible "), 200)
	want := `{"payload":{"value":"` + base64.StdEncoding.EncodeToString(payload) + `","dataType":"bb"},"route":"binary/t"}`
	check := func(data []byte) {
		t.Helper()
		var aug struct{ Data json.RawMessage }
		if err := json.Unmarshal(data, &aug); err != nil || string(aug.Data) != want {
			t.Fatalf("data is not the plain envelope: %v %.80q", err, data)
		}
	}
	if err := a.Tell(context.Background(), n.addr(), Msg{Route: "binary/t", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	h, data := n.read()
	if h.comp != 0 {
		t.Fatalf("compression field %d, want 0", h.comp)
	}
	check(data)

	a.SetLegacyCompress(n.addr(), true)
	if err := a.Tell(context.Background(), n.addr(), Msg{Route: "binary/t", Payload: payload}); err != nil {
		t.Fatal(err)
	}
	h, data = n.read()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil || h.comp != 1 {
		t.Fatalf("to a 1.3.10 peer: field %d, %v", h.comp, err)
	}
	plain, _ := io.ReadAll(zr)
	check(plain)
}

// 2. Every shape of a Buffer that lib-net and shardus-core send is read as
// binary with its route: Node's Buffer.toJSON form (lib-net's
// jsonStringify falls back to JSON.stringify, src/util/Encoding.ts), the
// same with keys sorted (safeStringify with bufferEncoding 'none'), and
// lib-types' bb and u8ab values (stringify.ts). A JSON payload stays JSON.
func TestLegacyEnvelopeShapes(t *testing.T) {
	got := make(chan string, 1)
	report := func(h *Header, p []byte, _ Respond) { got <- h.Route + " " + string(p) }
	b := legacyEndpoint(t, Config{Handler: report})
	c := dialRaw(t, b.Addr(), nil)
	bin := "binary/t \x04\x00\x01\xaa"
	for _, tc := range []struct{ name, data, want string }{
		{"Buffer.toJSON", `{"payload":{"type":"Buffer","data":[4,0,1,170]},"route":"binary/t"}`, bin},
		{"Buffer.toJSON sorted", `{"payload":{"data":[4,0,1,170],"type":"Buffer"},"route":"binary/t"}`, bin},
		{"bb", `{"payload":{"value":"BAABqg==","dataType":"bb"},"route":"binary/t"}`, bin},
		{"u8ab", `{"payload":{"dataType":"u8ab","value":"BAABqg=="},"route":"binary/t"}`, bin},
		{"json payload", `{"payload":{"a":[4,0]},"route":"json/t"}`, ` {"payload":{"a":[4,0]},"route":"json/t"}`},
		{"not bytes", `{"payload":{"type":"Buffer","data":[4,0,1,700]},"route":"binary/t"}`,
			` {"payload":{"type":"Buffer","data":[4,0,1,700]},"route":"binary/t"}`},
	} {
		aug := augJSON("1", "tell", tc.data, time.Now().UnixMilli(), "0")
		if _, err := c.Write(v1Frame(t, v1Spec{data: []byte(aug), uuid: handID, sender: "lib-net-node"})); err != nil {
			t.Fatal(err)
		}
		if s := recv(t, got); s != tc.want {
			t.Fatalf("%s: handler got %q, want %q", tc.name, s, tc.want)
		}
	}
}

// 2. A shardus-core binary reply's data is the Buffer itself
// (registerInternalBinary's respondWrapped calls respond(buffer, headers),
// and lib-net's respond puts it in augData.data); Ask returns its bytes and
// the reply header's tracker id.
func TestLegacyAskReadsBinaryReplies(t *testing.T) {
	n := newHandNode(t)
	a := legacyEndpoint(t, Config{})
	for _, data := range []string{
		`{"value":"BAABqg==","dataType":"bb"}`,
		`{"type":"Buffer","data":[4,0,1,170]}`,
		`{"data":[4,0,1,170],"type":"Buffer"}`,
	} {
		type result struct {
			r   Reply
			err error
		}
		res := make(chan result, 1)
		go func() {
			r, err := a.Ask(context.Background(), n.addr(), Msg{Route: "binary/q", Payload: []byte{1}, TrackerID: "tr-9"})
			res <- result{r, err}
		}()
		h, ask := n.read()
		var req struct {
			UUID string
			PORT int
		}
		if err := json.Unmarshal(ask, &req); err != nil || h.tracker != "tr-9" {
			t.Fatalf("ask %s, tracker %q: %v", ask, h.tracker, err)
		}
		resp := strings.Replace(augJSON(strconv.Itoa(req.PORT), "resp", data, time.Now().UnixMilli(), ""), handUUID, req.UUID, 1)
		c := dialRaw(t, a.Addr(), v1Frame(t, v1Spec{data: []byte(resp), uuid: h.uuid, sender: "lib-net-node", tracker: "tr-9"}))
		r := recv(t, res)
		if r.err != nil || !bytes.Equal(r.r.Payload, []byte{4, 0, 1, 0xaa}) || r.r.Header.TrackerID != "tr-9" {
			t.Fatalf("reply %s: %x %q %v", data, r.r.Payload, r.r.Header.TrackerID, r.err)
		}
		c.Close()
	}
}

// 3. lib-net verifies every headered frame and panics on an empty owner
// (message.rs verify, crypto get_pk "Invalid public key"), so the legacy
// lane cannot be used without keys: New and SetPeerLane refuse it, and a
// keyless endpoint answering a legacy ask writes nothing.
func TestLegacyLaneNeedsKeys(t *testing.T) {
	key, _ := testKeys(t)
	for _, cfg := range []Config{
		{},
		{Lane: LaneLegacy, HashKey: key},
		{Lane: LaneRaw, PeerLanes: map[string]Lane{"127.0.0.1:9": LaneLegacy}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrBadConfig) || !errors.Is(err, ErrNoSigningKey) {
			t.Fatalf("New(%+v) = %v", cfg, err)
		}
	}
	b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.SetPeerLane("127.0.0.1:9", LaneLegacy); !errors.Is(err, ErrNoSigningKey) {
		t.Fatalf("SetPeerLane legacy without keys: %v", err)
	}
	res := make(chan error, 1)
	b.Handle("binary/q", func(_ *Header, p []byte, respond Respond) { res <- respond(p) }, RouteOptions{})
	n := newHandNode(t)
	aug := augJSON(n.port, "ask", `{"payload":{"value":"AQ==","dataType":"bb"},"route":"binary/q"}`, time.Now().UnixMilli(), "5000")
	dialRaw(t, b.Addr(), v1Frame(t, v1Spec{data: []byte(aug), uuid: handID, sender: "lib-net-node"}))
	if err := recv(t, res); !errors.Is(err, ErrNoSigningKey) {
		t.Fatalf("respond without keys: %v", err)
	}
	if s := b.Stats(); s.Sent.Msgs != 0 || s.Peers != 0 {
		t.Fatalf("sent %d, peers %d", s.Sent.Msgs, s.Peers)
	}
}

// 3. With keys, a legacy frame must carry a signature that verifies, as
// lib-net's listener requires; an unsigned or badly signed one is counted
// and skipped, and the connection kept.
func TestUnsignedLegacyFramesDropped(t *testing.T) {
	b := legacyEndpoint(t, Config{})
	got := make(chan string, 3)
	b.Handle("binary/t", func(_ *Header, p []byte, _ Respond) { got <- string(p) }, RouteOptions{})
	tell := func(p string) []byte {
		return []byte(augJSON("1", "tell", `{"payload":{"value":"`+base64.StdEncoding.EncodeToString([]byte(p))+
			`","dataType":"bb"},"route":"binary/t"}`, time.Now().UnixMilli(), "0"))
	}
	otherKey := bytes.Repeat([]byte{7}, 32)
	c := dialRaw(t, b.Addr(), v1Frame(t, v1Spec{data: tell("unsigned"), uuid: handID, unsigned: true}))
	for _, f := range [][]byte{
		v1Frame(t, v1Spec{data: tell("badly signed"), uuid: handID, hashKey: otherKey}),
		v1Frame(t, v1Spec{data: tell("signed"), uuid: handID}),
	} {
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	if p := recv(t, got); p != "signed" {
		t.Fatalf("handler got %q first", p)
	}
	if s := b.Stats(); s.Drops[DropUnsigned] != 1 || s.Drops[DropBadSignature] != 1 || s.InboundConns != 1 {
		t.Fatalf("drops %v, inbound %d", s.Drops, s.InboundConns)
	}
}

// 4. Limits: a header of up to 4,096 bytes (1.3.x HEADER_SIZE_LIMIT_IN_BYTES
// = 2*2048, lib.rs) and a payload over 2 MiB (1.3.x has no payload limit)
// are read; what is sent stays within 1.4.x's NetConfig (sender id at most
// 64 bytes, header 2 KiB, frame 2 MiB), whose checks panic the
// connection's task (header_v1.rs check_variable_size @9d454a4).
func TestLegacyLimits(t *testing.T) {
	read := func(t *testing.T, spec v1Spec) int {
		t.Helper()
		b := legacyEndpoint(t, Config{})
		got := make(chan int, 1)
		b.Handle("binary/t", func(_ *Header, p []byte, _ Respond) { got <- len(p) }, RouteOptions{})
		dialRaw(t, b.Addr(), v1Frame(t, spec))
		return recv(t, got)
	}
	t.Run("4096-byte header read", func(t *testing.T) {
		small := augJSON("1", "tell", `{"payload":{"value":"AQID","dataType":"bb"},"route":"binary/t"}`, time.Now().UnixMilli(), "0")
		tracker := strings.Repeat("t", 4096-36-len("lib-net-node")) // a header of exactly 4,096 bytes
		if n := read(t, v1Spec{data: []byte(small), uuid: handID, sender: "lib-net-node", tracker: tracker}); n != 3 {
			t.Fatalf("payload of %d bytes", n)
		}
	})
	t.Run("3 MiB payload read", func(t *testing.T) {
		big := make([]byte, 3<<20)
		large := augJSON("1", "tell", `{"payload":{"value":"`+base64.StdEncoding.EncodeToString(big)+`","dataType":"bb"},"route":"binary/t"}`,
			time.Now().UnixMilli(), "0")
		if n := read(t, v1Spec{data: []byte(large), uuid: handID, sender: "lib-net-node"}); n != 3<<20 {
			t.Fatalf("payload of %d bytes", n)
		}
	})
	t.Run("sender id over 64 not sent", func(t *testing.T) {
		key, sk := testKeys(t)
		long := strings.Repeat("s", 65)
		if _, err := New(Config{Lane: LaneLegacy, HashKey: key, SigningKey: sk, SenderID: long}); !errors.Is(err, ErrBadConfig) {
			t.Fatalf("65-byte sender id on the legacy lane: %v", err)
		}
		for _, cfg := range []Config{
			{Lane: LaneLegacy, HashKey: key, SigningKey: sk, SenderID: long, LegacySend: SendLimits{SenderID: 65}},
			{Lane: LaneRaw, SenderID: strings.Repeat("s", 255)},
		} {
			e, err := New(cfg)
			if err != nil {
				t.Fatalf("New(sender id %d, %+v): %v", len(cfg.SenderID), cfg.LegacySend, err)
			}
			e.Close()
		}
	})
	t.Run("frame over 2 MiB not sent", func(t *testing.T) {
		n := newHandNode(t)
		a := legacyEndpoint(t, Config{PayloadLimit: 8 << 20})
		p := make([]byte, 1600<<10) // base64 makes a frame over 2 MiB
		err := a.Tell(context.Background(), n.addr(), Msg{Route: "binary/t", Payload: p})
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "LegacySend.Frame 2097152") {
			t.Fatalf("legacy frame over 2 MiB: %v", err)
		}
		a2 := legacyEndpoint(t, Config{PayloadLimit: 8 << 20, LegacySend: SendLimits{Frame: 4 << 20}})
		if err := a2.Tell(context.Background(), n.addr(), Msg{Route: "binary/t", Payload: p}); err != nil {
			t.Fatal(err)
		}
		if h, data := n.read(); int(h.messageLen) != len(data) || len(data) < 2<<20 {
			t.Fatalf("frame of %d bytes", len(data))
		}
	})
}

// 5 and 6. A legacy ask is read whatever JavaScript number its timeout is
// (5000.5); it is answered with the ask's tracker id echoed, as
// shardus-core's respondWrapped sets responseHeaders.tracker_id, and not
// answered once sendTime + timeout has passed, as lib-net's respond()
// returns without sending (src/index.ts).
func TestLegacyReplyRules(t *testing.T) {
	setup := func(t *testing.T) (*Endpoint, *handNode, chan error, func(sendTime int64, timeout, tracker string)) {
		b := legacyEndpoint(t, Config{})
		res := make(chan error, 1)
		b.Handle("binary/q", func(_ *Header, p []byte, respond Respond) { res <- respond(p) }, RouteOptions{})
		n := newHandNode(t)
		c := dialRaw(t, b.Addr(), nil)
		return b, n, res, func(sendTime int64, timeout, tracker string) {
			t.Helper()
			aug := augJSON(n.port, "ask", `{"payload":{"value":"BAABqg==","dataType":"bb"},"route":"binary/q"}`, sendTime, timeout)
			if _, err := c.Write(v1Frame(t, v1Spec{data: []byte(aug), uuid: handID, sender: "lib-net-node", tracker: tracker})); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("expired ask not answered", func(t *testing.T) {
		b, _, res, ask := setup(t)
		ask(time.Now().UnixMilli()-10_000, "5000", "late")
		if err := recv(t, res); !errors.Is(err, ErrAskExpired) {
			t.Fatalf("respond after sendTime+timeout: %v", err)
		}
		if s := b.Stats(); s.Sent.Msgs != 0 {
			t.Fatalf("an expired ask was answered (%d sent)", s.Sent.Msgs)
		}
	})
	t.Run("fractional timeout", func(t *testing.T) {
		b, n, res, ask := setup(t)
		ask(time.Now().UnixMilli(), "5000.5", "")
		if err := recv(t, res); err != nil {
			t.Fatal(err)
		}
		if h, _ := n.read(); h.uuid != handID {
			t.Fatalf("reply uuid %x", h.uuid)
		}
		if s := b.Stats(); s.Drops != [dropReasons]uint64{} {
			t.Fatalf("drops %v", s.Drops)
		}
	})
	t.Run("tracker id echoed", func(t *testing.T) {
		_, n, res, ask := setup(t)
		ask(time.Now().UnixMilli(), "5000", "tr-1")
		if err := recv(t, res); err != nil {
			t.Fatal(err)
		}
		h, data := n.read()
		if h.uuid != handID || h.tracker != "tr-1" || h.sender != "go-node" || h.comp != 0 {
			t.Fatalf("reply header %+v", h)
		}
		if !strings.Contains(string(data), `"data":{"value":"BAABqg==","dataType":"bb"},"msgDir":"resp"`) {
			t.Fatalf("reply data %s", data)
		}
	})
}

// 3. The plain JSON lane (lib-net's send without a header) is never signed:
// accepted by default, dropped as DropUnsigned with RequireSigned, the
// connection kept.
func TestPlainLaneUnderRequireSigned(t *testing.T) {
	for _, require := range []bool{false, true} {
		key, _ := testKeys(t)
		got := make(chan string, 1)
		b, err := New(Config{ListenAddr: "127.0.0.1:0", Lane: LaneRaw, HashKey: key, RequireSigned: require,
			Handler: func(h *Header, p []byte, _ Respond) { got <- h.Lane().String() + ":" + string(p) }})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		plain := outer([]byte(augJSON("1", "tell", `{"payload":{"value":"aGk=","dataType":"bb"},"route":"r"}`, 1, "0")))
		c := dialRaw(t, b.Addr(), plain)
		if require {
			waitFor(t, "the unsigned drop", func() bool { return b.Stats().Drops[DropUnsigned] == 1 })
			if _, err := c.Write(goodFrame()); err != nil { // unsigned raw: dropped too
				t.Fatal(err)
			}
			waitFor(t, "the second drop", func() bool { return b.Stats().Drops[DropUnsigned] == 2 })
			if n := b.Stats().InboundConns; n != 1 {
				t.Fatalf("inbound %d", n)
			}
			continue
		}
		if s := recv(t, got); s != "json:hi" {
			t.Fatalf("plain lane: %q", s)
		}
	}
}
