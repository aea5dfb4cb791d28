package protowalk

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestWalkBytesCapped: a length-delimited field is handed out with len ==
// cap, so an append to it cannot overwrite the following fields of data.
func TestWalkBytesCapped(t *testing.T) {
	data := protowire.AppendTag(nil, 1, protowire.BytesType)
	data = protowire.AppendBytes(data, []byte("ab"))
	data = protowire.AppendTag(data, 2, protowire.VarintType)
	data = protowire.AppendVarint(data, 300)
	known := func(num protowire.Number) (protowire.Type, bool) {
		switch num {
		case 1:
			return protowire.BytesType, true
		case 2:
			return protowire.VarintType, true
		}
		return 0, false
	}
	var got []byte
	var x uint64
	err := Walk(data, known, func(num protowire.Number, v []byte, u uint64) {
		if num == 1 {
			got = v
		} else {
			x = u
		}
	})
	if err != nil || string(got) != "ab" || x != 300 {
		t.Fatalf("Walk = %q, %d, %v; want \"ab\", 300, nil", got, x, err)
	}
	if len(got) != cap(got) {
		t.Fatalf("field 1: len %d, cap %d", len(got), cap(got))
	}
}
