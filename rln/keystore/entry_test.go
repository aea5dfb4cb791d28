package keystore

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/scrypt"
)

// entryWith returns a Web3 entry of plain under dk with kdf and its
// params, as another tool would write it.
func entryWith(plain, dk []byte, kdf, params string) string {
	iv := []byte("0123456789abcdef")
	ct := ctr(dk[:16], iv, plain)
	return fmt.Sprintf(`{"crypto":{"cipher":"AES-128-CTR","cipherparams":{"iv":"%x"},"ciphertext":"%x","kdf":%q,"kdfparams":%s,"mac":"%x"}}`,
		iv, ct, kdf, params, mac(dk, ct))
}

// TestEntryKDFs: entries derived with scrypt and with another PBKDF2 PRF,
// which nwaku reads too, decrypt.
func TestEntryKDFs(t *testing.T) {
	plain := []byte("secret credential")
	salt := []byte("sixteen byte slt")
	sdk, err := scrypt.Key([]byte("pw"), salt, 16, 1, 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	pdk, err := pbkdf2.Key(sha512.New, "pw", salt, 3, 32)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]string{
		"scrypt":      entryWith(plain, sdk, "scrypt", fmt.Sprintf(`{"dklen":32,"n":16,"r":1,"p":2,"salt":"%x"}`, salt)),
		"hmac-sha512": entryWith(plain, pdk, "pbkdf2", fmt.Sprintf(`{"dklen":32,"c":3,"prf":"HMAC-SHA512","salt":"%x"}`, salt)),
	} {
		s, err := parseEntry([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := s.open("pw")
		if err != nil || string(got) != string(plain) {
			t.Fatalf("%s: open = %q, %v", name, got, err)
		}
		if _, err := s.open("wrong"); !errors.Is(err, ErrWrongPassword) {
			t.Fatalf("%s: wrong password: %v", name, err)
		}
	}
}

// TestSealOpens: seal's entry has nwaku's shape and opens with the
// password only.
func TestSealOpens(t *testing.T) {
	raw, err := seal([]byte("plain"), "pw", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`{"crypto":{"cipher":"aes-128-ctr","cipherparams":{"iv":"`, `"},"ciphertext":"`, `","kdf":"pbkdf2","kdfparams":{"dklen":32,"c":2,"prf":"hmac-sha256","salt":"`, `"},"mac":"`, `"},"id":"","version":""}`} {
		if !strings.Contains(string(raw), f) {
			t.Fatalf("entry %s lacks %s", raw, f)
		}
	}
	s, err := parseEntry(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.iv) != 16 {
		t.Fatalf("iv of %d bytes", len(s.iv))
	}
	if got, err := s.open("pw"); err != nil || string(got) != "plain" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := s.open("pw "); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	other, _ := seal([]byte("plain"), "pw", 2)
	if string(other) == string(raw) {
		t.Fatal("two seals share salt and iv")
	}
}

// TestEntryErrors: entries that nwaku's keyfile.nim refuses are refused
// with ErrMalformed or ErrUnsupported, before any key derivation.
func TestEntryErrors(t *testing.T) {
	good := map[string]string{
		"cipher": `"aes-128-ctr"`, "iv": `"00112233445566778899aabbccddeeff"`, "ciphertext": `"abcd"`, "kdf": `"pbkdf2"`,
		"params": `{"dklen":32,"c":5,"prf":"hmac-sha256","salt":"0011"}`, "mac": `"00ff"`,
	}
	build := func(change map[string]string) string {
		f := map[string]string{}
		for k, v := range good {
			f[k] = v
		}
		for k, v := range change {
			f[k] = v
		}
		return fmt.Sprintf(`{"crypto":{"cipher":%s,"cipherparams":{"iv":%s},"ciphertext":%s,"kdf":%s,"kdfparams":%s,"mac":%s}}`,
			f["cipher"], f["iv"], f["ciphertext"], f["kdf"], f["params"], f["mac"])
	}
	if _, err := parseEntry([]byte(build(nil))); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for _, c := range []struct {
		name string
		raw  string
		want error
	}{
		{"not JSON", `{"crypto":`, ErrMalformed},
		{"no crypto", `{"id":"x"}`, ErrMalformed},
		{"no cipherparams", `{"crypto":{"kdf":"pbkdf2","cipher":"aes-128-ctr"}}`, ErrMalformed},
		{"kdf argon2", build(map[string]string{"kdf": `"argon2"`}), ErrUnsupported},
		{"cipher aes-256-gcm", build(map[string]string{"cipher": `"aes-256-gcm"`}), ErrUnsupported},
		{"empty ciphertext", build(map[string]string{"ciphertext": `""`}), ErrMalformed},
		{"odd hex mac", build(map[string]string{"mac": `"abc"`}), ErrMalformed},
		{"iv 15 bytes", build(map[string]string{"iv": `"00112233445566778899aabbccddee"`}), ErrMalformed},
		{"no kdfparams", build(map[string]string{"params": `null`}), ErrMalformed},
		{"no salt", build(map[string]string{"params": `{"dklen":32,"c":5,"prf":"hmac-sha256"}`}), ErrMalformed},
		{"prf md5", build(map[string]string{"params": `{"dklen":32,"c":5,"prf":"hmac-md5","salt":"00"}`}), ErrUnsupported},
		{"prf keccak384", build(map[string]string{"params": `{"dklen":32,"c":5,"prf":"hmac-keccak384","salt":"00"}`}), ErrUnsupported},
		{"dklen 0", build(map[string]string{"params": `{"dklen":0,"c":5,"prf":"hmac-sha256","salt":"00"}`}), ErrMalformed},
		{"dklen 129", build(map[string]string{"params": `{"dklen":129,"c":5,"prf":"hmac-sha256","salt":"00"}`}), ErrMalformed},
		{"c too large", build(map[string]string{"params": `{"dklen":32,"c":100000001,"prf":"hmac-sha256","salt":"00"}`}), ErrUnsupported},
		{"c negative", build(map[string]string{"params": `{"dklen":32,"c":-1,"prf":"hmac-sha256","salt":"00"}`}), ErrUnsupported},
		{"c a string", build(map[string]string{"params": `{"dklen":32,"c":"5","prf":"hmac-sha256","salt":"00"}`}), ErrMalformed},
		{"scrypt n not a power of 2", build(map[string]string{"kdf": `"scrypt"`, "params": `{"dklen":32,"n":1000,"r":1,"p":1,"salt":"00"}`}), ErrUnsupported},
		{"scrypt memory", build(map[string]string{"kdf": `"scrypt"`, "params": `{"dklen":32,"n":1048576,"r":8,"p":1,"salt":"00"}`}), ErrUnsupported},
		{"scrypt r*p", build(map[string]string{"kdf": `"scrypt"`, "params": `{"dklen":32,"n":2,"r":1048576,"p":1048576,"salt":"00"}`}), ErrUnsupported},
	} {
		if _, err := parseEntry([]byte(c.raw)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
