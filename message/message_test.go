package message_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/couriernet/courier/message"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func meta64() []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// TestHashVectors checks every test vector of rfc-index
// waku/standards/core/14/message.md and of nwaku
// tests/waku_core/test_message_digest.nim.
func TestHashVectors(t *testing.T) {
	payload := unhex(t, "010203045445535405060708")
	const ct = "/waku/2/default-content/proto"
	const ts = int64(0x175789bfa23f8400)
	secret := unhex(t, "73757065722d736563726574")
	tests := []struct {
		name, pubsub string
		meta, pay    []byte
		want         string
	}{
		{"spec/meta12", "/waku/2/default-waku/proto", secret, payload, "64cce733fed134e83da02b02c6f689814872b1a0ac97ea56b76095c3c72bfe05"},
		{"spec/meta64", "/waku/2/default-waku/proto", meta64(), payload, "7158b6498753313368b9af8f6e0a0a05104f68f972981da42a43bc53fb0c1b27"},
		{"spec/nometa", "/waku/2/default-waku/proto", nil, payload, "a2554498b31f5bcdfcbf7fa58ad1c2d45f0254f3f8110a85588ec3cf10720fd8"},
		{"spec/emptypayload", "/waku/2/default-waku/proto", secret, []byte{}, "483ea950cb63f9b9d6926b262bb36194d3f40a0463ce8446228350bd44e96de4"},
		{"nwaku/emptymeta", "/waku/2/rs/0/0", []byte{}, payload, "cccab07fed94181c83937c8ca8340c9108492b7ede354a6d95421ad34141fd37"},
		{"nwaku/meta12", "/waku/2/rs/0/0", secret, payload, "b9b4852f9d8c489846e8bfc6c5ca6a1a8d460a40d28832a966e029eb39619199"},
		{"nwaku/meta64", "/waku/2/rs/0/0", meta64(), payload, "653460d04f66c5b11814d235152f4f246e6f03ef80a305a825913636fbafd0ba"},
		{"nwaku/emptypayload", "/waku/2/rs/0/0", secret, []byte{}, "0f6448cc23b2db6c696aa6ab4b693eff4cf3549ff346fe1dbeb281697396a09f"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &message.Message{Payload: tc.pay, ContentTopic: ct, Timestamp: ts, Meta: tc.meta}
			var c message.Counters
			if got := m.Hash(tc.pubsub, &c).String(); got != tc.want {
				t.Fatalf("hash = %s, want %s", got, tc.want)
			}
			// The same through the wire: encode, decode, envelope.
			wire := m.Encode(&c)
			d, err := message.Decode(wire, &c)
			if err != nil {
				t.Fatal(err)
			}
			env := message.NewEnvelope(d, tc.pubsub, wire, &c)
			if got := env.Hash().String(); got != tc.want {
				t.Fatalf("envelope hash = %s, want %s", got, tc.want)
			}
			s := c.Snapshot()
			if s.Hashes != 2 || s.Decodes != 1 || s.Encodes != 1 {
				t.Fatalf("counters = %+v, want 2 hashes, 1 decode, 1 encode", s)
			}
			wantBytes := uint64(len(tc.pubsub)+len(tc.pay)+len(ct)+len(tc.meta)+8) * 2
			if s.HashedBytes != wantBytes || s.DecodedBytes != uint64(len(wire)) {
				t.Fatalf("hashed %d decoded %d, want %d and %d", s.HashedBytes, s.DecodedBytes, wantBytes, len(wire))
			}
		})
	}
}

// TestHashUnsetTimestamp checks that an absent timestamp is hashed as 8 zero
// bytes: the vector was computed as sha256("/waku/2/rs/0/0" || 0x01 || "/a/1/b/c" || 00x8).
func TestHashUnsetTimestamp(t *testing.T) {
	m := &message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c"}
	withZero := &message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Present: message.HasTimestamp}
	if m.Hash("/waku/2/rs/0/0", nil) != withZero.Hash("/waku/2/rs/0/0", nil) {
		t.Fatal("absent and zero timestamp hash differently")
	}
	sum := sha256.Sum256([]byte("/waku/2/rs/0/0\x01/a/1/b/c\x00\x00\x00\x00\x00\x00\x00\x00"))
	if m.Hash("/waku/2/rs/0/0", nil) != message.Hash(sum) {
		t.Fatal("absent timestamp is not hashed as 8 zero bytes")
	}
}

