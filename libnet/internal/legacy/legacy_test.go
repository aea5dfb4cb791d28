package legacy

import (
	"bytes"
	"reflect"
	"testing"
)

var seeds = []string{
	`{"ADDRESS":"127.0.0.1","PORT":9001,"UUID":"550e8400-e29b-41d4-a716-446655440000","data":{"payload":{"value":"BAABqg==","dataType":"bb"},"route":"binary/t"},"msgDir":"ask","receivedTime":0,"replyReceivedTime":0,"replyTime":0,"sendTime":1700000000000,"timeout":5000.5}`,
	`{"PORT":9001,"UUID":"550e8400-e29b-41d4-a716-446655440000","data":{"value":"BAABqg==","dataType":"bb"},"msgDir":"resp","receivedTime":1,"replyReceivedTime":0,"replyTime":2,"sendTime":3}`,
	`{"PORT":1,"UUID":"u","data":{"payload":{"type":"Buffer","data":[4,0,1,170]},"route":"binary/t"},"msgDir":"tell"}`,
	`{"PORT":1,"UUID":"u","data":{"payload":{"dataType":"u8ab","value":"BAABqg=="},"route":"r"},"msgDir":"tell"}`,
	`{"PORT":1,"UUID":"u","data":{"payload":{"a":[1,{"b":"c\"d\u0041"}],"x":null,"y":true,"z":-1.5e3},"route":"json"},"msgDir":"tell"}`,
	` { "PORT" : 1 , "uuid" : "u" , "data" : "text" } `,
	`{"PORT":1,"UUID":"u\u0041","data":5,"msgDir":"tell","timeout":null}`,
	`{"PORT":"1"}`,
	`{"data":{"Value":"AA==","dataType":"bb"}}`,
	`{"data":{"value":"AA==","dataType":"bb","extra":[[],{}]}}`,
	`{"data":{"value":"!!","dataType":"bb"}}`,
	`{"PORT":1}x`,
	`{"data":{"value":"AA==","dataType":"bb"},"data":"x"}`,
	`{"data":{"payload":{"value":"AA==","dataType":"bb"},"payload":{"x":1}}}`,
	`{"data":{"payload":{"value":"AA==","dataType":"bb","value":"AQ=="}}}`,
	`[1,2]`,
	``,
}

// The one-pass reader gives what encoding/json gives, whenever it decides.
func FuzzParseMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSame(t, b)
	})
}

func checkSame(t *testing.T, b []byte) {
	t.Helper()
	var w wireAug
	var d dataShape
	fast := scanAug(b, &w, &d)
	got, _, gotErr := Parse(b)
	want, _, wantErr := parseSlow(b)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: Parse error %v, encoding/json %v (fast %v)", b, gotErr, wantErr, fast)
	}
	if !bytes.Equal(got.Payload, want.Payload) || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("%q: payload %x data %s, encoding/json %x %s", b, got.Payload, got.Data, want.Payload, want.Data)
	}
	got.Payload, got.Data, want.Payload, want.Data = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v, encoding/json %+v", b, got, want)
	}
}

func TestParseSeeds(t *testing.T) {
	fastCount := 0
	for _, s := range seeds {
		checkSame(t, []byte(s))
		var w wireAug
		var d dataShape
		if scanAug([]byte(s), &w, &d) {
			fastCount++
		}
	}
	if fastCount < 4 {
		t.Fatalf("the fast reader took %d seeds", fastCount)
	}
	// The common shapes take the fast path.
	for _, s := range seeds[:2] {
		var w wireAug
		var d dataShape
		if !scanAug([]byte(s), &w, &d) {
			t.Fatalf("not read in one pass: %s", s)
		}
	}
	a, ops, err := Parse([]byte(seeds[0]))
	if err != nil || a.Route != "binary/t" || string(a.Payload) != "\x04\x00\x01\xaa" || a.Timeout != 5000.5 || ops.JSON != 1 {
		t.Fatalf("%+v %+v %v", a, ops, err)
	}
}
