package keystore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/scrypt"
	keccak "golang.org/x/crypto/sha3"
)

// Key derivation parameters, as nwaku's keyfile.nim writes them.
const (
	// DefaultIterations is nwaku's PBKDF2 work factor (Pbkdf2WorkFactor),
	// also used when a file's "c" is 0 or missing.
	DefaultIterations = 1_000_000
	// MaxIterations bounds the PBKDF2 work factor this package accepts, so
	// that a hostile file cannot stall the node (nwaku sets no bound).
	MaxIterations = 100_000_000
	// maxScryptMemory bounds scrypt's 128·N·r bytes.
	maxScryptMemory = 256 << 20

	saltSize   = 16
	dkLen      = 32 // nwaku's DKLen: the derived key is 32 bytes whatever "dklen" says
	maxDKLen   = 128
	scryptWork = 262_144 // nwaku's ScryptWorkFactor, for "n" 0
)

// entryJSON is one credential's Web3 Secret Storage entry (version 3
// without "id" and "version" values, as nwaku's createKeyFileJson writes
// it: keyfile.nim KeystoreEntry, whose id and version stay empty).
type entryJSON struct {
	Crypto  *cryptoJSON `json:"crypto"`
	ID      string      `json:"id"`
	Version string      `json:"version"`
}

type cryptoJSON struct {
	Cipher       string          `json:"cipher"`
	CipherParams *ivJSON         `json:"cipherparams"`
	CipherText   string          `json:"ciphertext"`
	KDF          string          `json:"kdf"`
	KDFParams    json.RawMessage `json:"kdfparams"`
	MAC          string          `json:"mac"`
}

type ivJSON struct {
	IV string `json:"iv"`
}

type pbkdf2JSON struct {
	DKLen int    `json:"dklen"`
	C     int    `json:"c"`
	PRF   string `json:"prf"`
	Salt  string `json:"salt"`
}

type scryptJSON struct {
	DKLen int    `json:"dklen"`
	N     int    `json:"n"`
	R     int    `json:"r"`
	P     int    `json:"p"`
	Salt  string `json:"salt"`
}

// sealed is a parsed entry, ready to decrypt.
type sealed struct {
	iv, ciphertext, mac []byte
	derive              func(password string) ([]byte, error)
}

// parseEntry checks an entry in nwaku's order (keyfile.nim decodeCrypto,
// decodePbkdf2Params, decodeScryptParams) without running the key
// derivation. Errors wrap ErrMalformed or ErrUnsupported.
func parseEntry(raw []byte) (*sealed, error) {
	var e entryJSON
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%w: credential entry: %v", ErrMalformed, err)
	}
	c := e.Crypto
	if c == nil || c.KDF == "" {
		return nil, fmt.Errorf("%w: credential entry has no crypto.kdf", ErrMalformed)
	}
	if c.KDF != "pbkdf2" && c.KDF != "scrypt" {
		return nil, fmt.Errorf("%w: key derivation %q", ErrUnsupported, c.KDF)
	}
	if c.CipherParams == nil {
		return nil, fmt.Errorf("%w: credential entry has no cipherparams", ErrMalformed)
	}
	if !strings.EqualFold(c.Cipher, "aes-128-ctr") {
		return nil, fmt.Errorf("%w: cipher %q", ErrUnsupported, c.Cipher)
	}
	s := &sealed{}
	var err error
	if s.ciphertext, err = hexField("ciphertext", c.CipherText); err != nil {
		return nil, err
	}
	if s.mac, err = hexField("mac", c.MAC); err != nil {
		return nil, err
	}
	if s.iv, err = hexField("cipherparams.iv", c.CipherParams.IV); err != nil {
		return nil, err
	}
	if len(s.iv) != aes.BlockSize {
		return nil, fmt.Errorf("%w: iv of %d bytes, want %d", ErrMalformed, len(s.iv), aes.BlockSize)
	}
	if len(c.KDFParams) == 0 || string(c.KDFParams) == "null" {
		return nil, fmt.Errorf("%w: credential entry has no kdfparams", ErrMalformed)
	}
	if c.KDF == "pbkdf2" {
		s.derive, err = pbkdf2Params(c.KDFParams)
	} else {
		s.derive, err = scryptParams(c.KDFParams)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func pbkdf2Params(raw json.RawMessage) (func(string) ([]byte, error), error) {
	var p pbkdf2JSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: kdfparams: %v", ErrMalformed, err)
	}
	salt, err := hexField("kdfparams.salt", p.Salt)
	if err != nil {
		return nil, err
	}
	h := prfHash(p.PRF)
	if h == nil {
		return nil, fmt.Errorf("%w: prf %q", ErrUnsupported, p.PRF)
	}
	if p.DKLen <= 0 || p.DKLen > maxDKLen {
		return nil, fmt.Errorf("%w: dklen %d", ErrMalformed, p.DKLen)
	}
	c := p.C
	if c == 0 {
		c = DefaultIterations
	}
	if c < 0 || c > MaxIterations {
		return nil, fmt.Errorf("%w: pbkdf2 work factor %d (at most %d)", ErrUnsupported, p.C, MaxIterations)
	}
	return func(password string) ([]byte, error) {
		return pbkdf2.Key(h, password, salt, c, dkLen)
	}, nil
}

