package relay

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"google.golang.org/protobuf/proto"

	"github.com/couriernet/courier/internal/testwait"
	"github.com/couriernet/courier/message"
)

// subscribedRelay is a relay on h, counting into c, subscribed to
// dropTopic, closed at the test's end.
func subscribedRelay(t *testing.T, h host.Host, c *message.Counters) *Relay {
	t.Helper()
	r, err := New(h, Config{Counters: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Subscribe(dropTopic, OwnerConfig); err != nil {
		t.Fatal(err)
	}
	return r
}

// chatMessage is a message of n payload bytes, the first 8 holding seq.
func chatMessage(n int, seq uint64) *message.Message {
	p := make([]byte, n)
	binary.BigEndian.PutUint64(p, seq)
	return &message.Message{Payload: p, ContentTopic: "/app/1/chat/proto", Timestamp: time.Now().UnixNano(), Meta: []byte{1, 2}}
}

// publishRPC is an RPC publishing each of data on dropTopic.
func publishRPC(data ...[]byte) *pb.RPC {
	out := &pb.RPC{}
	for _, d := range data {
		out.Publish = append(out.Publish, &pb.Message{Data: d, Topic: proto.String(dropTopic)})
	}
	return out
}

// receive returns the next envelope r delivered to got, failing the test
// after 10 s.
func receive(t *testing.T, r *Relay, got <-chan *message.Envelope) *message.Envelope {
	t.Helper()
	select {
	case env := <-got:
		return env
	case <-time.After(10 * time.Second):
		t.Fatalf("no envelope delivered; stats %+v", r.Stats())
		return nil
	}
}

// expectDelivered receives the next envelope on got and checks that it is
// want's, with the wire's CRC-32C carried when early (decoded early or
// paired), none otherwise.
func expectDelivered(t *testing.T, r *Relay, got <-chan *message.Envelope, want *message.Message, early bool) {
	t.Helper()
	env := receive(t, r, got)
	if env.Hash() != want.Hash(dropTopic, nil) || len(env.Message().Payload) != len(want.Payload) {
		t.Errorf("delivered %d bytes with hash %s, want %d with %s", len(env.Message().Payload), env.Hash(), len(want.Payload), want.Hash(dropTopic, nil))
	}
	crc, ok := env.WireCRC()
	if wantCRC := crc32.Checksum(env.Wire(), crc32.MakeTable(crc32.Castagnoli)); ok != early || ok && crc != wantCRC {
		t.Errorf("delivered %d bytes with the wire's CRC-32C %#x (%v), want %#x (%v)", len(want.Payload), crc, ok, wantCRC, early)
	}
}

// keptEarly is how many messages r's early decode keeps for the validator.
func keptEarly(r *Relay) int {
	r.early.mu.Lock()
	defer r.early.mu.Unlock()
	return len(r.early.cur) + len(r.early.old)
}

// TestEarlyDecode: a peer sends the relay, by raw gossipsub RPCs, a
// 10 kB message (decoded and hashed with its message id, the envelope
// carrying the wire's CRC-32C from the same pass), then, once it
// is delivered, the same bytes again (a duplicate that gossipsub drops:
// not decoded again), a 1 kB message
// (under earlyMin: decoded by the validator) and 4 kB that do not decode
// (kept with the error, so the validator counts no second decode). Both
// valid messages are delivered with the right hash; the relay made one
// decode per distinct message and one hash per valid one; nothing stays
// kept for the validator. Then a local publish of 10 kB is not decoded,
// and with a handler to deliver to, its hash is computed with its message
// id in one pass (one hash, the envelope keeping the id and the CRC-32C);
// with none, it is not hashed at all.
func TestEarlyDecode(t *testing.T) {
	var c message.Counters
	ha, hx := dropHost(t), dropHost(t)
	r := subscribedRelay(t, ha, &c)
	got := make(chan *message.Envelope, 8)
	removeHandler := r.AddHandler("test", func(env *message.Envelope) { got <- env })
	defer removeHandler()

	big, small := chatMessage(10_000, 1), chatMessage(1_000, 2)
	bad := make([]byte, 4096)
	bad[0], bad[1] = 0xff, 0xff // field 31, wire type 7: not a WakuMessage
	bigWire := big.Encode(nil)
	sendRPC(t, hx, ha, publishRPC(bigWire))
	expectDelivered(t, r, got, big, true)
	sendRPC(t, hx, ha, publishRPC(append([]byte{}, bigWire...), small.Encode(nil), bad))
	expectDelivered(t, r, got, small, false)
	testwait.Until(t, "the undecodable message dropped", func() bool { return r.Stats().Drops[DropInvalid] == 1 })
	st := c.Snapshot()
	if st.Decodes != 3 || st.Hashes != 2 {
		t.Errorf("%d decodes, %d hashes; want 3 (one a distinct message) and 2 (one a valid message)", st.Decodes, st.Hashes)
	}
	if n := r.Stats().MsgIDHashes; n != 4 {
		t.Errorf("%d message ids computed, want 4 (one a copy)", n)
	}
	if kept := keptEarly(r); kept != 0 {
		t.Errorf("%d messages still kept for the validator, want none", kept)
	}

	before, ids := c.Snapshot(), r.Stats().MsgIDHashes
	local := chatMessage(10_000, 3)
	env, err := r.Publish(t.Context(), dropTopic, local)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Snapshot().Sub(before); d.Decodes != 0 || d.Hashes != 1 || d.Encodes != 1 {
		t.Errorf("a local publish counted %+v; want one encode, no decode, one hash", d)
	}
	if n := r.Stats().MsgIDHashes - ids; n != 1 {
		t.Errorf("a local publish computed %d message ids, want 1", n)
	}
	id, ok := env.MessageID()
	crc, crcOK := env.WireCRC()
	if !ok || id != sha256.Sum256(env.Wire()) || !crcOK || crc != crc32.Checksum(env.Wire(), crc32.MakeTable(crc32.Castagnoli)) {
		t.Errorf("a local publish's envelope: message id %x (%v), CRC-32C %#x (%v); want sha256 and CRC-32C of its wire", id, ok, crc, crcOK)
	}
	if env.Hash() != local.Hash(dropTopic, nil) {
		t.Errorf("a local publish's hash %s, want %s", env.Hash(), local.Hash(dropTopic, nil))
	}
	if d := receive(t, r, got); d != env {
		t.Error("the handler got another envelope than the one published")
	}

	// On a topic the relay is not subscribed to, nothing is dispatched,
	// so nothing is hashed.
	expectUnhashed(t, r, &c, "/waku/2/rs/0/5", chatMessage(10_000, 5), "on a topic not subscribed to")
	removeHandler()
	expectUnhashed(t, r, &c, dropTopic, chatMessage(10_000, 4), "with nothing to deliver to")
}

// expectUnhashed publishes m on topic through r and fails t if the
// publish counted a hash in c or paired its message id with one; what
// says why nothing should be.
func expectUnhashed(t *testing.T, r *Relay, c *message.Counters, topic string, m *message.Message, what string) {
	t.Helper()
	before := c.Snapshot()
	env, err := r.Publish(t.Context(), topic, m)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Snapshot().Sub(before); d.Hashes != 0 {
		t.Errorf("a local publish %s counted %d hashes, want 0", what, d.Hashes)
	}
	if _, ok := env.MessageID(); ok {
		t.Errorf("a local publish %s computed its message id with the hash", what)
	}
}

// TestForwardOnly: a relay that delivers to nothing (no archive, no
// handler) validates and dispatches a peer's messages, decoding each once,
// but computes no deterministic hash and no CRC-32C, only each message's
// id: a 10 kB message is not decoded early. Its first sight is still
// recorded, so that once a handler is added a copy of it is not decoded,
// while a new 10 kB message is decoded early and hashed with its id, and
// reaches the handler with the right hash and CRC-32C.
func TestForwardOnly(t *testing.T) {
	var c message.Counters
	ha, hx := dropHost(t), dropHost(t)
	r := subscribedRelay(t, ha, &c)
	first := chatMessage(10_000, 1).Encode(nil)
	sendRPC(t, hx, ha, publishRPC(first, chatMessage(1_000, 2).Encode(nil)))
	testwait.Until(t, "both messages dispatched", func() bool { return r.Stats().Topics[dropTopic].Messages == 2 })
	if s := c.Snapshot(); s.Decodes != 2 || s.Hashes != 0 {
		t.Errorf("forwarding only: %d decodes, %d hashes; want 2 and 0", s.Decodes, s.Hashes)
	}
	if n := r.Stats().MsgIDHashes; n != 2 {
		t.Errorf("forwarding only: %d message ids computed, want 2", n)
	}
	if kept := keptEarly(r); kept != 0 {
		t.Errorf("forwarding only: %d messages kept for the validator, want none", kept)
	}

	got := make(chan *message.Envelope, 4)
	defer r.AddHandler("test", func(env *message.Envelope) { got <- env })()
	before := c.Snapshot()
	next := chatMessage(10_000, 3)
	sendRPC(t, hx, ha, publishRPC(append([]byte{}, first...), next.Encode(nil)))
	expectDelivered(t, r, got, next, true)
	if d := c.Snapshot().Sub(before); d.Decodes != 1 || d.Hashes != 1 {
		t.Errorf("with a handler, a copy and a new message: %d decodes, %d hashes; want 1 and 1", d.Decodes, d.Hashes)
	}
}

// TestEarlyDecodeBounded: at size messages kept, messages go the usual
// way; what is never taken is forgotten after a second generation starts,
// and not before.
func TestEarlyDecodeBounded(t *testing.T) {
	e := newEarlyDecode(nil, 2)
	big := func(seq byte) *pb.Message {
		m := &message.Message{Payload: make([]byte, 4096), ContentTopic: "/app/1/chat/proto", Timestamp: int64(seq) + 1}
		return &pb.Message{Data: m.Encode(nil), Topic: proto.String(dropTopic)}
	}
	a, b := big(1), big(2)
	if _, ok := e.id(a, true); !ok {
		t.Fatal("first message not decoded early")
	}
	if _, ok := e.id(b, true); !ok {
		t.Fatal("second message not decoded early")
	}
	if _, ok := e.id(big(3), true); ok {
		t.Error("a third message was decoded early with two kept, the limit")
	}
	if _, ok := e.take(b); !ok {
		t.Fatal("second message not kept")
	}
	ms := make([]*pb.Message, 2*rotateEvery*2)
	for i := range ms {
		ms[i] = &pb.Message{}
	}
	for _, m := range ms[:rotateEvery*2] { // fills a's generation, then starts the next
		e.put(m, decoded{})
		e.take(m)
	}
	e.put(ms[0], decoded{})
	e.take(ms[0])
	if len(e.old) != 1 {
		t.Fatalf("after a rotation: %d in the old generation, want a alone", len(e.old))
	}
	for _, m := range ms[rotateEvery*2:] {
		e.put(m, decoded{})
		e.take(m)
	}
	if _, ok := e.take(a); ok {
		t.Error("a message never taken was kept past two generations")
	}
	if len(e.cur)+len(e.old) != 0 {
		t.Errorf("%d messages kept, want none", len(e.cur)+len(e.old))
	}
}

// TestEarlyDecodeID: which messages id decodes early, and what it keeps.
func TestEarlyDecodeID(t *testing.T) {
	var c message.Counters
	e := newEarlyDecode(&c, 16)
	m := &message.Message{Payload: make([]byte, 10_000), ContentTopic: "/app/1/chat/proto", Timestamp: 7}
	wire := m.Encode(nil)
	pm := func(data []byte) *pb.Message { return &pb.Message{Data: data, Topic: proto.String(dropTopic)} }
	kept := func(p *pb.Message) *decoded {
		e.mu.Lock()
		defer e.mu.Unlock()
		if d, ok := e.cur[p]; ok {
			return &d
		}
		return nil
	}

	first := pm(wire)
	id, ok := e.id(first, true)
	if d := kept(first); !ok || id != sha256.Sum256(wire) || d == nil || d.err != nil || d.hash != m.Hash(dropTopic, nil) || d.wireCRC != crc32.Checksum(wire, crc32.MakeTable(crc32.Castagnoli)) || d.msg.Timestamp != 7 || len(d.msg.Payload) != 10_000 {
		t.Fatalf("first sight: ok %v, id %x, kept %+v", ok, id, d)
	}
	copied := pm(append([]byte{}, wire...))
	if _, ok := e.id(copied, true); ok || kept(copied) != nil {
		t.Error("a copy of a message seen was decoded early")
	}
	other := *m
	other.Timestamp = 8
	if _, ok := e.id(pm(other.Encode(nil)), true); !ok {
		t.Error("a message differing only in its timestamp was taken for a copy")
	}
	if _, ok := e.id(pm(make([]byte, earlyMin-1)), true); ok {
		t.Error("a message under earlyMin was decoded early")
	}
	bad := pm(append([]byte{0xff, 0xff}, make([]byte, earlyMin)...))
	if _, ok := e.id(bad, true); ok || kept(bad) == nil || kept(bad).err == nil {
		t.Errorf("undecodable message: ok %v, kept %+v; want its error kept", ok, kept(bad))
	}
	local := m.Encode(nil)
	local[len(local)-1] ^= 1 // another message, so not a copy of the first
	e.markLocal(dropTopic, local, [32]byte{}, false)
	if _, ok := e.id(pm(local), true); ok {
		t.Error("a local publish was decoded early")
	}
	e.unmarkLocal(local)
	if len(e.local) != 0 {
		t.Errorf("local publishes left marked: %v", e.local)
	}
	// A local publish whose envelope brought its id: that id, whatever it
	// is, and nothing decoded; twice under way, once unmarked, still.
	brought := [32]byte{0xab, 0xcd}
	e.markLocal(dropTopic, local, brought, true)
	e.markLocal(dropTopic, local, [32]byte{}, false)
	for i := range 2 {
		if id, ok := e.id(pm(local), true); !ok || id != brought {
			t.Errorf("local publish with its id, %d under way: id %x (%v), want %x", 2-i, id, ok, brought)
		}
		e.unmarkLocal(local)
	}
	if len(e.local) != 0 {
		t.Errorf("local publishes left marked: %v", e.local)
	}
	if _, ok := e.id(pm(append([]byte{}, local...)), true); ok {
		t.Error("a peer's copy of a local publish was decoded early")
	}
	signed := pm(other.Encode(nil))
	signed.Data[len(signed.Data)-1] ^= 1
	signed.Signature = []byte{1}
	if _, ok := e.id(signed, true); ok || kept(signed) != nil {
		t.Error("a message with a signature, which gossipsub rejects before validating, was decoded early")
	}
	if s := c.Snapshot(); s.Decodes != 3 || s.Hashes != 2 {
		t.Errorf("counted %d decodes, %d hashes; want 3 and 2", s.Decodes, s.Hashes)
	}
}
