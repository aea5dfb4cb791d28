// Package keystore reads and writes nwaku's RLN keystore: the JSON file at
// --rln-relay-cred-path that holds a node's membership credentials, each
// encrypted under the --rln-relay-cred-password as a Web3 Secret Storage
// (version 3) entry, keyed and laid out exactly as nwaku v0.38.1 does it
// (waku/waku_keystore: keystore.nim, keyfile.nim, protocol_types.nim,
// conversion_utils.nim, utils.nim), so that a keystore made by either node
// works in the other. RegisterAndSave does the job of nwaku's
// generateRlnKeystore: register a membership on chain and save it.
//
// The file is one JSON object, written compactly with a trailing newline:
//
//	{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef",
//	 "credentials":{"<KEY>":{"crypto":{"cipher":"aes-128-ctr",
//	   "cipherparams":{"iv":"<hex>"},"ciphertext":"<hex>","kdf":"pbkdf2",
//	   "kdfparams":{"dklen":32,"c":1000000,"prf":"hmac-sha256","salt":"<hex>"},
//	   "mac":"<hex>"},"id":"","version":""}},"version":"0.2"}
//
// KEY is the upper-case hex SHA-256 of chainId ‖ address ‖ treeIndex as
// strings (Key). The key derivation is PBKDF2-HMAC-SHA256 with a 16-byte
// salt to 32 bytes; AES-128-CTR uses its first 16 bytes with a 16-byte
// IV; the MAC is keccak256(dk[16:32] ‖ ciphertext). Reading also takes
// the other PRFs and scrypt that nwaku reads. The plaintext is the
// membership as compact JSON (Membership).
package keystore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// nwaku's RLN keystore application (waku_rln_relay/constants.nim
// RLNAppInfo).
const (
	Application   = "waku-rln-relay"
	AppIdentifier = "01234567890abcdef"
	Version       = "0.2"
)

// Errors. Each error of this package wraps one of them (the file errors of
// Load and Save also wrap the os error).
var (
	// ErrNotExist: no keystore file at the path.
	ErrNotExist = errors.New("keystore: file does not exist")
	// ErrMalformed: the file, a credential entry or a decrypted credential
	// is not what nwaku writes (bad JSON, a missing field, bad hex, a
	// field element not 32 bytes).
	ErrMalformed = errors.New("keystore: malformed")
	// ErrAppMismatch: the file belongs to another application or app
	// identifier.
	ErrAppMismatch = errors.New("keystore: application does not match")
	// ErrUnknownVersion: the file's version is not the one asked for.
	ErrUnknownVersion = errors.New("keystore: unknown version")
	// ErrCredentialNotFound: no credential matches (nwaku's
	// KeystoreCredentialNotFoundError).
	ErrCredentialNotFound = errors.New("keystore: credential not found")
	// ErrWrongPassword: the MAC does not match, which a wrong password
	// causes.
	ErrWrongPassword = errors.New("keystore: wrong password")
	// ErrUnsupported: a cipher, key derivation or parameter this package
	// does not implement or refuses (see MaxIterations).
	ErrUnsupported = errors.New("keystore: unsupported")
)

// AppInfo names the application a keystore file belongs to.
type AppInfo struct {
	// Application is the application's name ("waku-rln-relay").
	Application string
	// AppIdentifier is its identifier ("01234567890abcdef").
	AppIdentifier string
	// Version is the keystore format's version ("0.2").
	Version string
}

// RLN returns the AppInfo of nwaku's RLN keystore.
func RLN() AppInfo {
	return AppInfo{Application: Application, AppIdentifier: AppIdentifier, Version: Version}
}

// Keystore is a keystore file in memory: its application and its
// credentials, still encrypted, in file order. It is not safe for
// concurrent use.
type Keystore struct {
	// App is the application the keystore belongs to.
	App     AppInfo
	entries []entry
}

type entry struct {
	key string
	raw []byte // compact JSON of the Web3 entry
}

// New returns an empty keystore of app.
func New(app AppInfo) *Keystore { return &Keystore{App: app} }

// Load reads and parses the keystore at path (see Parse). A missing file
// is ErrNotExist; unlike nwaku's loadAppKeystore, Load does not create it
// (AddMembership does).
func Load(path string, app AppInfo) (*Keystore, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotExist, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	return Parse(data, app)
}

