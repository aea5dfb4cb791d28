package rln

import (
	"encoding/binary"
	"hash"
	"sync"

	"golang.org/x/crypto/sha3"

	"github.com/couriernet/courier/message"
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

// DefaultRLNIdentifier is Waku's: ASCII "rln/waku-rln-relay/v2.0.0" zero
// padded to 32 bytes (nwaku DefaultRlnIdentifier, constants.nim).
var DefaultRLNIdentifier = RLNIdentifier{
	'r', 'l', 'n', '/', 'w', 'a', 'k', 'u', '-', 'r', 'l', 'n', '-', 'r', 'e', 'l', 'a', 'y',
	'/', 'v', '2', '.', '0', '.', '0',
}

var keccakPool = sync.Pool{New: func() any { return sha3.NewLegacyKeccak256() }}

// keccakToField hashes the concatenation of parts with Keccak-256 and reads
// the digest as a little-endian integer reduced mod r (zerokit
// hash_to_field_le, rln/src/hashers.rs).
func keccakToField(parts ...[]byte) Field {
	d := Field(keccakSum(parts...))
	e := d.reduced()
	return fieldOf(&e)
}

// keccakSum returns the Keccak-256 digest (Ethereum's, not SHA3-256) of
// the concatenation of parts.
func keccakSum(parts ...[]byte) (d [32]byte) {
	h := keccakPool.Get().(hash.Hash)
	h.Reset()
	for _, p := range parts {
		h.Write(p)
	}
	h.Sum(d[:0])
	keccakPool.Put(h)
	return d
}

// HashToField is zerokit's hash_to_field_le: Keccak-256 of data, read
// little-endian and reduced mod r. data is only read.
func HashToField(data []byte) Field { return keccakToField(data) }

// SignalHash returns x, the signal's hash a proof commits to: HashToField
// of payload ‖ content topic (UTF-8) ‖ timestamp (uint64 little-endian, the
// nanoseconds cast to unsigned), nwaku's toRLNSignal (rln_relay.nim). It
// reads m and does not keep it.
func SignalHash(m *message.Message) Field {
	var ts [8]byte
	binary.LittleEndian.PutUint64(ts[:], uint64(m.Timestamp))
	return keccakToField(m.Payload, aliasBytes(m.ContentTopic), ts[:])
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
