package message

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sync"

	"github.com/couriernet/courier/message/internal/sha256x2"
)

// Hash is the deterministic message hash of 14/WAKU2-MESSAGE: 32 bytes of
// SHA-256. It is the key of the archive and of store v3.
type Hash [32]byte

// String returns the hash as 64 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// hasher is a pooled SHA-256 state with scratch space, so that hashing
// allocates nothing: the timestamp is written into ts, the sum into buf.
type hasher struct {
	h   hash.Hash
	ts  [8]byte
	buf [sha256.Size]byte
}

var hasherPool = sync.Pool{New: func() any { return &hasher{h: sha256.New()} }}

// Hash computes the deterministic message hash of m published on
// pubsubTopic:
//
//	sha256(pubsub_topic || payload || content_topic || meta || timestamp)
//
// with no separators, the timestamp always 8 bytes big-endian and absent
// meaning 8 zero bytes, as nwaku (waku_core/message/digest.nim) and go-waku
// (pb/utils.go) compute it; the spec text would leave it out. version,
// ephemeral and rate_limit_proof are not hashed. Hash counts one hash and the
// bytes it fed in c (nil: not counted).
func (m *Message) Hash(pubsubTopic string, c *Counters) Hash {
	s := hasherPool.Get().(*hasher)
	s.h.Reset()
	in := m.hashInput(pubsubTopic, &s.ts)
	for _, p := range in {
		s.h.Write(p)
	}
	out := Hash(s.h.Sum(s.buf[:0]))
	hasherPool.Put(s)
	countHash(c, &in)
	return out
}

// hashInput returns the deterministic hash's input in order (see Hash),
// the timestamp's 8 bytes written into ts.
func (m *Message) hashInput(pubsubTopic string, ts *[8]byte) [5][]byte {
	binary.BigEndian.PutUint64(ts[:], uint64(m.Timestamp))
	return [5][]byte{aliasBytes(pubsubTopic), m.Payload, aliasBytes(m.ContentTopic), m.Meta, ts[:]}
}

// countHash counts in c (nil: not counted) one deterministic hash of in.
func countHash(c *Counters, in *[5][]byte) {
	n := 0
	for _, p := range in {
		n += len(p)
	}
	c = c.orDiscard()
	c.Hashes.Add(1)
	c.HashedBytes.Add(uint64(n))
}

// HashAndID computes m's deterministic hash on pubsubTopic, as Hash does,
// sha256(wire), gossipsub's message id of the encoded WakuMessage wire
// (11/WAKU2-RELAY; nwaku waku_relay/message_id.nim), and wire's CRC-32C
// (Castagnoli, as hash/crc32 computes it; the checksum the embedded
// archive keeps with each record), in one pass over the hash's input and
// wire (sha256x2): for a payload of 65 kB, the CRC-32C included, about
// 1.2 times the CPU of one of the hashes, where the two hashes and the
// CRC-32C apart take about 2.1 (package sha256x2 gives the figures). wire
// is only read. It counts one
// hash and the bytes it fed in c (nil: not counted), as Hash does; the
// message id is the caller's to count.
func (m *Message) HashAndID(pubsubTopic string, wire []byte, c *Counters) (h Hash, id [sha256.Size]byte, wireCRC uint32) {
	s := pairPool.Get().(*pairInput)
	s.pieces = m.hashInput(pubsubTopic, &s.ts)
	id, h, wireCRC = sha256x2.Sum(wire, s.pieces[:])
	countHash(c, &s.pieces)
	s.pieces = [5][]byte{}
	pairPool.Put(s)
	return h, id, wireCRC
}

// pairInput is HashAndID's pooled scratch: the hash's inputs in order and
// the timestamp's 8 bytes.
type pairInput struct {
	pieces [5][]byte
	ts     [8]byte
}

var pairPool = sync.Pool{New: func() any { return new(pairInput) }}