// TestEncodeGolden pins the exact bytes of an encoding that nwaku and go-waku
// decode: fields in number order, timestamp as zigzag varint.
func TestEncodeGolden(t *testing.T) {
	m := &message.Message{
		Payload: []byte{0xAA}, ContentTopic: "/a/1/b/c", Version: 1, Timestamp: -1,
		Meta: []byte{0x01}, RateLimitProof: []byte{0x02}, Ephemeral: true,
	}
	want := "0a01aa" + "12082f612f312f622f63" + "1801" + "5001" + "5a0101" + "aa010102" + "f80101"
	if got := hex.EncodeToString(m.Encode(nil)); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
	if m.Size() != len(want)/2 {
		t.Fatalf("Size = %d, want %d", m.Size(), len(want)/2)
	}
	// Empty payload and topic are still written (nwaku rejects absent fields).
	if got := hex.EncodeToString((&message.Message{}).Encode(nil)); got != "0a001200" {
		t.Fatalf("empty message encodes as %s", got)
	}
}

func TestDecodeFields(t *testing.T) {
	wire := unhex(t, "0a01aa12082f612f312f622f631801500f5a0101aa010102f80101"+"a206027878") // + unknown field 100
	m, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &message.Message{
		Payload: []byte{0xAA}, ContentTopic: "/a/1/b/c", Version: 1, Timestamp: -8,
		Meta: []byte{1}, RateLimitProof: []byte{2}, Ephemeral: true,
		Present: message.HasVersion | message.HasTimestamp | message.HasMeta | message.HasRateLimitProof | message.HasEphemeral,
	}
	if !m.Equal(want) {
		t.Fatalf("decoded %+v\nwant %+v", m, want)
	}
	if &m.Payload[0] != &wire[2] {
		t.Fatal("payload does not alias the input")
	}
	// A repeated field takes the last value.
	m, err = message.Decode(unhex(t, "0a01aa0a01bb1200"), nil)
	if err != nil || m.Payload[0] != 0xBB {
		t.Fatalf("repeated payload: %v %x", err, m.Payload)
	}
}

func TestDecodeErrors(t *testing.T) {
	big := protowire.AppendTag(nil, 1, protowire.BytesType)
	big = protowire.AppendBytes(big, make([]byte, message.MaxSize))
	meta65 := (&message.Message{Payload: []byte{1}, ContentTopic: "/a/1/b/c", Meta: make([]byte, 65)}).Encode(nil)
	tests := []struct {
		name string
		wire []byte
		want error
	}{
		{"empty", nil, message.ErrMissingPayload},
		{"no topic", unhex(t, "0a01aa"), message.ErrMissingContentTopic},
		{"no payload", unhex(t, "1200"), message.ErrMissingPayload},
		{"truncated bytes", unhex(t, "0a05aa"), message.ErrTruncated},
		{"truncated tag", unhex(t, "0a01aa12"), message.ErrTruncated},
		{"truncated varint", unhex(t, "0a01aa120050ff"), message.ErrTruncated},
		{"lying length", unhex(t, "0affffffff0f"), message.ErrTruncated},
		{"field zero", unhex(t, "0000"), message.ErrTruncated},
		{"payload as varint", unhex(t, "0801"), message.ErrWireType},
		{"timestamp as bytes", unhex(t, "0a00120052020101"), message.ErrWireType},
		{"unknown bad group", unhex(t, "0a0012002b"), message.ErrTruncated},
		{"meta 65", meta65, message.ErrMetaTooLong},
		{"oversized", big, message.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := message.Decode(tc.wire, nil)
			if !errors.Is(err, tc.want) || m != nil {
				t.Fatalf("Decode = %v, %v; want %v", m, err, tc.want)
			}
		})
	}
}

func TestMaxSizeAccepted(t *testing.T) {
	m := &message.Message{ContentTopic: "/a/1/b/c"}
	m.Payload = make([]byte, message.MaxSize-m.Size()-2)
	wire := m.Encode(nil)
	if len(wire) != message.MaxSize {
		t.Fatalf("built %d bytes, want %d", len(wire), message.MaxSize)
	}
	if _, err := message.Decode(wire, nil); err != nil {
		t.Fatal(err)
	}
}

var sink *message.Envelope

func TestDecodeHashAllocs(t *testing.T) {
	wire := (&message.Message{Payload: make([]byte, 50000), ContentTopic: "/a/1/b/c", Timestamp: 1}).Encode(nil)
	var c message.Counters
	allocs := testing.AllocsPerRun(100, func() {
		m, err := message.Decode(wire, &c)
		if err != nil {
			t.Fatal(err)
		}
		sink = message.NewEnvelope(m, "/waku/2/rs/0/0", wire, &c)
	})
	// One Message and one Envelope; no payload-sized allocation.
	if allocs != 2 {
		t.Fatalf("decode+envelope allocates %v objects, want 2", allocs)
	}
	m := &message.Message{Payload: wire, ContentTopic: "/a/1/b/c"}
	if a := testing.AllocsPerRun(100, func() { _ = m.Hash("x", &c) }); a != 0 {
		t.Fatalf("hash allocates %v objects, want 0", a)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(unhex(f, "0a01aa12082f612f312f622f631801500f5a0101aa010102f80101"))
	f.Add(unhex(f, "0a001200"))
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := message.Decode(data, nil)
		if err != nil {
			return
		}
		checkCapped(t, m)
		wire := m.Encode(nil)
		m2, err := message.Decode(wire, nil)
		if err != nil {
			t.Fatalf("re-decode of own encoding: %v", err)
		}
		if !m.Equal(m2) {
			t.Fatalf("round trip differs: %+v vs %+v", m, m2)
		}
		if m.Hash("/waku/2/rs/0/0", nil) != m2.Hash("/waku/2/rs/0/0", nil) {
			t.Fatal("hash differs after round trip")
		}
	})
}

