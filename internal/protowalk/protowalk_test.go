package protowalk

import (
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// known: field 1 bytes, field 2 varint.
func known(num protowire.Number) (protowire.Type, bool) {
	switch num {
	case 1:
		return protowire.BytesType, true
	case 2:
		return protowire.VarintType, true
	}
	return 0, false
}

func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		hex  string
		want string
		err  error
	}{
		{"0a0161" + "1007", "1:a 2:7 ", nil},
		{"1807" + "0a0162", "1:b ", nil},       // unknown varint field 3 skipped
		{"0a0161" + "0a0162", "1:a 1:b ", nil}, // repeated: every value, in order
		{"0801", "", ErrMalformed},             // field 1 as a varint
		{"0a05", "", ErrMalformed},             // truncated bytes
		{"ff", "", ErrMalformed},               // truncated tag
		{"2205" + "6162", "", ErrMalformed},    // unknown field truncated
		{"", "", nil},
	} {
		b, _ := hex.DecodeString(tc.hex)
		var got string
		err := Walk(b, known, func(num protowire.Number, v []byte, x uint64) {
			if num == 1 {
				got += fmt.Sprintf("1:%s ", v)
			} else {
				got += fmt.Sprintf("2:%d ", x)
			}
		})
		if !errors.Is(err, tc.err) || (err == nil && got != tc.want) {
			t.Errorf("%s: got %q, %v; want %q, %v", tc.hex, got, err, tc.want, tc.err)
		}
	}
}
