package rest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"
)

// field is one member of a flat JSON object: its key and the exact JSON text
// of its value.
type field struct {
	key string
	raw []byte
}

// scanFlat splits a JSON object whose values are strings without escapes,
// numbers, booleans or null into its members, in order. It touches each
// byte of a long string once (no general JSON state machine), which is
// what keeps a 150 kB base64 payload cheap. It reports false for anything
// else (escapes, nested values, malformed text): the caller then parses
// with encoding/json, which gives the precise error.
func scanFlat(data []byte) ([]field, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	i = skipSpace(data, i+1)
	fields := make([]field, 0, 8)
	if i < len(data) && data[i] == '}' {
		return fields, skipSpace(data, i+1) == len(data)
	}
	for {
		key, end, ok := plainString(data, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		start := i
		if i < len(data) && data[i] == '"' {
			if _, i, ok = plainString(data, i); !ok {
				return nil, false
			}
		} else {
			for i < len(data) && bytes.IndexByte([]byte(",} \t\r\n"), data[i]) < 0 {
				i++
			}
			if i == start || !json.Valid(data[start:i]) || data[start] == '{' || data[start] == '[' {
				return nil, false
			}
		}
		fields = append(fields, field{key: string(key), raw: data[start:i]})
		i = skipSpace(data, i)
		if i >= len(data) {
			return nil, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			if skipSpace(data, i+1) != len(data) {
				return nil, false
			}
			return fields, true
		default:
			return nil, false
		}
	}
}

// plainString reads the JSON string starting at data[i] == '"' when it has
// no escapes and no control characters and is valid UTF-8. It returns the
// contents (aliasing data) and the index after the closing quote.
func plainString(data []byte, i int) ([]byte, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, 0, false
	}
	n := bytes.IndexByte(data[i+1:], '"')
	if n < 0 {
		return nil, 0, false
	}
	s := data[i+1 : i+1+n]
	if bytes.IndexByte(s, '\\') >= 0 || hasControl(s) || !utf8.Valid(s) {
		return nil, 0, false
	}
	return s, i + 2 + n, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// hasControl reports whether s holds a byte below 0x20, 32 bytes at a
// time: a byte b < 0x20 is the only one for which (b - 0x20) borrows into
// its high bit while b's own high bit is clear. The test is exact for the
// word as a whole, which is all this needs.
func hasControl(s []byte) bool {
	const lo, hi = 0x2020202020202020, 0x8080808080808080
	for len(s) >= 32 {
		a := binary.LittleEndian.Uint64(s)
		b := binary.LittleEndian.Uint64(s[8:])
		c := binary.LittleEndian.Uint64(s[16:])
		d := binary.LittleEndian.Uint64(s[24:32])
		if ((a-lo)&^a|(b-lo)&^b|(c-lo)&^c|(d-lo)&^d)&hi != 0 {
			return true
		}
		s = s[32:]
	}
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}
