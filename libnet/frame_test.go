package libnet

import (
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// frameNode is a listening endpoint with a FrameHandler that copies what
// it receives onto a channel.
func frameNode(t *testing.T, cfg Config) (*Endpoint, chan Frame) {
	t.Helper()
	got := make(chan Frame, 64)
	cfg.FrameHandler = func(f *Frame) {
		c := *f
		c.Data, c.Owner, c.Sig = exactCopy(f.Data), exactCopy(f.Owner), exactCopy(f.Sig)
		got <- c
	}
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Lane = LaneLegacy
	cfg.HashKey, cfg.SigningKey = testKeys(t)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, got
}

func recvFrame(t *testing.T, ch chan Frame) Frame {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame")
	}
	return Frame{}
}

func sendFrameWait(t *testing.T, e *Endpoint, peer string, f *OutFrame) error {
	t.Helper()
	ch := make(chan error, 1)
	e.SendFrame(peer, f, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("SendFrame never called done")
	}
	return nil
}

// A host that owns lib-net's envelope gets each frame as lib-net's
// listener hands it to JavaScript: the data as sent, the header version,
// the header and the signature (lib.rs listen: message, remote ip and
// port, header version, header JSON, sign JSON).
func TestFrameRoundTrip(t *testing.T) {
	a, _ := frameNode(t, Config{})
	b, got := frameNode(t, Config{})
	aug := `{"UUID":"550e8400-e29b-41d4-a716-446655440000","data":{"x":1},"msgDir":"tell"}`
	hdr := LegacyHeader{UUID: handID, SenderID: "node-a", TrackerID: "t-1", VerificationData: "v", Compression: CompressGzip}
	if err := sendFrameWait(t, a, b.Addr(), &OutFrame{Version: 1, Header: hdr, Data: []byte(aug)}); err != nil {
		t.Fatal(err)
	}
	f := recvFrame(t, got)
	if f.Version != 1 || string(f.Data) != aug || f.Remote.Addr().String() != "127.0.0.1" {
		t.Fatalf("frame %+v", f)
	}
	wantHdr := `{"uuid": "550e8400-e29b-41d4-a716-446655440000", "message_length": 78, "sender_id": "node-a", "tracker_id": "t-1", "verification_data": "v"}`
	if js := string(f.AppendHeaderJSON(nil)); js != wantHdr {
		t.Fatalf("header JSON\n got %s\nwant %s", js, wantHdr)
	}
	_, priv := testKeys(t)
	pub := hex.EncodeToString(priv[32:])
	if js := string(f.AppendSignJSON(nil)); !strings.HasPrefix(js, `{"owner": "`+pub+`", "sig": "`) || len(js) != len(`{"owner": "", "sig": ""}`)+64+192 {
		t.Fatalf("sign JSON %s", js)
	}
	if f.Header.Compression != CompressGzip { // carried, data not compressed (lib-net 1.3.11+)
		t.Fatalf("compression %v", f.Header.Compression)
	}

	// The plain lane: the data alone, no header, no signature.
	if err := sendFrameWait(t, a, b.Addr(), &OutFrame{Data: []byte(aug)}); err != nil {
		t.Fatal(err)
	}
	if f := recvFrame(t, got); f.Version != 0 || string(f.Data) != aug || f.Owner != nil {
		t.Fatalf("plain frame %+v", f)
	}
	// The receive ring is sampled as each handler returns, after it has
	// handed the frame over.
	st := b.NetStats()
	for deadline := time.Now().Add(5 * time.Second); st.OutstandingReceives.Count < 2 && time.Now().Before(deadline); st = b.NetStats() {
		time.Sleep(time.Millisecond)
	}
	if st.OutstandingReceives.Count != 2 || st.OutstandingReceives.Max != 0 || st.ReceiveElapsed.Count != 2 {
		t.Fatalf("receiver NetStats %+v", st)
	}
	if s := a.NetStats().OutstandingSends; s.Count != 2 || s.LongTermMax != 0 {
		t.Fatalf("sender NetStats %+v", s)
	}
}