// Parse parses a keystore file and checks it belongs to app, as nwaku's
// loadAppKeystore: the four fields application, appIdentifier, credentials
// and version must be there (ErrMalformed), application and appIdentifier
// must match (ErrAppMismatch), and so must version (ErrUnknownVersion).
// The credentials are parsed when Get decrypts them. Parse does not keep
// data.
func Parse(data []byte, app AppInfo) (*Keystore, error) {
	var f struct {
		Application   *string         `json:"application"`
		AppIdentifier *string         `json:"appIdentifier"`
		Credentials   json.RawMessage `json:"credentials"`
		Version       *string         `json:"version"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if f.Application == nil || f.AppIdentifier == nil || f.Version == nil || f.Credentials == nil {
		return nil, fmt.Errorf("%w: missing required fields in keystore", ErrMalformed)
	}
	if *f.Application != app.Application {
		return nil, fmt.Errorf("%w: expected application %q but got %q", ErrAppMismatch, app.Application, *f.Application)
	}
	if *f.AppIdentifier != app.AppIdentifier {
		return nil, fmt.Errorf("%w: expected appIdentifier %q but got %q", ErrAppMismatch, app.AppIdentifier, *f.AppIdentifier)
	}
	if *f.Version != app.Version {
		return nil, fmt.Errorf("%w: expected version %q but got %q", ErrUnknownVersion, app.Version, *f.Version)
	}
	entries, err := parseCredentials(f.Credentials)
	if err != nil {
		return nil, err
	}
	return &Keystore{App: app, entries: entries}, nil
}

// parseCredentials reads the credentials object keeping its key order; a
// repeated key keeps its first place and its last value.
func parseCredentials(raw json.RawMessage) ([]entry, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: credentials is not an object", ErrMalformed)
	}
	var out []entry
	at := map[string]int{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: credentials: %v", ErrMalformed, err)
		}
		key := tok.(string) // object keys are strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: credential %s: %v", ErrMalformed, key, err)
		}
		if len(v) == 0 || v[0] != '{' {
			return nil, fmt.Errorf("%w: credential %s is not an object", ErrMalformed, key)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("%w: credential %s: %v", ErrMalformed, key, err)
		}
		if i, ok := at[key]; ok {
			out[i].raw = buf.Bytes()
			continue
		}
		at[key] = len(out)
		out = append(out, entry{key: key, raw: buf.Bytes()})
	}
	return out, nil
}

// Len returns the number of credentials.
func (k *Keystore) Len() int { return len(k.entries) }

// Keys returns the credentials' keys in file order.
func (k *Keystore) Keys() []string {
	out := make([]string, len(k.entries))
	for i, e := range k.entries {
		out[i] = e.key
	}
	return out
}

// Key returns the key nwaku files a credential under
// (protocol_types.nim hash): the upper-case hex SHA-256 of chainID,
// address and the decimal treeIndex concatenated, the strings exactly as
// given (nwaku takes the chain id in decimal and the contract address as
// the operator wrote it).
func Key(chainID, address string, treeIndex uint64) string {
	sum := sha256.Sum256([]byte(chainID + address + strconv.FormatUint(treeIndex, 10)))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// Query selects a credential, as nwaku's getMembershipCredentials query.
type Query struct {
	// ChainID and Address are the membership contract's, as in Membership.
	ChainID, Address string
	// TreeIndex is the membership index (--rln-relay-membership-index);
	// nil means 0, as nwaku's default.
	TreeIndex *uint64
}

// lookup returns the entry q selects: the only one when there is one
// (nwaku's rule, whatever q says), otherwise the one filed under q's key.
// Beyond nwaku, a key is also tried with the chain id in decimal and 0x
// hex and the address in lower case and EIP-55 form, so that keystores
// written by other tools with other spellings are found.
func (k *Keystore) lookup(q Query) (entry, error) {
	switch len(k.entries) {
	case 0:
		return entry{}, fmt.Errorf("%w: no credentials found in keystore", ErrCredentialNotFound)
	case 1:
		return k.entries[0], nil
	}
	var index uint64
	if q.TreeIndex != nil {
		index = *q.TreeIndex
	}
	for _, chain := range spellChainID(q.ChainID) {
		for _, addr := range spellAddress(q.Address) {
			key := Key(chain, addr, index)
			for _, e := range k.entries {
				if e.key == key {
					return e, nil
				}
			}
		}
	}
	return entry{}, fmt.Errorf("%w: there are %d credentials in this keystore and none for chain %s, contract %s, index %d; check the chain id, contract address and membership index (--rln-relay-membership-index)",
		ErrCredentialNotFound, len(k.entries), q.ChainID, q.Address, index)
}

func spellChainID(s string) []string {
	out := []string{s}
	if v, ok := new(big.Int).SetString(s, 0); ok && v.Sign() >= 0 {
		out = append(out, v.Text(10), "0x"+v.Text(16), "0x"+strings.ToUpper(v.Text(16)))
	}
	return out
}

func spellAddress(s string) []string {
	out := []string{s}
	if common.IsHexAddress(s) {
		a := common.HexToAddress(s)
		out = append(out, strings.ToLower(a.Hex()), a.Hex())
	}
	return out
}

// Get decrypts and returns the credential q selects (see Query; nwaku's
// getMembershipCredentials). Errors wrap ErrCredentialNotFound,
// ErrWrongPassword, ErrMalformed or ErrUnsupported.
func (k *Keystore) Get(password string, q Query) (Membership, error) {
	e, err := k.lookup(q)
	if err != nil {
		return Membership{}, err
	}
	s, err := parseEntry(e.raw)
	if err != nil {
		return Membership{}, fmt.Errorf("credential %s: %w", e.key, err)
	}
	plain, err := s.open(password)
	if err != nil {
		return Membership{}, fmt.Errorf("credential %s: %w", e.key, err)
	}
	m, err := DecodeMembership(plain)
	if err != nil {
		return Membership{}, fmt.Errorf("credential %s: %w", e.key, err)
	}
	return m, nil
}

// EncryptOptions tunes Add's encryption.
type EncryptOptions struct {
	// Iterations is the PBKDF2 work factor; 0 means DefaultIterations,
	// nwaku's. Lower values are for tests only.
	Iterations int
}

// Add encrypts m under password and files it under m.Key(), as nwaku's
// addMembershipCredentials. A credential already filed under that key is
// kept and Add reports false (nwaku's no-op).
func (k *Keystore) Add(m Membership, password string, opts EncryptOptions) (bool, error) {
	key := m.Key()
	for _, e := range k.entries {
		if e.key == key {
			return false, nil
		}
	}
	plain, err := m.Encode()
	if err != nil {
		return false, err
	}
	raw, err := seal(plain, password, opts.Iterations)
	if err != nil {
		return false, err
	}
	k.entries = append(k.entries, entry{key: key, raw: raw})
	return true, nil
}

// Marshal returns the file's bytes in nwaku's layout: compact JSON with
// the fields application, appIdentifier, credentials (in order) and
// version, and a newline.
func (k *Keystore) Marshal() []byte {
	var b bytes.Buffer
	str := func(s string) { v, _ := marshal(s); b.Write(v) }
	b.WriteString(`{"application":`)
	str(k.App.Application)
	b.WriteString(`,"appIdentifier":`)
	str(k.App.AppIdentifier)
	b.WriteString(`,"credentials":{`)
	for i, e := range k.entries {
		if i > 0 {
			b.WriteByte(',')
		}
		str(e.key)
		b.WriteByte(':')
		b.Write(e.raw)
	}
	b.WriteString(`},"version":`)
	str(k.App.Version)
	b.WriteString("}\n")
	return b.Bytes()
}

// Save writes the keystore to path atomically (a temporary file in the
// same folder, synced, then renamed over path), readable and writable by
// its owner only (0600), as nwaku's save makes it.
func (k *Keystore) Save(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("keystore: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(k.Marshal())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("keystore: save %s: %w", path, err)
	}
	return nil
}

// AddMembership adds m to the keystore file at path, creating the file
// when it does not exist, and saves it: nwaku's addMembershipCredentials.
// It reports whether m was new.
func AddMembership(path, password string, m Membership, app AppInfo, opts EncryptOptions) (bool, error) {
	k, err := Load(path, app)
	if errors.Is(err, ErrNotExist) {
		k, err = New(app), nil
	}
	if err != nil {
		return false, err
	}
	added, err := k.Add(m, password, opts)
	if err != nil || !added {
		return added, err
	}
	return true, k.Save(path)
}

// GetMembership loads the keystore file at path and returns the credential
// q selects: nwaku's getMembershipCredentials.
func GetMembership(path, password string, q Query, app AppInfo) (Membership, error) {
	k, err := Load(path, app)
	if err != nil {
		return Membership{}, err
	}
	return k.Get(password, q)
}

// marshal is json.Marshal without HTML escaping (nwaku writes < > & as
// they are).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