func TestEncodeShared(t *testing.T) {
	m := &message.Message{Payload: []byte("payload"), ContentTopic: "/a/1/b/c", Timestamp: 5, Meta: []byte{1}, Present: message.HasTimestamp | message.HasMeta}
	shared, wire := m.EncodeShared(nil)
	if !shared.Equal(m) {
		t.Fatalf("shared copy %+v differs from %+v", shared, m)
	}
	if &shared.Payload[0] != &wire[2] {
		t.Fatal("payload does not alias the encoding")
	}
	d, err := message.Decode(wire, nil)
	if err != nil || !d.Equal(m) {
		t.Fatalf("decode of shared encoding: %v", err)
	}
	empty, _ := (&message.Message{}).EncodeShared(nil)
	if len(empty.Payload) != 0 || empty.ContentTopic != "" {
		t.Fatal("empty message")
	}
}

// TestEncodeReserve: the reserved payload region, once written, gives the
// same encoding and hash as Encode of the finished message, with one
// buffer of exactly the encoded size and the payload aliasing it.
func TestEncodeReserve(t *testing.T) {
	payload := []byte("the payload, written in place")
	for _, m := range []*message.Message{
		{ContentTopic: "/a/1/b/c", Timestamp: 5, Meta: []byte{1}, Present: message.HasTimestamp | message.HasMeta},
		{ContentTopic: "/a/1/b/c"},
	} {
		var c message.Counters
		shared, wire := m.EncodeReserve(len(payload), &c)
		if len(shared.Payload) != len(payload) || cap(shared.Payload) != len(payload) || len(wire) != cap(wire) {
			t.Fatalf("payload len %d cap %d, wire len %d cap %d", len(shared.Payload), cap(shared.Payload), len(wire), cap(wire))
		}
		copy(shared.Payload, payload)
		full := *m
		full.Payload = payload
		if want := full.Encode(nil); !bytes.Equal(wire, want) {
			t.Fatalf("EncodeReserve gave %x, Encode %x", wire, want)
		}
		if !shared.Equal(&full) || shared.Hash("/waku/2/rs/0/0", nil) != full.Hash("/waku/2/rs/0/0", nil) {
			t.Fatalf("shared copy %+v differs from %+v", shared, &full)
		}
		if s := c.Snapshot(); s.Encodes != 1 || s.EncodedBytes != uint64(len(wire)) {
			t.Fatalf("counted %+v", s)
		}
	}
}

// TestHashAndID: HashAndID gives Hash's deterministic hash, sha256(wire)
// and hash/crc32's CRC-32C of wire for the spec's vectors (too short to pair) and for
// payloads long enough to pair, with pubsub topics that leave the payload
// anywhere in a block, and counts one hash.
func TestHashAndID(t *testing.T) {
	const ts = int64(0x175789bfa23f8400)
	payload := make([]byte, 150_000)
	for i := range payload {
		payload[i] = byte(i*31 + i>>8)
	}
	for _, n := range []int{12, 1023, 4096, 65_000, 150_000} {
		for _, topic := range []string{"/waku/2/rs/0/0", "/waku/2/default-waku/proto", "/waku/2/rs/16/1023-with-a-long-name-of-64-bytes-xxxxxxxxxxxxxxxxxxxx"} {
			m := &message.Message{Payload: payload[:n], ContentTopic: "/app/1/chat/proto", Timestamp: ts + int64(n), Meta: []byte("super-secret")}
			wire := m.Encode(nil)
			var c message.Counters
			h, id, crc := m.HashAndID(topic, wire, &c)
			if h != m.Hash(topic, nil) || id != sha256.Sum256(wire) {
				t.Errorf("payload %d, topic %q: HashAndID = %s, %x; want %s, %x", n, topic, h, id, m.Hash(topic, nil), sha256.Sum256(wire))
			}
			if want := crc32.Checksum(wire, crc32.MakeTable(crc32.Castagnoli)); crc != want {
				t.Errorf("payload %d, topic %q: CRC-32C %#x, want %#x", n, topic, crc, want)
			}
			s := c.Snapshot()
			if s.Hashes != 1 || s.HashedBytes != uint64(len(topic)+n+len(m.ContentTopic)+len(m.Meta)+8) {
				t.Errorf("payload %d: counters %+v, want 1 hash of the hash's input", n, s)
			}
		}
	}
	m := &message.Message{Payload: payload[:65_000], ContentTopic: "/app/1/chat/proto"}
	wire := m.Encode(nil)
	if a := testing.AllocsPerRun(100, func() { m.HashAndID("/waku/2/rs/0/0", wire, nil) }); a != 0 && !raceEnabled {
		t.Errorf("HashAndID allocates %v objects, want 0", a)
	}
}