// lib-net's listener reads any first byte but 0x01 as the plain lane, and
// drops data that is not UTF-8; so does a FrameHandler endpoint.
func TestFramePlainLaneBytes(t *testing.T) {
	b, got := frameNode(t, Config{})
	c := dialRaw(t, b.Addr(), nil)
	for _, d := range []string{`"just a string"`, "\xff\xfe not utf-8", `{"ok":true}`} {
		if _, err := c.Write(append([]byte{0, 0, 0, byte(len(d))}, d...)); err != nil {
			t.Fatal(err)
		}
	}
	if f := recvFrame(t, got); string(f.Data) != `"just a string"` {
		t.Fatalf("first %q", f.Data)
	}
	if f := recvFrame(t, got); string(f.Data) != `{"ok":true}` {
		t.Fatalf("second %q", f.Data)
	}
	if n := b.Stats().Drops[DropBadFrame]; n != 1 {
		t.Fatalf("bad frames %d", n)
	}
}

// MultiSendFrame frames once and answers once per peer, a dead port with
// a dial error that names the refusal; the live peers all get the frame.
func TestMultiSendFramePerPeer(t *testing.T) {
	a, _ := frameNode(t, Config{})
	b, gotB := frameNode(t, Config{})
	c, gotC := frameNode(t, Config{})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	peers := []string{b.Addr(), dead, c.Addr()}
	errs := make([]error, len(peers))
	var wg sync.WaitGroup
	wg.Add(len(peers))
	f := &OutFrame{Version: 1, Header: LegacyHeader{UUID: handID, SenderID: "a"}, Data: []byte(`{"m":1}`)}
	a.MultiSendFrame(peers, f, func(i int, err error) { errs[i] = err; wg.Done() })
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("live peers: %v", errs)
	}
	if !errors.Is(errs[1], ErrDial) || !errors.Is(errs[1], syscall.ECONNREFUSED) {
		t.Fatalf("dead peer: %v", errs[1])
	}
	fb, fc := recvFrame(t, gotB), recvFrame(t, gotC)
	if string(fb.Data) != `{"m":1}` || string(fb.Sig) != string(fc.Sig) {
		t.Fatalf("frames differ: %x %x", fb.Sig, fc.Sig)
	}
}

