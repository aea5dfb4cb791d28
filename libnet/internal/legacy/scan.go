package legacy

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// The fast reader below handles augData as lib-net and lib-types write it
// in one pass, finding the long base64 string with a byte loop instead of
// encoding/json's state machine (three validating passes over it). It
// accepts only what it has checked to be valid JSON and gives up on
// anything else it would have to interpret (an escaped key or known string,
// a null, a value of another type, a key that matches a known one only
// without regard to case, a Buffer as an array of numbers); Parse then
// reads the input with encoding/json, so both give the same result.

// scanner walks b; once bad is set every call returns at once.
type scanner struct {
	b   []byte
	i   int
	bad bool
}

const maxDepth = 512 // nesting the skipper follows before it gives up

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.bad || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) {
	if s.peek() != c {
		s.bad = true
		return
	}
	s.i++
}

// Eight bytes at a time: a word holds a byte that ends or escapes a
// string, or is not allowed in one, when any of these is non-zero.
const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

func special(x uint64) bool {
	less := (x - ones*0x20) &^ x & high // a byte below 0x20
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return less|((q-ones)&^q&high)|((bs-ones)&^bs&high) != 0
}

// plain advances over string bytes that need no attention.
func (s *scanner) plain() {
	for s.i+8 <= len(s.b) && !special(binary.LittleEndian.Uint64(s.b[s.i:])) {
		s.i += 8
	}
	for s.i < len(s.b) {
		if c := s.b[s.i]; c == '"' || c == '\\' || c < 0x20 {
			return
		}
		s.i++
	}
}

// plainString reads a string with no escape and returns its bytes, which
// alias b.
func (s *scanner) plainString() []byte {
	s.expect('"')
	if s.bad {
		return nil
	}
	start := s.i
	s.plain()
	if s.i < len(s.b) && s.b[s.i] == '"' {
		s.i++
		return s.b[start : s.i-1 : s.i-1]
	}
	s.bad = true
	return nil
}

// text reads a plain string that is valid UTF-8 (encoding/json would
// replace invalid bytes) as a Go string.
func (s *scanner) text() string {
	v := s.plainString()
	if s.bad || !utf8.Valid(v) {
		s.bad = true
		return ""
	}
	return string(v)
}

// number reads a JSON number as float64.
func (s *scanner) number() float64 {
	s.ws()
	start := s.i
	s.skipNumber()
	if s.bad {
		return 0
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil {
		s.bad = true
	}
	return f
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// skipNumber checks -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) skipNumber() {
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.digits() == 0:
		s.bad = true
		return
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			s.bad = true
			return
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			s.bad = true
		}
	}
}

// skipString checks a string, escapes included.
func (s *scanner) skipString() {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		s.plain()
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return
		case c < 0x20:
			s.bad = true
			return
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.bad = true
				return
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					s.bad = true
					return
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						s.bad = true
						return
					}
				}
				s.i += 6
			default:
				s.bad = true
				return
			}
		default:
			s.i++
		}
	}
	s.bad = true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skip checks one value of any kind and returns its bytes, aliasing b.
func (s *scanner) skip(depth int) []byte {
	c := s.peek()
	start := s.i
	switch {
	case s.bad:
		return nil
	case depth > maxDepth:
		s.bad = true
	case c == '"':
		s.skipString()
	case c == '{':
		s.object(func([]byte) { s.skip(depth + 1) })
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			break
		}
		for !s.bad {
			s.skip(depth + 1)
			if s.peek() == ']' {
				s.i++
				break
			}
			s.expect(',')
		}
	case c == '-' || c >= '0' && c <= '9':
		s.skipNumber()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return s.b[start:s.i:s.i]
			}
		}
		s.bad = true
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i:s.i]
}

// object reads an object whose keys have no escape, calling member with
// each key; member must read the value.
func (s *scanner) object(member func(key []byte)) {
	s.expect('{')
	if s.peek() == '}' {
		s.i++
		return
	}
	for !s.bad {
		key := s.plainString()
		s.expect(':')
		if s.bad {
			return
		}
		member(key)
		if s.peek() == '}' {
			s.i++
			return
		}
		s.expect(',')
	}
}

