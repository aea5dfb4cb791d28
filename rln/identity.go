package rln

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"golang.org/x/crypto/chacha20"
)

// IdentityCredential is an RLN membership identity (zerokit
// extended_keygen, rln/src/protocol.rs; nwaku IdentityCredential,
// waku_keystore): the random Trapdoor and Nullifier, SecretHash =
// Poseidon(Trapdoor, Nullifier), the secret the circuit takes as
// identitySecret, and Commitment = Poseidon(SecretHash), which is
// registered on chain. Trapdoor, Nullifier and SecretHash are secrets.
type IdentityCredential struct {
	Trapdoor   Field
	Nullifier  Field
	SecretHash Field
	Commitment Field
}

// ErrIdentity is wrapped by the errors of credential generation and
// checking.
var ErrIdentity = errors.New("rln: invalid identity credential")

// NewIdentityCredential draws Trapdoor and Nullifier uniformly from the
// scalar field with randomness from rnd (nil means crypto/rand) and derives
// the rest, as zerokit's extended_keygen does.
func NewIdentityCredential(rnd io.Reader) (*IdentityCredential, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var t, n fr.Element
	for _, e := range []*fr.Element{&t, &n} {
		if err := sampleArkworks(rnd, e); err != nil {
			return nil, fmt.Errorf("%w: randomness: %v", ErrIdentity, err)
		}
	}
	return identityFrom(t, n), nil
}

// SeededIdentityCredential derives a credential from seed exactly as
// zerokit's extended_seeded_keygen (rln/src/protocol.rs) does: ChaCha20
// (rand_chacha's ChaCha20Rng, key Keccak-256(seed), nonce and counter 0)
// feeds arkworks' uniform sampling of Trapdoor, then Nullifier. The same
// seed gives the same credential as zerokit's
// generateSeededExtendedMembershipKey. seed is only read.
func SeededIdentityCredential(seed []byte) *IdentityCredential {
	key := keccakSum(seed)
	var nonce [chacha20.NonceSize]byte
	c, err := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	if err != nil {
		panic("rln: chacha20: " + err.Error()) // key and nonce sizes are fixed
	}
	rng := &keystream{c: c}
	var t, n fr.Element
	_ = sampleArkworks(rng, &t) // the keystream never fails
	_ = sampleArkworks(rng, &n)
	return identityFrom(t, n)
}

func identityFrom(t, n fr.Element) *IdentityCredential {
	s := poseidonHash(t, n)
	c := poseidonHash(s)
	return &IdentityCredential{
		Trapdoor: fieldOf(&t), Nullifier: fieldOf(&n),
		SecretHash: fieldOf(&s), Commitment: fieldOf(&c),
	}
}

// Check verifies that SecretHash and Commitment follow from Trapdoor and
// Nullifier and that all four are canonical (for a credential read from a
// keystore). Errors wrap ErrIdentity.
func (c *IdentityCredential) Check() error {
	t, ok1 := c.Trapdoor.element()
	n, ok2 := c.Nullifier.element()
	if !ok1 || !ok2 || !c.SecretHash.IsCanonical() || !c.Commitment.IsCanonical() {
		return fmt.Errorf("%w: a value is not below the field modulus", ErrIdentity)
	}
	want := identityFrom(t, n)
	if want.SecretHash != c.SecretHash || want.Commitment != c.Commitment {
		return fmt.Errorf("%w: secret hash or commitment does not match trapdoor and nullifier", ErrIdentity)
	}
	return nil
}

// IdentityCommitment returns Poseidon(secretHash), the commitment of an
// identity secret. secretHash must be canonical (ErrIdentity otherwise).
func IdentityCommitment(secretHash Field) (Field, error) {
	s, ok := secretHash.element()
	if !ok {
		return Field{}, fmt.Errorf("%w: secret hash not below the field modulus", ErrIdentity)
	}
	c := poseidonHash(s)
	return fieldOf(&c), nil
}

// RateCommitment returns the membership's leaf in the tree:
// Poseidon(commitment, userMessageLimit) (nwaku toLeaf, rln/wrappers.nim;
// the circuit's rateCommitment). commitment must be canonical
// (ErrIdentity otherwise).
func RateCommitment(commitment Field, userMessageLimit uint64) (Field, error) {
	c, ok := commitment.element()
	if !ok {
		return Field{}, fmt.Errorf("%w: commitment not below the field modulus", ErrIdentity)
	}
	var l fr.Element
	l.SetUint64(userMessageLimit)
	h := poseidonHash(c, l)
	return fieldOf(&h), nil
}

// RecoverSecret returns the identity secret (SecretHash) of a member who
// sent two messages with the same nullifier, that is with the same message
// id in one epoch: from y = secret + x·a1 at two points x1 ≠ x2 (zerokit
// compute_id_secret). The shares come from the two RateLimitProofs
// (ShareX, ShareY). Errors wrap ErrIdentity: equal x (the same signal) or
// non-canonical shares.
func RecoverSecret(x1, y1, x2, y2 Field) (Field, error) {
	var v [4]fr.Element
	for i, f := range []*Field{&x1, &y1, &x2, &y2} {
		e, ok := f.element()
		if !ok {
			return Field{}, fmt.Errorf("%w: share not below the field modulus", ErrIdentity)
		}
		v[i] = e
	}
	var dx, dy, a1, s fr.Element
	dx.Sub(&v[0], &v[2])
	if dx.IsZero() {
		return Field{}, fmt.Errorf("%w: both shares have the same x", ErrIdentity)
	}
	dy.Sub(&v[1], &v[3])
	a1.Div(&dy, &dx)
	s.Mul(&v[0], &a1)
	s.Sub(&v[1], &s)
	return fieldOf(&s), nil
}

// sampleArkworks draws a field element as arkworks' UniformRand for Fp
// does: four u64 limbs from the generator, the top two bits of the last
// cleared, retried until the integer is below r, and the integer taken as
// the Montgomery form of the result (ark-ff Fp's Distribution<Standard>).
func sampleArkworks(rnd io.Reader, e *fr.Element) error {
	var buf [32]byte
	for {
		if _, err := io.ReadFull(rnd, buf[:]); err != nil {
			return err
		}
		var limbs [4]uint64
		for i := range limbs {
			limbs[i] = binary.LittleEndian.Uint64(buf[8*i:])
		}
		limbs[3] &= 1<<62 - 1
		if lessThanModulus(limbs) {
			*e = fr.Element(limbs) // gnark's limbs are Montgomery forms, as arkworks'
			return nil
		}
	}
}

var modulusLimbs = func() (l [4]uint64) {
	be := fr.Modulus().FillBytes(make([]byte, 32))
	for i := range l {
		l[i] = binary.BigEndian.Uint64(be[32-8*(i+1):])
	}
	return l
}()

func lessThanModulus(z [4]uint64) bool {
	for i := 3; i >= 0; i-- {
		if z[i] != modulusLimbs[i] {
			return z[i] < modulusLimbs[i]
		}
	}
	return false
}

// keystream is rand_chacha's ChaCha20Rng as an io.Reader: the ChaCha20
// keystream (RFC 8439 with a zero nonce, which for the first 2^32 blocks
// equals rand_chacha's 64-bit counter with stream 0). rand_core reads a
// u64 as two consecutive 32-bit words, low first, which is the keystream's
// byte order.
type keystream struct{ c *chacha20.Cipher }

func (k *keystream) Read(p []byte) (int, error) {
	clear(p)
	k.c.XORKeyStream(p, p)
	return len(p), nil
}
