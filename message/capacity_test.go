package message_test

import (
	"bytes"
	"testing"

	"github.com/couriernet/courier/message"
)

// TestDecodedSlicesCapped: every slice Decode hands out has len == cap, so
// an append to it copies instead of overwriting the wire buffer (which
// gossipsub forwards and the archive stores); the Envelope's wire too.
func TestDecodedSlicesCapped(t *testing.T) {
	orig := &message.Message{Payload: []byte("payload"), ContentTopic: "/app/1/chat/proto", Timestamp: 7,
		Meta: []byte{1, 2}, RateLimitProof: []byte{3, 4, 5},
		Present: message.HasTimestamp | message.HasMeta | message.HasRateLimitProof}
	enc := orig.Encode(nil)
	// The wire sits in a larger buffer, as a network read leaves it.
	wire := append(make([]byte, 0, len(enc)+64), enc...)
	m, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCapped(t, m)
	m.Payload = append(m.Payload, 'X', 'X')
	m.Meta = append(m.Meta, 'X', 'X')
	m.RateLimitProof = append(m.RateLimitProof, 'X', 'X')
	if !bytes.Equal(wire, enc) {
		t.Fatal("an append to a decoded field changed the wire bytes")
	}
	again, err := message.Decode(wire, nil)
	if err != nil {
		t.Fatalf("decoding the wire again after the appends: %v", err)
	}
	if !again.Equal(orig) {
		t.Fatalf("decoded %+v, want %+v", again, orig)
	}
	env := message.NewEnvelope(again, "/waku/2/rs/0/0", wire, nil)
	if w := env.Wire(); len(w) != cap(w) {
		t.Fatalf("Envelope.Wire len %d cap %d", len(w), cap(w))
	}
	env = message.NewEnvelopeWithHash(again, "/waku/2/rs/0/0", wire, message.Hash{})
	if w := env.Wire(); len(w) != cap(w) {
		t.Fatalf("NewEnvelopeWithHash: Wire len %d cap %d", len(w), cap(w))
	}
	shared, _ := orig.EncodeShared(nil)
	checkCapped(t, shared)
}

// checkCapped fails unless every []byte of m has len == cap.
func checkCapped(t testing.TB, m *message.Message) {
	t.Helper()
	for name, b := range map[string][]byte{"Payload": m.Payload, "Meta": m.Meta, "RateLimitProof": m.RateLimitProof} {
		if len(b) != cap(b) {
			t.Fatalf("%s: len %d, cap %d", name, len(b), cap(b))
		}
	}
}
