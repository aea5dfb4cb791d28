package message

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sync"
)

// Hash is the deterministic message hash of 14/WAKU2-MESSAGE: 32 bytes of
// SHA-256. It is the key of the archive and of store v3.
type Hash [32]byte

// String returns the hash as 64 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

var sha256Pool = sync.Pool{New: func() any { return sha256.New() }}

// Hash computes the deterministic message hash of m published on
// pubsubTopic:
//
//	sha256(pubsub_topic || payload || content_topic || meta || timestamp)
//
// with no separators, the timestamp always 8 bytes big-endian and absent
// meaning 8 zero bytes, as nwaku (waku_core/message/digest.nim) and go-waku
// (pb/utils.go) compute it; the spec text would leave it out. version,
// ephemeral and rate_limit_proof are not hashed. Hash counts one hash and the
// bytes it fed in c (nil: Default).
func (m *Message) Hash(pubsubTopic string, c *Counters) Hash {
	c = c.orDefault()
	h := sha256Pool.Get().(hash.Hash)
	h.Reset()
	h.Write(aliasBytes(pubsubTopic))
	h.Write(m.Payload)
	h.Write(aliasBytes(m.ContentTopic))
	h.Write(m.Meta)
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(m.Timestamp))
	h.Write(ts[:])
	var out Hash
	h.Sum(out[:0])
	sha256Pool.Put(h)
	c.Hashes.Add(1)
	c.HashedBytes.Add(uint64(len(pubsubTopic) + len(m.Payload) + len(m.ContentTopic) + len(m.Meta) + 8))
	return out
}