func scryptParams(raw json.RawMessage) (func(string) ([]byte, error), error) {
	var p scryptJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: kdfparams: %v", ErrMalformed, err)
	}
	salt, err := hexField("kdfparams.salt", p.Salt)
	if err != nil {
		return nil, err
	}
	if p.DKLen <= 0 || p.DKLen > maxDKLen {
		return nil, fmt.Errorf("%w: dklen %d", ErrMalformed, p.DKLen)
	}
	n := p.N
	if n == 0 {
		n = scryptWork
	}
	if p.R <= 0 || p.P <= 0 || p.R > 1<<20 || p.P > 1<<20 || p.R*p.P >= 1<<30 || n < 2 || n&(n-1) != 0 || n > maxScryptMemory/128/p.R {
		return nil, fmt.Errorf("%w: scrypt parameters n=%d r=%d p=%d", ErrUnsupported, p.N, p.R, p.P)
	}
	return func(password string) ([]byte, error) {
		return scrypt.Key([]byte(password), salt, n, p.R, p.P, dkLen)
	}, nil
}

// prfHash returns the hash of a PBKDF2 "prf" as nwaku's getPrfHash maps
// it (hmac-sha224 … hmac-sha3_512), or nil for one this package lacks
// (hmac-keccak224 and hmac-keccak384).
func prfHash(prf string) func() hash.Hash {
	name, ok := strings.CutPrefix(strings.ToLower(prf), "hmac-")
	if !ok {
		return nil
	}
	return map[string]func() hash.Hash{
		"sha224":    sha256.New224,
		"sha256":    sha256.New,
		"sha384":    sha512.New384,
		"sha512":    sha512.New,
		"keccak256": keccak.NewLegacyKeccak256,
		"keccak512": keccak.NewLegacyKeccak512,
		"sha3_224":  func() hash.Hash { return sha3.New224() },
		"sha3_256":  func() hash.Hash { return sha3.New256() },
		"sha3_384":  func() hash.Hash { return sha3.New384() },
		"sha3_512":  func() hash.Hash { return sha3.New512() },
	}[name]
}

func hexField(name, s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("%w: %s is empty or not hex", ErrMalformed, name)
	}
	return b, nil
}

// open derives the key from password, checks the MAC
// (keccak256(dk[16:32] ‖ ciphertext)) and decrypts. A MAC mismatch is
// ErrWrongPassword.
func (s *sealed) open(password string) ([]byte, error) {
	dk, err := s.derive(password)
	if err != nil {
		return nil, fmt.Errorf("%w: key derivation: %v", ErrUnsupported, err)
	}
	if subtle.ConstantTimeCompare(mac(dk, s.ciphertext), s.mac) != 1 {
		return nil, ErrWrongPassword
	}
	return ctr(dk[:16], s.iv, s.ciphertext), nil
}

func mac(dk, ciphertext []byte) []byte {
	h := keccak.NewLegacyKeccak256()
	h.Write(dk[16:32])
	h.Write(ciphertext)
	return h.Sum(nil)
}

func ctr(key, iv, in []byte) []byte {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // key is always 16 bytes
	}
	out := make([]byte, len(in))
	cipher.NewCTR(b, iv).XORKeyStream(out, in)
	return out
}

// seal encrypts secret under password as nwaku's createKeyFileJson does:
// a random 16-byte salt and IV, PBKDF2-HMAC-SHA256 with iterations (0:
// DefaultIterations) to a 32-byte key, AES-128-CTR under its first half
// and the MAC over its second half and the ciphertext. It returns the
// entry's compact JSON.
func seal(secret []byte, password string, iterations int) ([]byte, error) {
	if iterations == 0 {
		iterations = DefaultIterations
	}
	if iterations < 0 || iterations > MaxIterations {
		return nil, fmt.Errorf("%w: pbkdf2 work factor %d", ErrUnsupported, iterations)
	}
	var salt, iv [saltSize]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(iv[:]); err != nil {
		return nil, err
	}
	dk, err := pbkdf2.Key(sha256.New, password, salt[:], iterations, dkLen)
	if err != nil {
		return nil, err
	}
	ct := ctr(dk[:16], iv[:], secret)
	params, err := marshal(struct {
		DKLen int    `json:"dklen"`
		C     int    `json:"c"`
		PRF   string `json:"prf"`
		Salt  string `json:"salt"`
	}{dkLen, iterations, "hmac-sha256", hex.EncodeToString(salt[:])})
	if err != nil {
		return nil, err
	}
	return marshal(entryJSON{Crypto: &cryptoJSON{
		Cipher:       "aes-128-ctr",
		CipherParams: &ivJSON{IV: hex.EncodeToString(iv[:])},
		CipherText:   hex.EncodeToString(ct),
		KDF:          "pbkdf2",
		KDFParams:    params,
		MAC:          hex.EncodeToString(mac(dk, ct)),
	}})
}
