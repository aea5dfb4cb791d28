package rest

import (
	"errors"
	"testing"
)

// FuzzScanFlat checks that the flat fast path and the general parser agree
// on every input the fast path accepts: same message or same sentinel.
func FuzzScanFlat(f *testing.F) {
	f.Add([]byte(`{"payload":"AQID","contentTopic":"/a/1/b/c","timestamp":17,"version":1,"meta":"AA==","ephemeral":true}`))
	f.Add([]byte(` { "payload" : "AQ==" , "contentTopic":"x", "extra": null, "n": -1.5e3 } `))
	f.Add([]byte(`{"payload":"AQ==","payload":"AQ==","contentTopic":"x"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fields, ok := scanFlat(data)
		if !ok {
			return
		}
		fast, ferr := messageFromFields(fields, nil)
		slow, serr := parseGeneral(data, nil)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("fast err %v, general err %v", ferr, serr)
		}
		if ferr != nil {
			if errors.Is(ferr, ErrBase64) != errors.Is(serr, ErrBase64) {
				t.Fatalf("fast err %v, general err %v", ferr, serr)
			}
			return
		}
		if !fast.Equal(slow) {
			t.Fatalf("fast %+v, general %+v", fast, slow)
		}
	})
}

func TestScanFlat(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		keys int
	}{
		{`{"payload":"AQ==","contentTopic":"x"}`, true, 2},
		{` {} `, true, 0},
		{`{"a":1,}`, false, 0},
		{`{"a":"\u0041"}`, false, 0},
		{`{"a":{"b":1}}`, false, 0},
		{`{"a":[1]}`, false, 0},
		{`{"a":tru}`, false, 0},
		{`{"a":"x"} x`, false, 0},
		{`{"a":"x"`, false, 0},
	}
	for _, tc := range tests {
		fields, ok := scanFlat([]byte(tc.in))
		if ok != tc.ok || len(fields) != tc.keys {
			t.Errorf("scanFlat(%s) = %d fields, %v; want %d, %v", tc.in, len(fields), ok, tc.keys, tc.ok)
		}
	}
}

func TestHasControl(t *testing.T) {
	for n := 0; n < 70; n++ {
		for pos := -1; pos < n; pos++ {
			for _, bad := range []byte{0x00, 0x1f} {
				s := make([]byte, n)
				for i := range s {
					s[i] = byte(0x20 + i*7%0xe0)
				}
				if pos >= 0 {
					s[pos] = bad
				}
				if got := hasControl(s); got != (pos >= 0) {
					t.Fatalf("hasControl(%x) = %v", s, got)
				}
			}
		}
	}
}

func BenchmarkHasControl(b *testing.B) {
	s := make([]byte, 87_000)
	for i := range s {
		s[i] = 'A' + byte(i%26)
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if hasControl(s) {
			b.Fatal("control byte")
		}
	}
}
