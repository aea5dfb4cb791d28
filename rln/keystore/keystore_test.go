package keystore_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/couriernet/courier/rln/keystore"
)

// fast is the work factor of the test files written here (the vector
// test covers nwaku's 1,000,000).
var fast = keystore.EncryptOptions{Iterations: 2}

const (
	twnAddress = "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6"
	password   = "p4ss"
)

func membershipAt(index uint64, seed byte) keystore.Membership {
	m := keystore.Membership{
		Contract:         keystore.MembershipContract{ChainID: "59141", Address: twnAddress},
		TreeIndex:        index,
		UserMessageLimit: 100,
	}
	for i := range 32 {
		m.Identity.IDTrapdoor[i] = seed + byte(i)
		m.Identity.IDNullifier[i] = seed + byte(2*i)
		m.Identity.IDSecretHash[i] = seed + byte(3*i)
		m.Identity.IDCommitment[i] = seed ^ byte(i)
	}
	return m
}

func ptr(v uint64) *uint64 { return &v }

// TestKey: nwaku's key is the upper-case hex SHA-256 of the three strings
// concatenated (protocol_types.nim hash), here for test_waku_keystore.nim's
// credential (chain "5", its contract, index 1); the value is Python
// hashlib's.
func TestKey(t *testing.T) {
	const want = "74B6340DAEB78A97FD648A6B697AE964501CE8D57F621FA4D2B5CFA2788070C2"
	if got := keystore.Key("5", "0x0123456789012345678901234567890123456789", 1); got != want {
		t.Fatalf("Key = %s, want %s", got, want)
	}
	m := keystore.Membership{Contract: keystore.MembershipContract{ChainID: "5", Address: "0x0123456789012345678901234567890123456789"}, TreeIndex: 1}
	if m.Key() != want {
		t.Fatalf("Membership.Key = %s", m.Key())
	}
}

