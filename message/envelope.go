package message

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/couriernet/courier/rln"
)

// Envelope is one message as a node carries it: the decoded Message, the
// pubsub topic it travels on, its deterministic hash, its encoded bytes
// and, with RLN relay, its verified RateLimitProof. An Envelope is
// immutable and is shared by pointer among all consumers. The hash is
// computed at most once, on the first call of Hash or HashWithID, so a
// publisher whose message nobody asks the hash of pays nothing for it.
type Envelope struct {
	msg         *Message
	pubsubTopic string
	wire        []byte
	counters    *Counters
	proof       *rln.RateLimitProof

	once sync.Once
	hash Hash
	// id is sha256(wire), valid once sums has hasID; sums holds wire's
	// CRC-32C in its low 32 bits and the flags hasCRC and hasID. Both are
	// set with the hash, by the constructor or in once, and sums is read
	// without once (WireCRC, MessageID), hence atomic: its store publishes
	// id.
	id   [sha256.Size]byte
	sums atomic.Uint64
}

const (
	hasCRC = 1 << 32
	hasID  = 1 << 33
)

// NewEnvelope binds msg, pubsubTopic and wire; the deterministic hash is
// computed (and counted in c) on the first call of Hash or HashWithID.
// wire must be the
// encoding msg was decoded from or encoded to; msg may alias it, so neither
// may be modified afterwards. The envelope keeps wire capped at its length
// (see Wire).
func NewEnvelope(msg *Message, pubsubTopic string, wire []byte, c *Counters) *Envelope {
	return &Envelope{msg: msg, pubsubTopic: pubsubTopic, wire: wire[:len(wire):len(wire)], counters: c}
}

// NewEnvelopeWithProof is NewEnvelope for a message whose RateLimitProof
// (field 21, 17/WAKU2-RLN-RELAY) has been decoded and checked once, by the
// RLN relay validator or by the prover that made it: the envelope carries
// proof so that no consumer decodes or verifies it again. proof must be
// the decoding of msg.RateLimitProof; neither may be modified afterwards.
func NewEnvelopeWithProof(msg *Message, pubsubTopic string, wire []byte, c *Counters, proof *rln.RateLimitProof) *Envelope {
	e := NewEnvelope(msg, pubsubTopic, wire, c)
	e.proof = proof
	return e
}

// NewEnvelopeWithHash is NewEnvelope for a message whose hash is already
// known, for example one read back from an archive. It never hashes.
func NewEnvelopeWithHash(msg *Message, pubsubTopic string, wire []byte, h Hash) *Envelope {
	e := &Envelope{msg: msg, pubsubTopic: pubsubTopic, wire: wire[:len(wire):len(wire)]}
	e.once.Do(func() { e.hash = h })
	return e
}

// NewEnvelopeWithHashAndProof is NewEnvelopeWithProof for a message whose
// hash and wire checksum are already known, computed with its message id
// (HashAndID): it never hashes. h must be msg's hash on pubsubTopic and
// wireCRC wire's CRC-32C (see WireCRC), which the embedded archive stores
// with the record as given: a wrong one makes the record unreadable
// (archive.ErrCorrupt on read), so a caller without it uses
// NewEnvelopeWithHash or NewEnvelopeWithProof. proof may be nil.
func NewEnvelopeWithHashAndProof(msg *Message, pubsubTopic string, wire []byte, proof *rln.RateLimitProof, h Hash, wireCRC uint32) *Envelope {
	e := NewEnvelopeWithHash(msg, pubsubTopic, wire, h)
	e.proof = proof
	e.sums.Store(hasCRC | uint64(wireCRC))
	return e
}

// Message returns the decoded message. It must not be modified.
func (e *Envelope) Message() *Message { return e.msg }

// PubsubTopic returns the pubsub topic the message travels on.
func (e *Envelope) PubsubTopic() string { return e.pubsubTopic }

// RateLimitProof returns the message's RateLimitProof as the RLN relay
// checked it (see NewEnvelopeWithProof), or nil when none was checked: RLN
// relay is off, or the envelope was made without it. It must not be
// modified.
func (e *Envelope) RateLimitProof() *rln.RateLimitProof { return e.proof }

// Hash returns the deterministic message hash, computing it on first use.
// It is safe for concurrent use.
func (e *Envelope) Hash() Hash {
	e.once.Do(func() { e.hash = e.msg.Hash(e.pubsubTopic, e.counters) })
	return e.hash
}

// PairMin is the smallest wire, in bytes, whose deterministic hash
// HashWithID computes with its message id, and the relay with a received
// message's: below it, pairing saves under a microsecond.
const PairMin = 2048

// HashWithID is Hash for an envelope about to be published: when the
// hash is not known yet and Wire is PairMin bytes or more, it is computed
// in one pass with sha256 of Wire, the relay's message id
// (11/WAKU2-RELAY), and Wire's CRC-32C (Message.HashAndID: for 65 kB
// about 1.2 times the CPU of the hash alone, where the two hashes and the
// CRC-32C apart take about 2.1; see package sha256x2), and the envelope
// keeps both for MessageID and WireCRC. It counts one hash in the
// envelope's counters, as Hash does. A shorter Wire is hashed as Hash
// does, with no id or CRC-32C kept. When the hash is known already it
// only returns it, and MessageID stays as it was. It is safe for
// concurrent use.
func (e *Envelope) HashWithID() Hash {
	if len(e.wire) < PairMin {
		return e.Hash()
	}
	e.once.Do(func() {
		h, id, crc := e.msg.HashAndID(e.pubsubTopic, e.wire, e.counters)
		e.hash, e.id = h, id
		e.sums.Store(hasID | hasCRC | uint64(crc))
	})
	return e.hash
}

// MessageID returns sha256 of Wire, gossipsub's message id of it, when
// HashWithID computed it with the hash; ok is false otherwise, and the
// relay hashes Wire itself.
func (e *Envelope) MessageID() (id [sha256.Size]byte, ok bool) {
	if e.sums.Load()&hasID == 0 {
		return id, false
	}
	return e.id, true
}

// WireCRC returns the CRC-32C of Wire (the Castagnoli polynomial, as
// hash/crc32 computes it) when it was computed with the hashes
// (NewEnvelopeWithHashAndProof, HashWithID); ok is false otherwise, and a
// consumer that needs it computes it.
func (e *Envelope) WireCRC() (crc uint32, ok bool) {
	s := e.sums.Load()
	return uint32(s), s&hasCRC != 0
}

// Wire returns the encoded WakuMessage (at most MaxSize bytes). The slice is
// shared with gossipsub's message cache and every consumer: read it, store
// it or write it, but never modify it or return it to a pool. Its len equals
// its cap, so an append copies.
func (e *Envelope) Wire() []byte { return e.wire }
