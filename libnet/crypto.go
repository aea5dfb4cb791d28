package libnet

import (
	"bytes"
	"crypto/ed25519"
	"hash"

	"golang.org/x/crypto/blake2b"
)

// Signature layout (lib-net crypto/src/lib.rs
// ShardusCrypto::sign and verify): the signed bytes are hashed with keyed
// BLAKE2b-256 (libsodium generichash, 32-byte output) whose key is the
// hex-decoded hashKey; the signature is sodium crypto_sign in combined mode
// over that hash, i.e. the 64-byte Ed25519 signature followed by the
// 32-byte hash; the owner is the 32-byte public key.
const (
	hashSize      = 32
	signatureSize = ed25519.SignatureSize + hashSize // 96
)

// signer hashes, signs and verifies frames. It is safe for concurrent use.
type signer struct {
	hashKey []byte
	priv    ed25519.PrivateKey // nil: verify only
	pub     []byte
}

func newSigner(hashKey []byte, priv ed25519.PrivateKey) *signer {
	s := &signer{hashKey: hashKey, priv: priv}
	if priv != nil {
		s.pub = priv.Public().(ed25519.PublicKey)
	}
	return s
}

// sum returns the keyed BLAKE2b-256 of the concatenated parts.
func (s *signer) sum(parts ...[]byte) [hashSize]byte {
	h, err := blake2b.New256(s.hashKey)
	if err != nil { // key length is validated by Config.validate
		panic("libnet: hash key: " + err.Error())
	}
	return finish(h, parts)
}

func finish(h hash.Hash, parts [][]byte) (out [hashSize]byte) {
	for _, p := range parts {
		h.Write(p)
	}
	h.Sum(out[:0])
	return out
}

// sign returns the 96-byte combined signature of parts.
func (s *signer) sign(parts ...[]byte) []byte {
	sum := s.sum(parts...)
	sig := make([]byte, 0, signatureSize)
	sig = append(sig, ed25519.Sign(s.priv, sum[:])...)
	return append(sig, sum[:]...)
}

// verify checks a combined signature by owner over signed; it returns the
// reason of a failure, or "".
func (s *signer) verify(owner, sig, signed []byte) string {
	switch {
	case len(owner) != ed25519.PublicKeySize:
		return "owner is not a 32-byte key"
	case len(sig) != signatureSize:
		return "signature is not 96 bytes"
	case !ed25519.Verify(owner, sig[ed25519.SignatureSize:], sig[:ed25519.SignatureSize]):
		return "signature does not open"
	}
	sum := s.sum(signed)
	if !bytes.Equal(sum[:], sig[ed25519.SignatureSize:]) {
		return "hash does not match the frame"
	}
	return ""
}
