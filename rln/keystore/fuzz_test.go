package keystore

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
)

// FuzzParse: Parse never panics, fails only with its sentinels, and what
// it parses Marshal writes back in a form that parses to the same
// keystore.
func FuzzParse(f *testing.F) {
	if vector, err := os.ReadFile("testdata/nwaku-keystore.json"); err == nil {
		f.Add(vector)
	}
	f.Add([]byte(`{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{},"version":"0.2"}`))
	f.Add([]byte(`{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{"A":{},"A":{"x":1}},"version":"0.2"}`))
	f.Add([]byte(`{"application":"waku-rln-relay","appIdentifier":"01234567890abcdef","credentials":{"K":"x"},"version":"0.2"}`))
	f.Add([]byte(`{"application":"x"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := Parse(data, RLN())
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAppMismatch) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("Parse error without a sentinel: %v", err)
			}
			return
		}
		out := k.Marshal()
		again, err := Parse(out, RLN())
		if err != nil {
			t.Fatalf("Marshal output does not parse: %v\n%s", err, out)
		}
		if !slices.Equal(again.Keys(), k.Keys()) || !bytes.Equal(again.Marshal(), out) {
			t.Fatalf("round trip changed the keystore:\n%s\n%s", out, again.Marshal())
		}
	})
}

// FuzzParseEntry: a credential entry never makes parseEntry panic, and it
// fails only with ErrMalformed or ErrUnsupported. (The key derivation is
// not run: its cost is the file's to choose, up to MaxIterations.)
func FuzzParseEntry(f *testing.F) {
	if raw, err := seal([]byte("x"), "pw", 1); err == nil {
		f.Add(raw)
	}
	f.Add([]byte(`{"crypto":{"cipher":"aes-128-ctr","cipherparams":{"iv":"00112233445566778899aabbccddeeff"},"ciphertext":"ab","kdf":"scrypt","kdfparams":{"dklen":32,"n":16,"r":1,"p":1,"salt":"00"},"mac":"00"}}`))
	f.Add([]byte(`{"crypto":{"kdf":"pbkdf2","cipherparams":{}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := parseEntry(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("parseEntry error without a sentinel: %v", err)
			}
			return
		}
		if len(s.iv) != 16 || len(s.ciphertext) == 0 || len(s.mac) == 0 || s.derive == nil {
			t.Fatalf("accepted an incomplete entry: %+v", s)
		}
	})
}

// FuzzDecodeMembership: a decrypted credential never makes
// DecodeMembership panic, and what it decodes Encode writes back to the
// same membership.
func FuzzDecodeMembership(f *testing.F) {
	m := Membership{Contract: MembershipContract{ChainID: "59141", Address: "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6"}, TreeIndex: 4, UserMessageLimit: 100, Identity: vectorIdentity}
	if plain, err := m.Encode(); err == nil {
		f.Add(plain)
	}
	f.Add([]byte(`{"membershipContract":{"chainId":"1","address":"a"},"treeIndex":0,"identityCredential":{},"userMessageLimit":1}`))
	f.Fuzz(func(t *testing.T, plain []byte) {
		m, err := DecodeMembership(plain)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeMembership error without ErrMalformed: %v", err)
			}
			return
		}
		enc, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeMembership(enc)
		if err != nil || again != m {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, m)
		}
	})
}