// TestSaveLoadGet: memberships added and saved come back from the file
// under their keys; the file is 0600 and in nwaku's layout; adding one
// already there changes nothing.
func TestSaveLoadGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rlnKeystore.json")
	k := keystore.New(keystore.RLN())
	var ms []keystore.Membership
	for i := range 3 {
		m := membershipAt(uint64(i*10), byte(i))
		ms = append(ms, m)
		if added, err := k.Add(m, password, fast); err != nil || !added {
			t.Fatalf("Add %d = %v, %v", i, added, err)
		}
	}
	if added, err := k.Add(ms[1], "other", fast); err != nil || added {
		t.Fatalf("Add of a present key = %v, %v; want false (nwaku keeps the first)", added, err)
	}
	if err := k.Save(path); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", info.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.HasPrefix(data, []byte(`{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{"`)) ||
		!bytes.HasSuffix(data, []byte(`}},"version":"0.2"}`+"\n")) {
		t.Fatalf("file layout:\n%s", data)
	}

	loaded, err := keystore.Load(path, keystore.RLN())
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != 3 || !bytes.Equal(loaded.Marshal(), data) {
		t.Fatalf("loaded %d credentials; Marshal equal: %v", loaded.Len(), bytes.Equal(loaded.Marshal(), data))
	}
	for _, m := range ms {
		got, err := keystore.GetMembership(path, password, keystore.Query{ChainID: "59141", Address: twnAddress, TreeIndex: ptr(m.TreeIndex)}, keystore.RLN())
		if err != nil || got != m {
			t.Fatalf("Get index %d = %+v, %v", m.TreeIndex, got, err)
		}
	}
	// TreeIndex nil means index 0, as nwaku's default query.
	if got, err := loaded.Get(password, keystore.Query{ChainID: "59141", Address: twnAddress}); err != nil || got != ms[0] {
		t.Fatalf("Get without index = %+v, %v", got, err)
	}
}

// TestLookup: nwaku's rules (the only credential whatever the query; with
// several, the query's key) and the spellings tried beyond nwaku.
func TestLookup(t *testing.T) {
	one := keystore.New(keystore.RLN())
	m := membershipAt(5, 1)
	one.Add(m, password, fast)
	if got, err := one.Get(password, keystore.Query{ChainID: "1", Address: "0x00", TreeIndex: ptr(99)}); err != nil || got != m {
		t.Fatalf("single credential: %+v, %v", got, err)
	}

	several := keystore.New(keystore.RLN())
	a, b := membershipAt(5, 1), membershipAt(6, 2)
	b.Contract = keystore.MembershipContract{ChainID: "0xe705", Address: strings.ToLower(twnAddress)} // another tool's spelling
	several.Add(a, password, fast)
	several.Add(b, password, fast)
	for _, c := range []struct {
		q    keystore.Query
		want keystore.Membership
	}{
		{keystore.Query{ChainID: "59141", Address: twnAddress, TreeIndex: ptr(5)}, a},
		{keystore.Query{ChainID: "59141", Address: strings.ToLower(twnAddress), TreeIndex: ptr(5)}, a},
		{keystore.Query{ChainID: "0xe705", Address: twnAddress, TreeIndex: ptr(5)}, a},
		{keystore.Query{ChainID: "59141", Address: twnAddress, TreeIndex: ptr(6)}, b},
	} {
		if got, err := several.Get(password, c.q); err != nil || got != c.want {
			t.Errorf("Get(%+v) = index %d, %v; want index %d", c.q, got.TreeIndex, err, c.want.TreeIndex)
		}
	}
	for _, q := range []keystore.Query{
		{ChainID: "59141", Address: twnAddress},                    // index 0
		{ChainID: "59141", Address: twnAddress, TreeIndex: ptr(7)}, // no such index
		{ChainID: "1", Address: twnAddress, TreeIndex: ptr(5)},     // another chain
		{ChainID: "59141", Address: "0x0000000000000000000000000000000000000001", TreeIndex: ptr(5)},
	} {
		if _, err := several.Get(password, q); !errors.Is(err, keystore.ErrCredentialNotFound) ||
			!strings.Contains(err.Error(), "--rln-relay-membership-index") {
			t.Errorf("Get(%+v) = %v, want ErrCredentialNotFound with a hint", q, err)
		}
	}
	if _, err := keystore.New(keystore.RLN()).Get(password, keystore.Query{}); !errors.Is(err, keystore.ErrCredentialNotFound) {
		t.Fatalf("empty keystore: %v", err)
	}
}

// TestErrors: the error cases of nwaku's keystore, each with its
// sentinel.
func TestErrors(t *testing.T) {
	dir := t.TempDir()
	k := keystore.New(keystore.RLN())
	k.Add(membershipAt(1, 1), password, fast)
	path := filepath.Join(dir, "ks.json")
	if err := k.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := keystore.GetMembership(path, "wrong", keystore.Query{}, keystore.RLN()); !errors.Is(err, keystore.ErrWrongPassword) {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := keystore.Load(filepath.Join(dir, "missing.json"), keystore.RLN()); !errors.Is(err, keystore.ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	other := keystore.RLN()
	other.Version = "0.3"
	if _, err := keystore.Load(path, other); !errors.Is(err, keystore.ErrUnknownVersion) {
		t.Errorf("version 0.3 asked: %v", err)
	}
	other = keystore.RLN()
	other.Application = "_bad_test_"
	if _, err := keystore.Load(path, other); !errors.Is(err, keystore.ErrAppMismatch) ||
		!strings.Contains(err.Error(), `expected application "_bad_test_" but got "waku-rln-relay"`) {
		t.Errorf("application mismatch: %v", err)
	}
	other = keystore.RLN()
	other.AppIdentifier = "1234"
	if _, err := keystore.Load(path, other); !errors.Is(err, keystore.ErrAppMismatch) {
		t.Errorf("appIdentifier mismatch: %v", err)
	}
	for name, data := range map[string]string{
		"not JSON":          `{"application":`,
		"no version":        `{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{}}`,
		"no credentials":    `{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","version":"0.2"}`,
		"credentials array": `{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":[],"version":"0.2"}`,
		"entry a string":    `{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{"K":"x"},"version":"0.2"}`,
		"version a number":  `{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{},"version":0.2}`,
	} {
		if _, err := keystore.Parse([]byte(data), keystore.RLN()); !errors.Is(err, keystore.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	// Pretty-printed files parse too (nwaku strips the whitespace).
	pretty := "{\n  \"application\": \"waku-rln-relay\",\n  \"appIdentifier\": \"01234567890abcdef\",\n  \"credentials\": {},\n  \"version\": \"0.2\"\n}\n"
	if k, err := keystore.Parse([]byte(pretty), keystore.RLN()); err != nil || k.Len() != 0 {
		t.Errorf("pretty file: %v", err)
	}
}

// TestDecodeMembership: the plaintext needs every field nwaku's decode
// needs, with 32 bytes per identity value.
func TestDecodeMembership(t *testing.T) {
	m := membershipAt(3, 9)
	plain, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := keystore.DecodeMembership(plain); err != nil || got != m {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if !bytes.HasPrefix(plain, []byte(`{"membershipContract":{"chainId":"59141","address":"`+twnAddress+`"},"treeIndex":3,"identityCredential":{"idTrapdoor":[9,10,`)) ||
		!bytes.HasSuffix(plain, []byte(`]},"userMessageLimit":100}`)) {
		t.Fatalf("plaintext layout: %s", plain)
	}
	s := string(plain)
	for name, bad := range map[string]string{
		"no userMessageLimit": strings.Replace(s, `,"userMessageLimit":100`, ``, 1),
		"no treeIndex":        strings.Replace(s, `"treeIndex":3,`, ``, 1),
		"no chainId":          strings.Replace(s, `"chainId":"59141",`, ``, 1),
		"31 bytes":            strings.Replace(s, `"idTrapdoor":[9,`, `"idTrapdoor":[`, 1),
		"not a byte":          strings.Replace(s, `"idTrapdoor":[9,`, `"idTrapdoor":[256,`, 1),
		"negative":            strings.Replace(s, `"idTrapdoor":[9,`, `"idTrapdoor":[-1,`, 1),
		"base64 string":       strings.Replace(s, `"identityCredential":{`, `"identityCredential":{"idNullifier":"AAAA",`, 1),
	} {
		if _, err := keystore.DecodeMembership([]byte(bad)); !errors.Is(err, keystore.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// TestAddMembershipCreatesFile: AddMembership creates the file, then adds
// to it, as nwaku's addMembershipCredentials.
func TestAddMembershipCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.json")
	for i := range 2 {
		if added, err := keystore.AddMembership(path, password, membershipAt(uint64(i), byte(i)), keystore.RLN(), fast); err != nil || !added {
			t.Fatalf("AddMembership %d = %v, %v", i, added, err)
		}
	}
	if added, err := keystore.AddMembership(path, password, membershipAt(1, 1), keystore.RLN(), fast); err != nil || added {
		t.Fatalf("AddMembership again = %v, %v", added, err)
	}
	k, err := keystore.Load(path, keystore.RLN())
	if err != nil || k.Len() != 2 {
		t.Fatalf("Load: %v, %d credentials", err, k.Len())
	}
	other := keystore.RLN()
	other.Application = "other"
	if _, err := keystore.AddMembership(path, password, membershipAt(5, 5), other, fast); !errors.Is(err, keystore.ErrAppMismatch) {
		t.Fatalf("adding to another application's file: %v", err)
	}
}