// Frames to one peer arrive in the order SendFrame was called, and Evict
// makes the next send dial a new connection.
func TestSendFrameOrderAndEvict(t *testing.T) {
	a, _ := frameNode(t, Config{})
	b, got := frameNode(t, Config{})
	const n = 500
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		a.SendFrame(b.Addr(), &OutFrame{Data: []byte(`{"i":` + strconv.Itoa(i) + `}`)}, func(err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	for i := range n {
		if f := recvFrame(t, got); string(f.Data) != `{"i":`+strconv.Itoa(i)+`}` {
			t.Fatalf("frame %d is %s", i, f.Data)
		}
	}
	first := b.Stats().InboundConns
	a.Evict(b.Addr())
	if err := sendFrameWait(t, a, b.Addr(), &OutFrame{Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	recvFrame(t, got)
	if first != 1 {
		t.Fatalf("inbound connections before evict: %d", first)
	}
	for deadline := time.Now().Add(5 * time.Second); a.Stats().Peers != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the evicted peer's writer has exited, a new one serves
			t.Fatalf("peers after evict: %d", a.Stats().Peers)
		}
	}
}

// SendFrame refuses what lib-net refuses or would drop, without writing:
// a header version other than 0 and 1 ("Failed to parse header"), a
// sender id over 64 bytes (lib-net 1.4 panics), a frame over the limit.
func TestSendFrameRefusals(t *testing.T) {
	a, _ := frameNode(t, Config{LegacySend: SendLimits{Frame: 1 << 10}})
	b, _ := frameNode(t, Config{})
	for _, tc := range []struct {
		f    OutFrame
		want error
	}{
		{OutFrame{Version: 2, Data: []byte("{}")}, ErrNoLegacyHeader},
		{OutFrame{Version: 1, Header: LegacyHeader{SenderID: strings.Repeat("s", 65)}, Data: []byte("{}")}, ErrTooLarge},
		{OutFrame{Version: 1, Data: make([]byte, 2<<10)}, ErrTooLarge},
		{OutFrame{Version: 0, Data: make([]byte, 2<<10)}, ErrTooLarge},
	} {
		if err := sendFrameWait(t, a, b.Addr(), &tc.f); !errors.Is(err, tc.want) {
			t.Errorf("version %d, %d bytes: %v, want %v", tc.f.Version, len(tc.f.Data), err, tc.want)
		}
	}
	if s := b.Stats(); s.Received.Msgs != 0 {
		t.Fatalf("receiver got %d frames", s.Received.Msgs)
	}
}

// Header JSON is read with lib-net's rules (HeaderV1 derives serde
// Deserialize; header_v1.rs test_from_json_string is the first case).
func TestParseHeaderJSON(t *testing.T) {
	ok := []struct {
		js   string
		want LegacyHeader
	}{
		{`{"uuid": "550e8400-e29b-41d4-a716-446655440000", "message_length": 42, "sender_id": "127.0.0.1", "compression": "Gzip"}`,
			LegacyHeader{UUID: handID, MessageLength: 42, SenderID: "127.0.0.1", Compression: CompressGzip}},
		{`{"uuid":"550e8400e29b41d4a716446655440000","tracker_id":"t","verification_data":"v","extra":[1,{"a":2}]}`,
			LegacyHeader{UUID: handID, TrackerID: "t", VerificationData: "v"}},
		{`{"uuid":"{550e8400-e29b-41d4-a716-446655440000}","compression":"None"}`, LegacyHeader{UUID: handID, Compression: CompressNone}},
		{`{"uuid":"urn:uuid:550e8400-e29b-41d4-a716-446655440000","compression":"Brotli"}`, LegacyHeader{UUID: handID, Compression: CompressBrotli}},
	}
	for _, tc := range ok {
		h, err := ParseHeaderJSON(1, []byte(tc.js))
		if err != nil || h != tc.want {
			t.Errorf("%s: %+v, %v", tc.js, h, err)
		}
	}
	bad := []string{
		`{"sender_id":"a"}`, // uuid is required
		`{"uuid":"550e8400-e29b-41d4-a716-44665544000"}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000","compression":"Zstd"}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000","sender_id":null}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000","message_length":-1}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000","message_length":1.5}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000","sender_id":"a","sender_id":"b"}`,
		`{"uuid":"550e8400-e29b-41d4-a716-446655440000"} x`,
		`[1]`, ``, `{`,
	}
	for _, js := range bad {
		if _, err := ParseHeaderJSON(1, []byte(js)); !errors.Is(err, ErrNoLegacyHeader) {
			t.Errorf("%q: %v, want ErrNoLegacyHeader", js, err)
		}
	}
	for _, v := range []uint8{0, 2, 255} {
		if _, err := ParseHeaderJSON(v, []byte(ok[0].js)); !errors.Is(err, ErrNoLegacyHeader) {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

// The header and sign JSON match lib-net's own test vectors
// (header_v1.rs test_to_json_string, message.rs test_to_json_string).
func TestFrameJSONVectors(t *testing.T) {
	f := Frame{Header: LegacyHeader{UUID: handID, MessageLength: 42, SenderID: "sender_1", TrackerID: "tracker_1",
		VerificationData: "verification_data_1"}, Owner: []byte{0x12, 0x34, 0x56, 0x78}, Sig: []byte{0x9a, 0xbc, 0xde, 0xf0}}
	want := `{"uuid": "550e8400-e29b-41d4-a716-446655440000", "message_length": 42, "sender_id": "sender_1", "tracker_id": "tracker_1", "verification_data": "verification_data_1"}`
	if got := string(f.AppendHeaderJSON(nil)); got != want {
		t.Errorf("header\n got %s\nwant %s", got, want)
	}
	if got := string(f.AppendSignJSON(nil)); got != `{"owner": "12345678", "sig": "9abcdef0"}` {
		t.Errorf("sign %s", got)
	}
	f.Header.SenderID = `a"b`
	if got := string(f.AppendHeaderJSON(nil)); !strings.Contains(got, `"sender_id": "a\"b"`) {
		t.Errorf("escaping: %s", got)
	}
}

// A Ring summarises as lib-net's ring buffer does: the last 100 samples
// for min, max, total and count, all of them for the long-term extremes.
func TestRingSummary(t *testing.T) {
	var r Ring
	if s := r.Summary(); s != (RingSummary{}) {
		t.Fatalf("empty %+v", s)
	}
	r.Put(500)
	for i := range 150 {
		r.Put(int64(i))
	}
	want := RingSummary{LongTermMax: 500, LongTermMin: 0, Min: 50, Max: 149, Total: 9950, Count: 100, Average: 99.5}
	if s := r.Summary(); s != want {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

// TellAsync keeps the raw lane's order to one peer and MultiTellAsync
// answers once with every peer's result.
func TestTellAsyncRaw(t *testing.T) {
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{Lane: LaneRaw})
	got := make(chan string, 100)
	b.Handle("r", func(_ *Header, p []byte, _ Respond) { got <- string(p) }, RouteOptions{})
	for i := range 100 {
		a.TellAsync(b.Addr(), Msg{Route: "r", Payload: []byte(strconv.Itoa(i))}, func(err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	for i := range 100 {
		select {
		case p := <-got:
			if p != strconv.Itoa(i) {
				t.Fatalf("message %d is %s", i, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("timeout")
		}
	}
	res := make(chan []error, 1)
	a.MultiTellAsync([]string{b.Addr(), b.Addr()}, Msg{Route: "r", Payload: []byte("m")}, func(errs []error) { res <- errs })
	if errs := <-res; len(errs) != 2 || errs[0] != nil || errs[1] != nil {
		t.Fatalf("MultiTellAsync: %v", errs)
	}
}

// AskAsync keeps the deadline itself: a reply comes back, an unanswered
// ask ends with ErrTimeout, and no deadline stays armed.
func TestAskAsync(t *testing.T) {
	a, b := newPair(t, Config{Lane: LaneRaw}, Config{Lane: LaneRaw})
	b.Handle("echo", func(_ *Header, p []byte, respond Respond) { _ = respond(append([]byte("re:"), p...)) }, RouteOptions{})
	b.Handle("mute", func(*Header, []byte, Respond) {}, RouteOptions{})
	type res struct {
		r   Reply
		err error
	}
	ch := make(chan res, 2)
	a.AskAsync(b.Addr(), Msg{Route: "echo", Payload: []byte("x")}, time.Second, func(r Reply, err error) { ch <- res{r, err} })
	if r := <-ch; r.err != nil || string(r.r.Payload) != "re:x" {
		t.Fatalf("echo: %q %v", r.r.Payload, r.err)
	}
	a.AskAsync(b.Addr(), Msg{Route: "mute"}, 50*time.Millisecond, func(r Reply, err error) { ch <- res{r, err} })
	if r := <-ch; !errors.Is(r.err, ErrTimeout) {
		t.Fatalf("mute: %v", r.err)
	}
	if s := a.Stats(); s.ArmedTimers != 0 || s.PendingAsks != 0 {
		t.Fatalf("armed %d pending %d", s.ArmedTimers, s.PendingAsks)
	}
}

func FuzzParseHeaderJSON(f *testing.F) {
	f.Add([]byte(`{"uuid": "550e8400-e29b-41d4-a716-446655440000", "message_length": 42, "sender_id": "127.0.0.1", "compression": "Gzip"}`))
	f.Add([]byte(`{"uuid":"550e8400e29b41d4a716446655440000","x":{"y":[1,2]}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		h, err := ParseHeaderJSON(1, js)
		if err != nil {
			if !errors.Is(err, ErrNoLegacyHeader) {
				t.Fatalf("error %v does not wrap ErrNoLegacyHeader", err)
			}
			return
		}
		fr := Frame{Header: h}
		back, err := ParseHeaderJSON(1, fr.AppendHeaderJSON(nil))
		if err != nil || back.UUID != h.UUID || back.SenderID != h.SenderID || back.TrackerID != h.TrackerID {
			t.Fatalf("round trip %+v -> %+v, %v", h, back, err)
		}
	})
}
