package rln

import (
	"encoding/binary"
	"hash"
	"math/bits"
	"sync"
	"unsafe"

	"golang.org/x/crypto/sha3"
)

// Epoch is an RLN epoch as the RateLimitProof carries it (field 3): the
// epoch number (Unix seconds divided by the epoch length) as a uint64
// little-endian, zero padded to 32 bytes (nwaku toEpoch,
// conversion_utils.nim). Epochs are compared byte for byte.
type Epoch [32]byte

// EpochFromUint64 returns epoch number n in wire form.
func EpochFromUint64(n uint64) Epoch {
	var e Epoch
	binary.LittleEndian.PutUint64(e[:], n)
	return e
}

// Uint64 returns the epoch number: the first 8 bytes, little-endian, as
// nwaku's fromEpoch reads it (the other 24 bytes are ignored).
func (e Epoch) Uint64() uint64 { return binary.LittleEndian.Uint64(e[:8]) }

// EpochAt returns the epoch of a message timestamp (Unix nanoseconds) for
// epochs of epochSec seconds, computed in float64 exactly as nwaku's
// calcEpoch does on msg.timestamp.float64 / 1e9 (rln_relay.nim), so that
// both agree on timestamps that sit next to an epoch boundary. A negative
// timestamp or an epochSec of 0 gives epoch 0.
func EpochAt(timestampNs int64, epochSec uint64) Epoch {
	if timestampNs < 0 || epochSec == 0 {
		return Epoch{}
	}
	seconds := float64(timestampNs) / 1e9
	return EpochFromUint64(uint64(seconds / float64(epochSec)))
}

// RLNIdentifier names the RLN application (field 7 of a RateLimitProof):
// 32 bytes, hashed with the epoch into the external nullifier.
type RLNIdentifier [32]byte

// WakuRLNIdentifier is the text of Waku's RLN identifier (nwaku
// DefaultRlnIdentifier, constants.nim).
const WakuRLNIdentifier = "rln/waku-rln-relay/v2.0.0"

// DefaultRLNIdentifier returns Waku's identifier: WakuRLNIdentifier in
// ASCII, zero padded to 32 bytes.
func DefaultRLNIdentifier() RLNIdentifier {
	var id RLNIdentifier
	copy(id[:], WakuRLNIdentifier)
	return id
}

// keccak is a pooled Keccak-256 state with its scratch buffers, so that
// hashing allocates nothing.
type keccak struct {
	h   hash.Hash
	ts  [8]byte
	sum [32]byte
}

var keccakPool = sync.Pool{New: func() any { return &keccak{h: sha3.NewLegacyKeccak256()} }}

// keccakToField hashes data with Keccak-256 and reads the digest as a
// little-endian integer reduced mod r (zerokit hash_to_field_le,
// rln/src/hashers.rs).
func keccakToField(data []byte) Field {
	k := keccakPool.Get().(*keccak)
	k.h.Reset()
	k.h.Write(data)
	f := k.finish()
	keccakPool.Put(k)
	return f
}

// finish reduces the digest of k's state into a field element.
func (k *keccak) finish() Field {
	k.h.Sum(k.sum[:0])
	return reduceDigest(&k.sum)
}

// keccakSum returns the Keccak-256 digest (Ethereum's, not SHA3-256) of b.
func keccakSum(b []byte) (d [32]byte) {
	k := keccakPool.Get().(*keccak)
	k.h.Reset()
	k.h.Write(b)
	k.h.Sum(k.sum[:0])
	d = k.sum
	keccakPool.Put(k)
	return d
}

// reduceDigest reads 32 bytes little-endian and reduces them mod r (at most
// five subtractions, since 2^256 < 6r).
func reduceDigest(d *[32]byte) Field {
	var z [4]uint64
	for i := range z {
		z[i] = binary.LittleEndian.Uint64(d[8*i:])
	}
	for !lessThanModulus(z) {
		var borrow uint64
		for i := range z {
			z[i], borrow = bits.Sub64(z[i], modulusLimbs[i], borrow)
		}
	}
	var f Field
	for i := range z {
		binary.LittleEndian.PutUint64(f[8*i:], z[i])
	}
	return f
}

// HashToField is zerokit's hash_to_field_le: Keccak-256 of data, read
// little-endian and reduced mod r. data is only read.
func HashToField(data []byte) Field { return keccakToField(data) }

// Signal is what a proof is bound to: a WakuMessage's payload, content
// topic and timestamp (nwaku toRLNSignal, rln_relay.nim). It points at the
// message's bytes, which it only reads.
type Signal struct {
	Payload      []byte
	ContentTopic string
	Timestamp    int64 // Unix nanoseconds, as in the WakuMessage
}

// Hash returns x, the signal's hash a proof commits to: HashToField of
// payload ‖ content topic (UTF-8) ‖ timestamp (uint64 little-endian, the
// nanoseconds cast to unsigned). It allocates nothing.
func (s Signal) Hash() Field {
	k := keccakPool.Get().(*keccak)
	k.h.Reset()
	k.h.Write(s.Payload)
	k.h.Write(unsafe.Slice(unsafe.StringData(s.ContentTopic), len(s.ContentTopic))) // read only
	binary.LittleEndian.PutUint64(k.ts[:], uint64(s.Timestamp))
	k.h.Write(k.ts[:])
	f := k.finish()
	keccakPool.Put(k)
	return f
}

// ExternalNullifier returns Poseidon(HashToField(epoch), HashToField(id)),
// the external nullifier a proof is made for (nwaku
// generateExternalNullifier, rln/wrappers.nim). The RateLimitProof does
// not carry it: the receiver computes it from the epoch and identifier.
func ExternalNullifier(epoch Epoch, id RLNIdentifier) Field {
	a, b := keccakToField(epoch[:]), keccakToField(id[:])
	ae, _ := a.element()
	be, _ := b.element()
	h := poseidonHash(ae, be)
	return fieldOf(&h)
}