// other skips the value of a key the caller does not read, giving up if
// encoding/json would match it to one of known without regard to case.
func (s *scanner) other(key []byte, known ...string) {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			s.bad = true
			return
		}
	}
	for _, k := range known {
		if asciiEqualFold(key, k) {
			s.bad = true
			return
		}
	}
	s.skip(1)
}

func asciiEqualFold(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return !s.bad && s.i == len(s.b)
}

var augKeys = []string{"UUID", "PORT", "ADDRESS", "sendTime", "receivedTime", "replyTime",
	"replyReceivedTime", "timeout", "msgDir", "data"}

// scanAug reads augData into w, with w.Data aliasing b, and an object data
// into d; ok is false where encoding/json must decide.
func scanAug(b []byte, w *wireAug, d *dataShape) (ok bool) {
	s := scanner{b: b}
	var timeout float64
	var seen uint8
	s.object(func(key []byte) {
		switch string(key) {
		case "UUID":
			w.UUID = s.text()
		case "PORT":
			w.Port = s.number()
		case "ADDRESS":
			w.Address = s.text()
		case "sendTime":
			w.SendTime = s.number()
		case "receivedTime":
			w.ReceivedTime = s.number()
		case "replyTime":
			w.ReplyTime = s.number()
		case "replyReceivedTime":
			w.ReplyReceivedTime = s.number()
		case "timeout":
			timeout = s.number()
			w.Timeout = &timeout
		case "msgDir":
			w.MsgDir = s.text()
		case "data":
			if s.seen(&seen, 0) {
				return
			}
			switch s.peek() {
			case 'n': // null leaves data unset in encoding/json
				s.bad = true
			case '{': // read its shape on the way
				start := s.i
				s.shape(d)
				w.Data = s.b[start:s.i:s.i]
			default:
				w.Data = s.skip(1)
			}
		default:
			s.other(key, augKeys...)
		}
	})
	return s.end()
}

var shapeKeys = []string{"payload", "route", "value", "dataType", "type", "data"}

// shape reads an object data into d, as the route envelope or a binary
// value itself. A Buffer as an array of numbers is left to encoding/json.
// A repeated data key starts d afresh, as encoding/json's last value wins.
func (s *scanner) shape(d *dataShape) {
	var seen uint8
	s.object(func(key []byte) {
		switch string(key) {
		case "payload":
			if s.seen(&seen, 0) || s.peek() != '{' {
				s.bad = true
				return
			}
			d.Payload = new(binValue)
			s.scanBin(d.Payload)
		case "route":
			if s.seen(&seen, 1) {
				return
			}
			r := s.text()
			d.Route = &r
		default:
			if !s.binMember(key, &d.binValue, &seen) {
				s.other(key, shapeKeys...)
			}
		}
	})
}

func (s *scanner) scanBin(v *binValue) {
	var seen uint8
	s.object(func(key []byte) {
		if !s.binMember(key, v, &seen) {
			s.other(key, "value", "dataType", "type", "data")
		}
	})
}

// seen marks key number k in *set, giving up if it was there: where a key
// repeats, encoding/json merges objects into what the first one set.
func (s *scanner) seen(set *uint8, k uint) bool {
	if *set&(1<<k) != 0 {
		s.bad = true
		return true
	}
	*set |= 1 << k
	return false
}

// binMember reads the value of a binValue key into v and reports whether
// key was one; set holds the keys seen in this object.
func (s *scanner) binMember(key []byte, v *binValue, set *uint8) bool {
	for i, k := range [...]string{"value", "dataType", "type", "data"} {
		if string(key) == k && s.seen(set, uint(4+i)) {
			return true
		}
	}
	switch string(key) {
	case "value":
		v.b64 = s.plainString() // base64 has no escapes
		v.Value = nil
	case "dataType":
		v.DataType = s.text()
	case "type":
		v.Type = s.text()
	case "data":
		s.bad = true // Buffer.toJSON's array: left to encoding/json
	default:
		return false
	}
	return true
}