// TestEnvelopeHashWithID: an envelope not hashed yet computes its hash,
// message id and wire CRC-32C in one pass (one hash counted) and keeps
// the id and the CRC; one whose hash is known (asked by Hash first, or
// given) keeps no id, and HashWithID then hashes nothing more. Concurrent
// callers of HashWithID, Hash, MessageID and WireCRC see one result (run
// with -race).
func TestEnvelopeHashWithID(t *testing.T) {
	const topic = "/waku/2/rs/0/0"
	m := &message.Message{Payload: bytes.Repeat([]byte("courier "), 8192), ContentTopic: "/app/1/chat/proto", Timestamp: 1_700_000_000_000_000_000}
	wire := m.Encode(nil)
	wantCRC := crc32.Checksum(wire, crc32.MakeTable(crc32.Castagnoli))

	var c message.Counters
	env := message.NewEnvelope(m, topic, wire, &c)
	if _, ok := env.MessageID(); ok {
		t.Fatal("a new envelope has a message id")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h message.Hash
			if i%2 == 0 {
				h = env.HashWithID()
			} else {
				h = env.Hash()
			}
			if h != m.Hash(topic, nil) {
				t.Errorf("caller %d: hash %s, want %s", i, h, m.Hash(topic, nil))
			}
			env.MessageID()
			env.WireCRC()
		}()
	}
	wg.Wait()
	if s := c.Snapshot(); s.Hashes != 1 {
		t.Errorf("%d hashes counted, want 1", s.Hashes)
	}
	// Which caller came first decides whether the id was kept; a kept one
	// is right.
	if id, ok := env.MessageID(); ok && id != sha256.Sum256(wire) {
		t.Errorf("message id %x, want sha256 of the wire", id)
	}

	c = message.Counters{}
	env = message.NewEnvelope(m, topic, wire, &c)
	if env.HashWithID() != m.Hash(topic, nil) {
		t.Fatal("HashWithID: wrong hash")
	}
	id, ok := env.MessageID()
	crc, crcOK := env.WireCRC()
	if !ok || id != sha256.Sum256(wire) || !crcOK || crc != wantCRC {
		t.Errorf("after HashWithID: id %x (%v), CRC-32C %#x (%v); want sha256 and %#x of the wire", id, ok, crc, crcOK, wantCRC)
	}
	env.Hash()
	env.HashWithID()
	if s := c.Snapshot(); s.Hashes != 1 {
		t.Errorf("%d hashes counted after HashWithID, Hash and HashWithID, want 1", s.Hashes)
	}

	env = message.NewEnvelope(m, topic, wire, nil)
	env.Hash()
	env.HashWithID()
	if _, ok := env.MessageID(); ok {
		t.Error("an envelope hashed by Hash first got a message id from HashWithID")
	}
	if _, ok := env.WireCRC(); ok {
		t.Error("an envelope hashed by Hash first got a CRC-32C from HashWithID")
	}
	given := message.NewEnvelopeWithHash(m, topic, wire, m.Hash(topic, nil))
	given.HashWithID()
	if _, ok := given.MessageID(); ok {
		t.Error("an envelope made with its hash got a message id from HashWithID")
	}

	// Under PairMin bytes of wire, HashWithID hashes as Hash does.
	small := &message.Message{Payload: make([]byte, 1000), ContentTopic: "/app/1/chat/proto", Timestamp: 7}
	smallWire := small.Encode(nil)
	if len(smallWire) >= message.PairMin {
		t.Fatalf("a %d-byte wire is not under PairMin", len(smallWire))
	}
	c = message.Counters{}
	env = message.NewEnvelope(small, topic, smallWire, &c)
	if env.HashWithID() != small.Hash(topic, nil) {
		t.Error("HashWithID of a short wire: wrong hash")
	}
	_, idOK := env.MessageID()
	_, crcOK = env.WireCRC()
	if s := c.Snapshot(); idOK || crcOK || s.Hashes != 1 {
		t.Errorf("HashWithID of a %d-byte wire: message id kept %v, CRC-32C kept %v, %d hashes; want neither kept and 1 hash", len(smallWire), idOK, crcOK, s.Hashes)
	}
}
